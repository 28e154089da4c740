"""One task consumer per data directory, whoever starts the product.

Jobs (indexing vectors, extraction, episodes, card refreshes) wait in the queue until a
consumer runs them. `serve` (`make run`, `memory-curator run`) starts one; so does the stdio
MCP server (`memory-curator mcp`), which MCP clients start on their own, often with no web
server anywhere. Two consumers on one queue would each run the periodic jobs, so every
consumer first takes an exclusive lock on `<data dir>/consumer.lock` (an advisory `flock`,
released by the kernel when its process dies, however it dies) and waits while another
process holds it. Whichever of several processes started first runs the jobs; when it stops,
a waiting one takes over, so the jobs run as long as any of them is alive.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connections
from huey.signals import SIGNAL_COMPLETE, SIGNAL_ERROR

LOCK_NAME = "consumer.lock"
PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
# What `ps`, `top` and /proc/PID/comm show for a consumer forked by `serve` (15 bytes at most):
# its command line is its parent's.
PROCESS_NAME = b"huey-consumer"
# Huey gets this long to finish running tasks after SIGTERM (serve kills it a little later).
SHUTDOWN_TIMEOUT = 8
# After a task, memory is given back to the system once the process has grown this much.
TRIM_GROWTH = 32 << 20

try:
    import fcntl
except ImportError:  # Windows: no flock; the product's documented platforms all have it
    fcntl = None


def lock_path() -> Path:
    return Path(settings.DATA_DIR) / LOCK_NAME


def take_lock(wait: bool = True, poll: float = 1.0):
    """The open lock file once this process holds the lock (keep it open: closing it lets
    go), or None when `wait` is False and another process holds it."""
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # noqa: SIM115 (held for the life of the process)
    if fcntl is None:
        return handle
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                handle.close()
                return None
            time.sleep(poll)  # not a blocking flock: signals must still stop a waiting process
            continue
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        return handle


def holder() -> int | None:
    """The pid of the process that holds the lock now, or None when nobody does."""
    if fcntl is None or not lock_path().exists():
        return None
    with open(lock_path(), "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            text = handle.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None


def command() -> list[str]:
    """The consumer as a process: `python -m memsite consumer` works in a checkout and in an
    installed app. SIGTERM is huey's graceful signal here: before huey has set its handlers,
    SIGTERM ends the process silently, where SIGINT would print a traceback."""
    return [
        sys.executable, "-m", "memsite", "consumer", "--skip-checks",
        "--graceful-signal", "TERM", "--shutdown-timeout", str(SHUTDOWN_TIMEOUT),
    ]  # fmt: skip


KEYWORD_INDEX_OFF = {"MEMSITE_SEARCH_KEYWORD_INDEX": "0"}


def environment() -> dict:
    """The consumer's searches (related facts for extraction) are background jobs: FTS5
    ranks their keywords, so the consumer never holds a second copy of a web process's
    keyword postings (0.5 KB an item: 46 MB at 100k items, docs/performance.md). The vectors
    need no such rule: every process maps the same file (retrieval/matrix.py)."""
    return {**os.environ, **KEYWORD_INDEX_OFF}


def start(stdout=None, stderr=None) -> subprocess.Popen:
    """The consumer process, in a session of its own (Ctrl-C in a terminal reaches only its
    parent, which stops it gracefully), ending with its parent on Linux. Start it before
    this process starts any thread: the hook below runs between fork and exec."""
    return subprocess.Popen(
        command(),
        cwd=settings.BASE_DIR,
        env=environment(),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        preexec_fn=die_with_parent_hook(),
    )


def stop(process: subprocess.Popen, grace: float) -> None:
    """SIGTERM (huey finishes the running task), then SIGKILL after `grace` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def die_with_parent_hook():
    """On Linux, make the consumer get SIGTERM if its parent is killed with no chance to
    clean up (an MCP client closing a stdio server may SIGKILL it)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    parent_pid = os.getpid()

    def hook():
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent_pid:  # the parent died between fork and prctl
            os._exit(1)

    return hook


def fork() -> ForkedConsumer:
    """The consumer as a child forked from this process, not a fresh interpreter: it shares
    every page this process loaded before (Django and the app, jieba's dictionary, the
    search indexes `serve` loads before it forks its web workers) instead of loading its own
    copy. Otherwise it is what `start` starts: a session of its own (Ctrl-C reaches only its
    parent, which stops it gracefully), SIGTERM when its parent dies (Linux), no keyword
    postings of its own, and it runs once it holds the data directory's lock. Fork it while
    this process runs no other thread (a thread's locks would be copied held)."""
    connections.close_all()  # the child must never share this process's SQLite handles
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return ForkedConsumer(pid)
    code = 1
    try:
        _become_consumer(parent)
        code = run_forked()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()  # os._exit below would swallow it
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # never return into the parent's code (its cleanup is the parent's)


def _become_consumer(parent: int) -> None:
    os.setsid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        libc.prctl(PR_SET_NAME, ctypes.c_char_p(PROCESS_NAME))
        if os.getppid() != parent:  # the parent died before prctl
            os._exit(1)
    # The parent's handlers (serve turns SIGINT/SIGTERM into KeyboardInterrupt) are not
    # the consumer's: until huey sets its own, SIGTERM ends it silently, as in `start`.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    use_no_keyword_index()
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)  # like `start`: no terminal input
    os.close(nothing)


