"""The per-token API rate limit, shared by every process that serves one data directory.

A token bucket per API token: it holds `per_minute` requests and refills continuously, so a
client may burst up to its minute's allowance and then runs at the steady rate. The buckets
live in their own small SQLite file in the data directory (`ratelimit.sqlite3`), so
`MEMSITE_WEB_PROCESSES=2`, or two `serve` commands on one data directory, share one limit
instead of each granting the whole allowance.

Why a file of its own and not a table in memory.sqlite3: every API request, reads included,
updates its bucket. In the app's database that would make each GET a writer queuing behind
the consumer's transactions for the database write lock; here the only writers are these
one-statement updates, which hold the file's lock for microseconds. Why not Django's cache
(or ninja's throttling, which uses it): the database and file caches increment by read then
write, so two processes can both let the same last request through.

One statement (an UPSERT with RETURNING) reads, refills and takes from the bucket, and SQLite
runs it under the file's write lock: atomic across threads and processes. Losing the last
updates in a power cut only hands a client part of a minute back, hence synchronous=OFF.
Measured cost: 35 us of each request at the median (p99 85-100 us; timed inside GET /traces
requests, which take about 1.25 ms), 8 us in a tight loop; the in-memory dict it replaces
took 0.5 us. Two processes updating one bucket 1,800 times a second: p99 78 us, p99.9 0.2 ms.
"""

import logging
import math
import os
import threading
import time
import weakref
from pathlib import Path

import sqlean.dbapi2 as sqlite  # the app's SQLite driver: RETURNING needs SQLite >= 3.35
from django.conf import settings

log = logging.getLogger(__name__)

FILE_NAME = "ratelimit.sqlite3"
# Waits for another process's update are microseconds; a second means something is wrong
# with the file, and then the request goes ahead (see hit).
BUSY_TIMEOUT = 1.0
RETRY_SLEEP = 0.00005  # seconds between tries while another process updates a bucket

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bucket (
    key INTEGER PRIMARY KEY,
    tokens REAL NOT NULL,   -- requests left, fractional while refilling
    stamp REAL NOT NULL,    -- when tokens was computed (Unix seconds)
    allowed INTEGER NOT NULL  -- whether the last request took a token
)"""

# Every SET expression reads the row as it was before the update (SQLite's UPDATE rule), so
# `refilled` is written out three times rather than computed once. A clock that stepped back
# refills nothing.
_REFILLED = "min(:cap, tokens + max(0.0, :now - stamp) * :rate)"
_HIT = f"""
INSERT INTO bucket (key, tokens, stamp, allowed) VALUES (:key, :cap - 1, :now, 1)
ON CONFLICT (key) DO UPDATE SET
    tokens = {_REFILLED} - ({_REFILLED} >= 1),
    allowed = {_REFILLED} >= 1,
    stamp = :now
RETURNING tokens, allowed"""


class RateLimiter:
    """Token buckets in a SQLite file; `path` defaults to the data directory's file."""

    def __init__(self, path: str | Path | None = None):
        self._path = path
        self._lock = threading.Lock()
        self._conn = None
        self._inherited = []
        self._failing = False
        me = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: (alive := me()) and alive._after_fork())

    def hit(self, key: int, per_minute: int, now: float | None = None) -> float:
        """0 when the request may go ahead, else the seconds to wait before the next one."""
        if per_minute <= 0:
            return 0.0
        # Unix time, not time.monotonic(): stamps must mean the same in every process and
        # after a restart.
        now = time.time() if now is None else now
        rate = per_minute / 60.0
        params = {"key": key, "cap": float(per_minute), "now": now, "rate": rate}
        try:
            ((tokens, allowed),) = self._execute(_HIT, params)
        except sqlite.Error as exc:
            # The limit protects the app from a runaway agent; a broken counter file must not
            # take the whole API down with it, so the request goes ahead and the log says why.
            self._fail_open(exc)
            return 0.0
        self._failing = False
        return 0.0 if allowed else (1 - tokens) / rate

    def reset(self) -> None:
        """Forget every bucket (tests, and a fresh start)."""
        self._execute("DELETE FROM bucket", {})

    def _execute(self, sql: str, params: dict) -> list[tuple]:
        # Threads of one process share one connection and queue on this lock (microseconds),
        # so only another process's update can find the file locked.
        with self._lock:
            deadline = time.monotonic() + BUSY_TIMEOUT
            while True:
                try:
                    if self._conn is None:
                        self._conn = _open(self._file())
                    return self._conn.execute(sql, params).fetchall()
                except sqlite.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                # SQLite's own busy handler first sleeps 1 ms, then longer; an update holds
                # the lock for microseconds, so retrying sooner cut the slowest 0.1% of
                # contended hits from 1.2 ms to 0.2 ms (two processes, 1,800 hits/s).
                time.sleep(RETRY_SLEEP)

    def _file(self) -> Path:
        return Path(self._path) if self._path else Path(settings.DATA_DIR) / FILE_NAME

    def _fail_open(self, exc: sqlite.Error) -> None:
        if not self._failing:
            log.warning("API rate limit not applied: %s (%s)", exc, self._file())
        self._failing = True
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._conn = None  # reopen next time: the file may have been replaced

    def _after_fork(self) -> None:
        """In a forked web worker: a new connection, and a lock no parent thread can hold.

        SQLite forbids using a connection across fork, and closing the parent's copy here
        could drop locks the parent holds, so the inherited one is kept, unused, forever.
        """
        self._lock = threading.Lock()
        if self._conn is not None:
            self._inherited.append(self._conn)
        self._conn = None


def _open(path: Path):
    # Autocommit: each statement is its own transaction, holding the write lock only while
    # it runs. WAL keeps the update an append (no journal file created and deleted each time).
    conn = sqlite.connect(str(path), timeout=0, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute(_SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


limiter = RateLimiter()


def retry_after(wait: float) -> int:
    return max(1, math.ceil(wait))


def rate_limit() -> int:
    return int(getattr(settings, "API_RATE_LIMIT", 0))
