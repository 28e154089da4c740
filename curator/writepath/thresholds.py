"""Setting a source's confidence thresholds: one event, undoable from the Activity log."""

from __future__ import annotations

import math

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from curator import thresholds
from curator.models import Actor, EventType, MemoryEvent, Owner, SourceThreshold
from curator.writepath.clean import check_actor
from curator.writepath.core import InvalidCandidate, Work

MAX_SOURCE = 64


def _unit(value, name: str) -> float | None:
    if value is None:
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or math.isnan(value) or not 0 <= value <= 1:
        raise InvalidCandidate(
            _("A threshold is a number between 0 and 1 (or empty for the default)."),
            code=f"invalid_{name}",
            field=name,
        )
    return round(float(value), 3)


def set_threshold(
    source: str, *, write: float | None, pending: float | None, actor: str = Actor.PERSON
) -> MemoryEvent | None:
    """Store a source's thresholds (None = the environment's default); None when nothing
    changed. The pair must keep review below writing: pending <= write."""
    check_actor(actor)
    source = (source or "").strip()
    if not source or len(source) > MAX_SOURCE:
        raise InvalidCandidate(_("Name the source these thresholds are for."), field="source")
    write, pending = _unit(write, "write"), _unit(pending, "pending")
    effective_write = settings.CONFIDENCE_WRITE if write is None else write
    effective_pending = settings.CONFIDENCE_PENDING if pending is None else pending
    if effective_pending > effective_write:
        raise InvalidCandidate(
            _(
                "The review threshold (%(pending).2f) must not be above the write threshold "
                "(%(write).2f)."
            )
            % {"pending": effective_pending, "write": effective_write},
            code="invalid_thresholds",
            field="pending",
        )
    with transaction.atomic():
        row, _created = SourceThreshold.objects.get_or_create(source=source)
        before = thresholds.values(row)
        row.write, row.pending = write, pending
        row.save()
        after = thresholds.values(row)
        if after == before:
            return None
        work = Work(Owner.default(), actor)
        work.record("threshold", row.pk, before, after)
        return work.event(
            EventType.THRESHOLD, threshold=row.pk, source=source, before=before, after=after
        )
