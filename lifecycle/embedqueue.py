"""The embedding queue (seed 000 section 8): retry with exponential backoff, then a dead letter.

`index_with_retry` runs one attempt and says what should happen next; the Huey task
schedules the retry (so the logic is testable without a consumer). The keyword row is
committed before the embedder runs (retrieval.indexing), so an item whose vector keeps
failing is still found by keyword search while it waits or sits in the dead letters.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from lifecycle.llm import record_incident
from lifecycle.models import DeadLetter, DeadStatus, DeadTask, Service
from retrieval import indexing

log = logging.getLogger(__name__)
OK, RETRY, DEAD = "ok", "retry", "dead"


@dataclass(frozen=True)
class Attempt:
    status: str  # ok | retry | dead
    delay: float | None = None
    error: str = ""


def backoff(attempt: int) -> float | None:
    """Seconds before retry number `attempt + 1`, or None when no retry is left."""
    delays = settings.EMBED_BACKOFF
    return delays[attempt] if 0 <= attempt < len(delays) else None


def index_with_retry(kind: str, object_id: int, attempt: int = 0) -> Attempt:
    """One indexing attempt (0 is the first); a failure asks for a retry, the last a dead letter."""
    try:
        indexing.reindex_one(kind, object_id)
    except Exception as exc:  # the embedder, the endpoint or a locked database: all retryable
        error = f"{type(exc).__name__}: {exc}"
        log.warning("indexing %s %s failed (attempt %s): %s", kind, object_id, attempt + 1, error)
        record_incident(Service.EMBEDDING, error, f"{kind} {object_id}")
        delay = backoff(attempt)
        if delay is None:
            dead_letter(DeadTask.EMBED, kind, object_id, error, attempts=attempt + 1)
            return Attempt(DEAD, error=error)
        return Attempt(RETRY, delay, error)
    _close_open(DeadTask.EMBED, kind, object_id)
    return Attempt(OK)


def dead_letter(task: str, kind: str, object_id: int, error: str, attempts: int) -> DeadLetter:
    """One open row per item: a repeated failure updates it instead of adding another."""
    with transaction.atomic():
        row = DeadLetter.objects.filter(
            task=task, item_kind=kind, object_id=object_id, status=DeadStatus.OPEN
        ).first()
        if row is None:
            return DeadLetter.objects.create(
                task=task, item_kind=kind, object_id=object_id, error=error, attempts=attempts
            )
        row.error, row.attempts, row.created_at = error, row.attempts + attempts, timezone.now()
        row.save(update_fields=["error", "attempts", "created_at"])
        return row


def _close_open(task: str, kind: str, object_id: int) -> None:
    """An item that indexed fine (e.g. after a later edit) has no reason to stay dead."""
    DeadLetter.objects.filter(
        task=task, item_kind=kind, object_id=object_id, status=DeadStatus.OPEN
    ).update(status=DeadStatus.RETRIED, resolved_at=timezone.now())


def open_letters():
    return DeadLetter.objects.filter(status=DeadStatus.OPEN)
