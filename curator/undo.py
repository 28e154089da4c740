"""Undo from the activity log: the inverse of an event is applied as a new `undo` event.

History is never erased: the undone event stays, linked to the undo through `reverts`, and
an undo can itself be undone (a redo). Each event's payload lists the `changes` it made
(object, fields before, fields after); undo checks that every object still has the "after"
values, restores the "before" values, and refuses, saying why, when a later change touched
the same fields or when restoring would put two active facts on one subject + predicate.
A batch (one bulk action, one job run) is undone whole or not at all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from curator import attachments, contradictions, episodes, thresholds
from curator.guard import turns
from curator.models import (
    Attachment,
    Contradiction,
    ConversationTurn,
    Episode,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    PendingItem,
    PendingReason,
    PendingStatus,
    SourceThreshold,
    expiry_for,
)
from curator.normalize import content_key
from curator.writepath import (
    OPEN,
    Work,
    WritePathError,
    current_holder,
    new_batch,
    pending_snapshot,
    snapshot,
)

NOT_UNDOABLE = frozenset(
    {
        EventType.RETRIEVAL_FAIL,
        EventType.RETRY,
        EventType.DEAD_LETTER,
        EventType.PURGE,
        EventType.BLOCK,  # nothing was kept that could come back
    }
)
MODELS = {
    "fact": Fact,
    "pending": PendingItem,
    "episode": Episode,
    "attachment": Attachment,
    "turn": ConversationTurn,
    "contradiction": Contradiction,
    "threshold": SourceThreshold,
}
# Records whose fields the person changes (issue 8: episodes and attachments; issue 22: a
# contradiction's resolution) or a guardrail masks (turns): their module reads and restores
# them.
RECORDS = {
    "episode": episodes,
    "attachment": attachments,
    "turn": turns,
    "contradiction": contradictions,
    "threshold": thresholds,
}
DATETIME_FIELDS = {"expires_at", "cooldown_until"}


class UndoRefused(WritePathError):
    code = "undo_refused"


# --------------------------------------------------------------------------------------
# Reading an event's changes
# --------------------------------------------------------------------------------------


def changes_of(event: MemoryEvent) -> list[dict[str, Any]]:
    """What the event changed, as the write path recorded it (migration 0006 gave older
    events the same shape)."""
    return (event.payload or {}).get("changes", [])


# --------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------


def _static_blocker(event: MemoryEvent) -> str | None:
    if event.event_type in NOT_UNDOABLE:
        return _("This kind of event cannot be undone.")
    if (event.payload or {}).get("originals_forgotten"):
        return _("The original text was removed for good; there is nothing to bring back.")
    undone = event.reverted_by.order_by("pk").first()
    if undone is not None:
        return _("Already undone (event #%(id)s).") % {"id": undone.pk}
    if event.event_type == EventType.DROP:
        candidate = (event.payload or {}).get("candidate") or {}
        return None if candidate.get("content") else _("Nothing was kept that could come back.")
    if not changes_of(event):
        return _("This event changed nothing that could be restored.")
    return None


def _current(kind: str, obj) -> dict[str, Any]:
    if kind in RECORDS:
        return RECORDS[kind].values(obj)
    return snapshot(obj) if kind == "fact" else pending_snapshot(obj)


def _load(change: dict):
    model = MODELS.get(change.get("kind"))
    return model.objects.filter(pk=change.get("id")).first() if model else None


def _later_event(event: MemoryEvent, kind: str, obj_id: int) -> MemoryEvent | None:
    after = Q(created_at__gt=event.created_at) | Q(created_at=event.created_at, pk__gt=event.pk)
    if kind == "fact":
        touches = Q(fact_id=obj_id) | Q(fact__supersedes_id=obj_id)
    elif kind in RECORDS:
        touches = Q(**{f"payload__{kind}": obj_id})  # its edit events name it
    else:
        touches = Q(pending_id=obj_id)
    return (
        MemoryEvent.objects.filter(after & touches)
        .exclude(pk=event.pk)
        .order_by("-created_at", "-pk")
        .first()
    )


def _mismatch(event: MemoryEvent, change: dict, obj) -> str | None:
    """Why the object no longer has the state this event left (None if it still has)."""
    kind, label = change["kind"], _object_label(change)
    if obj is None:
        return _("%(what)s no longer exists (it was purged).") % {"what": label}
    current = _current(kind, obj)
    if all(current.get(k) == v for k, v in (change.get("after") or {}).items()):
        return None
    later = _later_event(event, kind, obj.pk)
    if later is None:
        return _("%(what)s no longer looks the way this event left it.") % {"what": label}
    return _(
        "%(what)s was changed afterwards (%(event)s by %(actor)s, %(when)s, event #%(id)s); "
        "undo that change first."
    ) % {
        "what": label,
        "event": later.get_event_type_display(),
        "actor": later.get_actor_display(),
        "when": date_format(timezone.localtime(later.created_at), "Y-m-d H:i"),
        "id": later.pk,
    }


def _object_label(change: dict) -> str:
    if change.get("kind") == "fact":
        return _("Fact #%(id)s") % {"id": change.get("id")}
    if change.get("kind") == "episode":
        return _("Episode #%(id)s") % {"id": change.get("id")}
    if change.get("kind") == "attachment":
        return _("Attachment #%(id)s") % {"id": change.get("id")}
    if change.get("kind") == "turn":
        return _("Turn #%(id)s") % {"id": change.get("id")}
    if change.get("kind") == "contradiction":
        return _("Contradiction #%(id)s") % {"id": change.get("id")}
    if change.get("kind") == "threshold":
        return _("The thresholds of %(source)s") % {"source": change.get("id")}
    return _("Review item #%(id)s") % {"id": change.get("id")}


def _restored_values(change: dict) -> dict[str, Any]:
    if change.get("before") is None:
        return {"status": FactStatus.REJECTED}  # a creation is withdrawn, not erased
    return dict(change["before"])


def _would_collide(changes: list[dict]) -> str | None:
    """Restoring must not leave two active facts on one subject + predicate."""
    moving = {c["id"] for c in changes if c.get("kind") == "fact"}
    for change in changes:
        if change.get("kind") != "fact" or _restored_values(change).get("status") != "active":
            continue
        fact = Fact.objects.filter(pk=change["id"]).first()
        if fact is None:
            continue
        subject = _restored_values(change).get("subject", fact.subject)
        predicate = _restored_values(change).get("predicate", fact.predicate)
        other = current_holder(fact.owner, subject, predicate, exclude=moving)
        if other is not None:
            return _(
                "Fact #%(id)s would be active again, but fact #%(other)s now holds the same "
                "subject and predicate; archive or undo that one first."
            ) % {"id": fact.pk, "other": other.pk}
    return None


def undo_blocker(event: MemoryEvent) -> str | None:
    """Why this event cannot be undone right now, or None (read-only; for the pages)."""
    if why := _static_blocker(event):
        return why
    if event.event_type == EventType.DROP:
        return _drop_blocker(event)
    changes = changes_of(event)
    for change in changes:
        if why := _mismatch(event, change, _load(change)):
            return why
    return _would_collide(changes)


def _drop_blocker(event: MemoryEvent) -> str | None:
    candidate = event.payload.get("candidate") or {}
    key = content_key(candidate.get("content") or "")
    waiting = PendingItem.objects.filter(
        owner=event.owner, status__in=OPEN, candidate__content_key=key
    ).first()
    if waiting is not None:
        return _("It is already waiting in the review queue (item #%(id)s).") % {"id": waiting.pk}
    return None


# --------------------------------------------------------------------------------------
# Applying
# --------------------------------------------------------------------------------------


def _assign(obj, name: str, value: Any) -> None:
    if name in DATETIME_FIELDS and isinstance(value, str):
        value = parse_datetime(value)
    if name == "resulting_fact":
        obj.resulting_fact_id = value
        return
    setattr(obj, name, value)


def undo_event(event_id: int, *, actor: str = "person", batch: str = "") -> MemoryEvent:
    """Apply the inverse of one event as a new event; raises UndoRefused with the reason."""
    with transaction.atomic():
        event = MemoryEvent.objects.select_related("owner", "fact").get(pk=event_id)
        if why := _static_blocker(event):
            raise UndoRefused(why)
        if event.event_type == EventType.DROP:
            return _undo_drop(event, actor, batch)
        work = Work(event.owner, actor, batch=batch)
        main_before = snapshot(event.fact) if event.fact else None
        changes = changes_of(event)
        for change in reversed(changes):
            obj = _load(change)
            if why := _mismatch(event, change, obj):
                raise UndoRefused(why)
            before = _current(change["kind"], obj)
            if change["kind"] in RECORDS:
                _restore_record(change, obj, before, work)
                continue
            for name, value in _restored_values(change).items():
                _assign(obj, name, value)
            if change["kind"] == "pending" and obj.status != PendingStatus.SNOOZED:
                obj.cooldown_until = None
            if change["kind"] == "fact":
                _renew_if_expired(obj)
            obj.save()
            getattr(work, change["kind"])(obj, before)
        if why := _would_collide(changes):
            raise UndoRefused(why)  # rolls the restored rows back with it
        main = Fact.objects.filter(pk=event.fact_id).first() if event.fact_id else None
        return work.event(
            EventType.UNDO,
            fact=main,
            pending=event.pending,
            reverts=event,
            undoes=event.pk,
            undone_type=event.event_type,
            before=main_before,
            after=snapshot(main) if main else None,
        )


def _restore_record(change: dict, obj, before: dict, work: Work) -> None:
    kind = change["kind"]
    RECORDS[kind].restore(obj, change["before"])
    work.record(kind, obj.pk, before, RECORDS[kind].values(obj))


def _renew_if_expired(fact: Fact) -> None:
    """A fact brought back to life must not expire again the next night: a fresh span."""
    if fact.status == FactStatus.ACTIVE and fact.expires_at and fact.expires_at <= timezone.now():
        fact.expires_at = expiry_for(fact.priority)


def _undo_drop(event: MemoryEvent, actor: str, batch: str) -> MemoryEvent:
    """A dropped candidate comes back as a review item: the person decides after all."""
    if why := _drop_blocker(event):
        raise UndoRefused(why)
    candidate = dict(event.payload["candidate"])
    candidate.setdefault("content_key", content_key(candidate["content"]))
    target = None
    if candidate.get("operation") == "DELETE":
        target = Fact.objects.filter(pk=candidate.get("fact_id"), status="active").first()
        if target is None:
            raise UndoRefused(_("The fact it suggested removing is no longer active."))
    item = PendingItem.objects.create(
        owner=event.owner,
        candidate=candidate,
        confidence=float(event.payload.get("confidence") or candidate.get("confidence") or 0),
        reason=PendingReason.DELETION if target else PendingReason.LOW_CONFIDENCE,
        conflicts_with=target,
        source_turn_id=_existing_turn(candidate.get("source_turn_id")),
    )
    work = Work(event.owner, actor, batch=batch)
    work.pending(item, None)
    return work.event(
        EventType.UNDO,
        fact=target,
        pending=item,
        reverts=event,
        undoes=event.pk,
        undone_type=event.event_type,
    )


def _existing_turn(turn_id) -> int | None:

    if turn_id and ConversationTurn.objects.filter(pk=turn_id).exists():
        return turn_id
    return None


# --------------------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------------------


def batch_events(key: str):
    """The events of one bulk action or one job run that undo would reverse, newest first."""
    if not key:
        return MemoryEvent.objects.none()
    return (
        MemoryEvent.objects.filter(Q(batch=key) | Q(job_run=key))
        .exclude(event_type__in=[*NOT_UNDOABLE, EventType.DROP])
        .order_by("-created_at", "-pk")
    )


def batch_summary(key: str) -> dict[str, Any]:
    events = list(batch_events(key).prefetch_related("reverted_by"))
    open_events = [e for e in events if not e.reverted_by.all()]
    first = events[-1].created_at if events else None
    return {"key": key, "total": len(events), "open": len(open_events), "at": first}


def undo_batch(key: str, *, actor: str = "person") -> list[MemoryEvent]:
    """Undo every event of a batch, newest first, in one transaction: all or nothing."""
    with transaction.atomic():
        events = [e for e in batch_events(key) if not e.reverted_by.exists()]
        if not events:
            raise UndoRefused(_("Nothing in this batch is left to undo."))
        redo_batch = new_batch("undo")
        done = []
        for event in events:
            try:
                done.append(undo_event(event.pk, actor=actor, batch=redo_batch))
            except UndoRefused as exc:
                raise UndoRefused(
                    _("Event #%(id)s: %(why)s") % {"id": event.pk, "why": exc}
                ) from exc
        return done


def undone_at(event: MemoryEvent) -> datetime | None:
    undo = event.reverted_by.order_by("pk").first()
    return undo.created_at if undo else None
