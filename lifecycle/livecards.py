"""Live cards: a burst of fact changes gives one card refresh, a few seconds after the last.

What a person confirms or corrects must reach the cards the assistant reads now, not the next
morning; but a bulk confirm of fifty items must not rewrite User.md fifty times. So every
change only notes its time (`note_change`, called by the receiver of
curator.signals.facts_changed) and schedules the refresh task when none is waiting; the task
(`lifecycle.tasks.refresh_cards`) waits until CARDS_REFRESH_DELAY seconds passed since the
last change (`wait`), then rebuilds the generated sections once under a lock (`run`).

The three keys live in Huey's key-value store (the queue's SQLite file), which every web
process and the consumer share, so the coalescing works across processes. A refresh task
lost with a crashed consumer is noticed after STALE seconds and scheduled again.
"""

from __future__ import annotations

import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from curator.cards import CardConflict
from lifecycle import consolidate, refresh, runs

CHANGED = "cards-refresh.changed"  # time of the newest change
QUEUED = "cards-refresh.queued"  # a refresh task is scheduled (since this time)
DONE = "cards-refresh.done"  # the newest change the last refresh covered
LOCK = "cards-refresh"
LOCK_TTL = timedelta(minutes=2)  # a refresh takes well under a second; a crash frees it soon
STALE = 600.0
BUSY, REFRESHED = "busy", "refreshed"


def note_change(huey, now: float | None = None) -> bool:
    """Record a change; True when the caller must schedule the refresh (none is waiting)."""
    now = time.time() if now is None else now
    huey.put(CHANGED, now)
    if huey.put_if_empty(QUEUED, now):
        return True
    queued = huey.get(QUEUED, peek=True)
    if queued is None or now - queued > STALE:  # the task finished meanwhile, or was lost
        huey.put(QUEUED, now)
        return True
    return False


def wait(huey, now: float | None = None) -> float | None:
    """Seconds the refresh must still wait for the burst to end (0: run now), or None when
    nothing changed since the last refresh (the task then just ends)."""
    now = time.time() if now is None else now
    changed, done = huey.get(CHANGED, peek=True), huey.get(DONE, peek=True)
    if changed is None or (done is not None and changed <= done):
        huey.delete(QUEUED)
        return None
    remaining = changed + settings.CARDS_REFRESH_DELAY - now
    return remaining if remaining > 0.05 else 0.0


def run(huey, now: float | None = None) -> str:
    """Refresh the cards once; BUSY when the nightly run or another worker is at them (the
    task then tries again a little later)."""
    holder = f"live-{time.time_ns()}"
    changed = huey.get(CHANGED, peek=True)
    if runs.held(consolidate.LOCK) or not runs.acquire(LOCK, holder, LOCK_TTL):
        huey.put(QUEUED, time.time() if now is None else now)
        return BUSY
    try:
        huey.delete(QUEUED)  # a change from here on schedules a refresh of its own
        refresh.refresh_cards(timezone.now(), {}, note="live_refresh")
    except CardConflict:  # a person saved the card at this very moment: read it again
        huey.put(QUEUED, time.time())
        return BUSY
    finally:
        runs.release(LOCK, holder)
    huey.put(DONE, changed)
    return REFRESHED
