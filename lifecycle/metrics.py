"""The daily metrics snapshot for the home page charts (seed 000 section 9).

The rates come from curator.metrics (the same definitions the home page draws from the
event log); the snapshot adds the state that events cannot rebuild later: how many facts
were active, waiting, embedded, dead-lettered on that day. One row per owner and day; the
hourly job refreshes today's row, so the last refresh of a day is that day's snapshot and
a machine that sleeps at night still gets one.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from curator.metrics import home_metrics
from curator.models import ConversationTurn, Episode, Fact, Owner
from curator.writepath import due_pending
from lifecycle import turnstate
from lifecycle.models import DeadLetter, DeadStatus, ExtractionItem, MetricsSnapshot, QueueStatus
from retrieval.models import SearchDoc


def values_for(owner: Owner, now: datetime) -> dict:
    values = {m.key: m.values[0] for m in home_metrics(owner, days=1, now=now)}
    values.update(
        facts_active=Fact.objects.filter(owner=owner).live(now).count(),
        pending=due_pending(owner, now).count(),
        episodes=Episode.objects.filter(owner=owner).count(),
        turns=ConversationTurn.objects.filter(session__owner=owner).count(),
        turns_unextracted=turnstate.awaiting(
            ConversationTurn.objects.filter(session__owner=owner)
        ).count(),
        embedded=SearchDoc.objects.filter(owner_id=owner.pk).exclude(embedded_hash="").count(),
        dead_letters=DeadLetter.objects.filter(status=DeadStatus.OPEN).count(),
        extraction_waiting=ExtractionItem.objects.filter(status=QueueStatus.WAITING).count(),
    )
    return values


def snapshot(now: datetime | None = None, dry_run: bool = False) -> list[MetricsSnapshot]:
    """Today's row per owner (created or refreshed); dry: computed, not saved."""
    now = now or timezone.now()
    day = timezone.localtime(now).date()
    rows = []
    for owner in list(Owner.objects.all()) or [Owner.default()]:
        values = values_for(owner, now)
        if dry_run:
            rows.append(MetricsSnapshot(owner=owner, date=day, values=values, taken_at=now))
            continue
        row, _created = MetricsSnapshot.objects.update_or_create(
            owner=owner, date=day, defaults={"values": values, "taken_at": now}
        )
        rows.append(row)
    return rows


def series(owner: Owner | None = None, days: int = 30) -> list[MetricsSnapshot]:
    """The last `days` snapshots, oldest first (for charts over longer windows)."""
    owner = owner or Owner.default()
    return list(reversed(MetricsSnapshot.objects.filter(owner=owner)[:days]))
