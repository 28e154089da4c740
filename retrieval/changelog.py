"""Following a change log table from a process's in-memory copy of a search index.

A log is (seq INTEGER PRIMARY KEY AUTOINCREMENT, doc_id) filled by triggers whichever process
writes, plus a one-row epoch table with a random token per log. A follower reads the newest
sequence number before each search and applies the documents changed since the last one it
saw; a NULL doc_id, a gap left by pruning or another epoch token (the log was dropped and
created again) reloads everything. Followers read outside transactions only, so they never
hold a change that a rollback later took back.
"""

import threading

from django.db import connection


class LogFollower:
    log_table = ""
    epoch_table = ""

    def __init__(self):
        self.lock = threading.Lock()
        self.seq: int | None = None  # the last log entry applied
        self.epoch: str | None = None  # the log it was applied from

    def _reload(self) -> None:
        raise NotImplementedError

    def _apply(self, doc_ids: list[int]) -> None:
        raise NotImplementedError

    def refresh(self) -> None:
        with self.lock, connection.cursor() as cur:
            # Apart, min() and max() each read one end of the index; together, every row.
            cur.execute(
                f"SELECT (SELECT token FROM {self.epoch_table}), "
                f"(SELECT min(seq) FROM {self.log_table}), (SELECT max(seq) FROM {self.log_table})"
            )
            epoch, first, last = cur.fetchone()
            if epoch == self.epoch and last == self.seq:
                return
            changed = self._changes_since(first, last) if epoch == self.epoch else None
            if changed is None:
                self._reload()
            else:
                self._apply(changed)
            self.epoch, self.seq = epoch, last

    def _changes_since(self, first: int, last: int) -> list[int] | None:
        """Doc ids changed in (self.seq, last]; None when everything must be re-read (never
        loaded, or entries pruned)."""
        if self.seq is None or last is None or first > self.seq + 1:
            return None
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT DISTINCT doc_id FROM {self.log_table} WHERE seq > %s AND seq <= %s",
                [self.seq, last],
            )
            ids = [row[0] for row in cur.fetchall()]
        return None if None in ids else ids


_held_lock = threading.Lock()


def held(followers: dict, make, *params) -> LogFollower:
    """This process's follower for the database in use and these parameters, from
    `followers` (made by `make(*params)` on first use), brought up to date."""
    key = (str(connection.settings_dict["NAME"]), *params)
    with _held_lock:
        follower = followers.get(key)
        if follower is None:
            follower = followers[key] = make(*params)
    follower.refresh()
    return follower


def rows_of(select: str, doc_ids: list[int], chunk: int = 500):
    """The rows of `select`, whose "{}" is filled with the IN list, for these documents: one
    batch per `chunk` ids (a statement takes only so many parameters)."""
    for start in range(0, len(doc_ids), chunk):
        part = doc_ids[start : start + chunk]
        with connection.cursor() as cur:
            cur.execute(select.format(", ".join(["%s"] * len(part))), part)
            batch = cur.fetchall()
        yield batch


def prune(log_table: str, keep: int = 100_000) -> int:
    """Drop all but the newest `keep` entries (nightly); a process further behind than that
    reloads instead of replaying the log."""
    with connection.cursor() as cur:
        cur.execute(
            f"DELETE FROM {log_table} WHERE seq <= (SELECT max(seq) FROM {log_table}) - %s",
            [keep],
        )
        return cur.rowcount
