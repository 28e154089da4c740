"""`manage.py mcp` (or `memory-curator mcp`): the memory as an MCP server on stdin/stdout.

MCP clients (Claude Desktop, Cursor, Claude Code) start this command themselves; the token
comes from MEMSITE_API_TOKEN or --token. Without a valid token it exits with one sentence on
stderr: stdout carries only the protocol, so nothing else is ever printed there.

It is often the only process of the product that runs: no `make run`, no web server. So it
starts the task consumer too (memsite.core.consumer), which indexes vectors, extracts memories
from recorded turns, writes episodes and refreshes the cards; the consumer waits while another
process (`serve`, another MCP server) runs one on this data directory, and takes over when
that one stops. Its log goes to <data dir>/consumer.log, never to stdout.
"""

import os
import sys

from django.conf import settings
from django.core import checks
from django.core.management.base import BaseCommand
from django.db import DatabaseError
from huey.contrib.djhuey import HUEY

from memsite.api.mcp import run_stdio
from memsite.core import consumer
from memsite.core.tokens import find_token

CONSUMER_LOG = "consumer.log"


class Command(BaseCommand):
    help = "Serve the memory over MCP on stdin/stdout (token: MEMSITE_API_TOKEN or --token)."
    # Django prints check warnings on stdout, which belongs to the protocol: checked below.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--token", help="The agent's API token (default: MEMSITE_API_TOKEN).")

    def handle(self, *args, **options):
        serious = [issue for issue in checks.run_checks() if issue.is_serious()]
        if serious:
            self._fail(f"{serious[0].msg} {serious[0].hint or ''}".strip())
        token = (options["token"] or os.environ.get("MEMSITE_API_TOKEN", "")).strip()
        if not token:
            self._fail(
                "No API token: set MEMSITE_API_TOKEN or pass --token "
                "(create one on the Agents page or with `api_token create`)."
            )
        try:
            found = find_token(token)
        except DatabaseError:
            self._fail("The database is not set up: start the app once (`make run`) first.")
        if found is None or found.state() != "active":
            state = found.state() if found else "unknown"
            self._fail(f"This API token is not valid ({state}); create one on the Agents page.")
        jobs = None if HUEY.immediate else self._start_consumer()
        try:
            run_stdio(token)
        finally:
            if jobs is not None:
                consumer.stop(jobs, consumer.SHUTDOWN_TIMEOUT + 2)

    def _start_consumer(self):
        log = open(settings.DATA_DIR / CONSUMER_LOG, "ab")  # noqa: SIM115 (the child's)
        try:
            return consumer.start(stdout=log, stderr=log)
        finally:
            log.close()  # the child holds its own copy

    def _fail(self, sentence: str):
        sys.stderr.write(sentence + "\n")
        sys.exit(1)
