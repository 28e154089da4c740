"""What the memory domain announces, for the layers above it to act on.

The domain never imports search or the job queue: it says what changed, once the change is
committed, and the jobs layer (lifecycle.receivers, connected in LifecycleConfig.ready)
decides what follows: re-indexing, extraction, card refreshes.
"""

from django.db import transaction
from django.dispatch import Signal

# A searchable item (kind, object_id) was created, changed or removed.
item_changed = Signal()
# The same, sent at once inside the write's own transaction: for what must hold the moment the
# write commits (its keyword-index row: a memory is found by its words as soon as it exists),
# never for slow work (vectors, extraction: those follow item_changed through the queue).
item_written = Signal()
# A conversation turn was stored (turn_id): what the person said may hold memories.
turn_recorded = Signal()
# Facts were written, edited, superseded, archived, undone ... (fact_ids, one send per
# committed change): the cards built from the facts are out of date.
facts_changed = Signal()


def changed(kind: str, object_id: int, instance=None) -> None:
    """Announce a change: now to what must commit with it (item_written), and once the
    surrounding transaction commits to the rest (never for a rolled-back one). `instance`:
    the item as just saved, if the caller holds it (item_written's receiver need not read
    the row it was told about back)."""
    item_written.send(sender=kind, kind=kind, object_id=object_id, instance=instance)
    transaction.on_commit(lambda: item_changed.send(sender=kind, kind=kind, object_id=object_id))


def recorded(turn_id: int) -> None:
    transaction.on_commit(lambda: turn_recorded.send(sender="turn", turn_id=turn_id))


def facts(fact_ids) -> None:
    """Announce, once the transaction commits, that these facts changed (one send per change,
    however many facts it touched: a merge or an undo is one announcement)."""
    ids = sorted({int(i) for i in fact_ids})
    if ids:
        transaction.on_commit(lambda: facts_changed.send(sender="fact", fact_ids=ids))
