"""Start-up repair of what a killed process left behind: card saves and imports cut short.

Runs once per process, when it opens its first database connection: every process does that
early (a web worker, the Huey consumer, a management command), and a process that never
touches the database cannot have left anything half-done there. With nothing to repair it
costs two directory listings; repairs run under the database write lock, so no live save or
import is touched (see card_journal and staging for what each repair does).
"""

from __future__ import annotations

import logging
import threading

from django.db import DEFAULT_DB_ALIAS, DatabaseError, transaction

from curator import card_journal
from lifecycle.backup import staging

log = logging.getLogger(__name__)
_lock = threading.RLock()
_done = False


def leftovers() -> bool:
    return card_journal.pending() or staging.pending()


def repair() -> None:
    """Finish or undo whatever a killed process left (safe to call at any time)."""
    staging.recover()
    if card_journal.pending():
        with transaction.atomic():  # the write lock: no save is between rename and commit
            card_journal.recover()


def on_connection_created(sender, connection, **kwargs) -> None:
    """connection_created receiver: the first connection of the process repairs."""
    global _done
    if connection.alias != DEFAULT_DB_ALIAS:
        return
    with _lock:  # the other threads' first queries wait until the files are right
        if _done:
            return
        _done = True
        try:
            if leftovers():
                repair()
        except DatabaseError as exc:  # not migrated yet, or locked: the next start tries again
            log.warning("Could not repair an interrupted save or import yet: %s", exc)
        except Exception:  # a failed repair must not stop the process from using its database
            log.exception("Repairing an interrupted save or import failed")
