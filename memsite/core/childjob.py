"""A job run as `python -m memsite <command>` in a child process, for the consumer's largest
jobs (docs/performance.md).

A job that reads every active fact (the contradiction scan, the nightly consolidation) grows
the consumer by 150-250 MB at 100k facts, and the heap it fragments stays behind after the
job (40 MB, trimmed or not): the consumer would keep its largest job's residue for the rest of
its life. A child process takes its whole heap with it when it exits.

Started, not forked: the consumer runs its jobs on worker threads, and a fork while another
thread holds SQLite's or the allocator's locks would copy them held. The child opens the
database file its parent has open (MEMSITE_DATABASE_FILE), and dies with the thread that
started it (Linux: it asks for SIGTERM itself, see `die_with_parent`; a `preexec_fn` would
run Python between fork and exec, which is what must not happen here).
"""

from __future__ import annotations

import collections
import ctypes
import os
import signal
import subprocess
import sys

from django.conf import settings
from django.db import connection

from memsite.core import consumer

PARENT = "MEMSITE_JOB_PARENT"
DATABASE_FILE = "MEMSITE_DATABASE_FILE"
PR_SET_PDEATHSIG = 1
TAIL_LINES = 20  # of the child's stderr, kept for the failure's message


class ChildJobFailed(RuntimeError):
    """The child exited with an error (or was killed); the message ends with its stderr."""

    def __init__(self, args: list[str], code: int, tail: str):
        self.code, self.tail = code, tail
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        super().__init__(f"`{' '.join(args)}` in a child process failed ({how})\n{tail}".strip())


def command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "memsite", *args, "--skip-checks"]


def environment() -> dict:
    """The consumer's environment (keyword ranking in SQLite), this database file, and the
    parent's pid for `die_with_parent`."""
    return {
        **consumer.environment(),
        DATABASE_FILE: str(connection.settings_dict["NAME"]),
        PARENT: str(os.getpid()),
    }


def run(args: list[str]) -> None:
    """Run the management command `args` in a child process and wait for it. Its stdout and
    stderr go to this process's (the `make run` terminal); the last lines of its stderr are
    kept for ChildJobFailed. The child runs at this thread's niceness (inherited)."""
    process = subprocess.Popen(
        command(args),
        cwd=settings.BASE_DIR,
        env=environment(),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    for line in process.stderr:
        sys.stderr.write(line)
        tail.append(line)
    code = process.wait()
    if code != 0:
        raise ChildJobFailed(args, code, "".join(tail))


def die_with_parent() -> None:
    """In a child `run` started: SIGTERM when the starting thread's process goes (Linux), so
    a stopped or killed consumer leaves no job running on its own."""
    parent = os.environ.get(PARENT)
    if not parent or not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if str(os.getppid()) != parent:  # the parent went before prctl
        os._exit(1)