def use_no_keyword_index() -> None:
    """This process ranks keywords in SQLite (see `environment`); postings a forked consumer
    inherited stay untouched, so their pages stay shared with the parent."""
    os.environ.update(KEYWORD_INDEX_OFF)
    settings.SEARCH_KEYWORD_INDEX = False


def run_forked() -> int:
    """`manage.py consumer` with the options `command()` passes, in this process."""
    call_command("consumer", graceful_signal="TERM", shutdown_timeout=SHUTDOWN_TIMEOUT)
    return 0


class ForkedConsumer:
    """What `serve` needs of a consumer process, as subprocess.Popen offers it, for a child
    forked by `fork`."""

    def __init__(self, pid: int):
        self.pid, self.returncode, self._lock = pid, None, threading.Lock()

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    # Reaped by another waiter: gunicorn's arbiter collects every child that
                    # exits (subprocess.Popen reports 0 in the same case).
                    self.returncode = 0
                else:
                    if pid:
                        self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(PROCESS_NAME.decode(), timeout)
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:  # never signal a pid that is no longer our child
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def yield_to_requests() -> None:
    """Run this process's jobs below the web processes' CPU priority (CONSUMER_NICENESS):
    on a two-core machine a chat import's embedding otherwise takes both cores from the
    person's and the agents' searches (their p95 was 2.4 times idle while an import drained,
    docs/performance.md), while a niced job still gets every core nobody else wants. On
    Linux the niceness is the calling thread's and every thread it starts later inherits it:
    call it before the workers start."""
    if settings.CONSUMER_NICENESS > 0 and hasattr(os, "nice"):
        os.nice(settings.CONSUMER_NICENESS)


def give_back_memory_after_tasks(huey) -> None:
    """After a task that left the process much larger (a contradiction scan or a nightly
    consolidation reads every active fact: +200 MB at 100k facts), collect and hand the
    freed heap back to the system, so the consumer does not keep the peak of its largest
    job for the rest of its life. Checked after every task (one read of /proc/self/statm),
    done only when it grew by TRIM_GROWTH."""

    @huey.signal(SIGNAL_COMPLETE, SIGNAL_ERROR)
    def after_task(signal_name, task, *args, **kwargs):
        trim_if_grown()


_trim_lock = threading.Lock()
_trimmed_at = 0


def resident_bytes() -> int:
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):  # no /proc: never trims
        return 0


def trim_if_grown() -> bool:
    """Collect and trim when resident memory grew by TRIM_GROWTH since the last time."""
    global _trimmed_at
    with _trim_lock:
        if resident_bytes() - _trimmed_at < TRIM_GROWTH:
            return False
        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass
        _trimmed_at = resident_bytes()
        return True
