"""One consistent view of the database for a long read (an export) while writers go on.

In WAL mode a read transaction sees the database as it was at its first read, however long it
runs, and blocks no writer. Django reads in autocommit outside atomic blocks (every query its
own snapshot: rows read by two queries can disagree), and its atomic() begins IMMEDIATE, which
would hold the write lock, and stop every writer, for the whole export. So `read_snapshot`
turns autocommit off, begins a deferred transaction and makes its first read while holding the
writers' queue (memsite/db/writelock.py): no write is half-done at that moment, so files that
writers change only while they hold the queue (the card files, see curator/card_journal.py)
can be captured as of the snapshot too. The queue is let go at once; the reads take as long as
they take.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DEFAULT_DB_ALIAS, OperationalError, connections

from memsite.core.db import writelock


@contextmanager
def read_snapshot(
    capture: Callable[[], Any] | None = None, using: str = DEFAULT_DB_ALIAS
) -> Iterator[Any]:
    """Run the block's queries in one snapshot; yields what `capture()` returned, which runs
    at the moment the snapshot is taken (while no writer is mid-transaction)."""
    conn = connections[using]
    if conn.in_atomic_block:
        # Already in a transaction that holds the write lock: one snapshot already, and
        # nobody else can write until it ends.
        yield capture() if capture else None
        return
    conn.ensure_connection()
    conn.set_autocommit(False)
    try:
        captured = _begin(conn, capture)
        yield captured
    finally:
        conn.rollback()  # it only read: nothing to commit
        conn.set_autocommit(True)


def _begin(conn, capture: Callable[[], Any] | None) -> Any:
    lock = getattr(conn, "_write_lock", None)  # None for an in-memory database
    if lock is not None:
        try:
            lock.acquire()
        except writelock.Timeout as exc:
            raise OperationalError(str(exc)) from exc
    try:
        with conn.cursor() as cursor:
            cursor.execute("BEGIN DEFERRED")
            cursor.execute("SELECT count(*) FROM sqlite_master")  # the first read pins it
        return capture() if capture else None
    finally:
        if lock is not None:
            lock.release()
