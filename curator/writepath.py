"""The single write path: every memory change goes through these functions.

Pages, the agent API and the background jobs all call the same plain functions, so a fact
written by an agent, confirmed on the review desk or archived by a job is recorded the same
way: one transaction holding the change and its MemoryEvent (actor, before / after, the
`changes` undo needs), then re-indexing queued for after the commit.

Routing of a proposed candidate (seed 000 sections 6-8, seed 003 4.1, seed 004):
  replayed operation_id -> the first outcome, nothing written
  suggested deletion    -> a pending item, never a deletion
  rejected before       -> dropped (the person is never asked twice)
  below CONFIDENCE_PENDING -> dropped, with an event saying why
  same content as an active fact (same subject + predicate) -> boost (hit_count, confidence)
  already waiting in the queue -> the waiting item, no second one
  below CONFIDENCE_WRITE -> pending (low confidence, or "would replace fact N")
  new value for a subject + predicate -> supersede (the old fact keeps its place in the chain);
      a fact the person verified is only replaced by the person, so others go to review
  otherwise -> written
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from curator.models import (
    Actor,
    ConversationTurn,
    EventType,
    Fact,
    FactStatus,
    FactType,
    MemoryEvent,
    Owner,
    PendingItem,
    PendingReason,
    PendingStatus,
    Priority,
    Scope,
    Source,
    expiry_for,
)
from curator.normalize import content_key, normalise_label, normalise_text
from retrieval import indexing

WRITTEN, PENDING, BOOSTED, SUPERSEDED, DROPPED, DELETED = (
    "written",
    "pending",
    "boosted",
    "superseded",
    "dropped",
    "deleted",
)
MAX_CONTENT = 2000
MAX_LABEL = 200
MAX_TAGS = 20
MAX_TAG = 50
# A repeat moves confidence a quarter of the way to 1 (weighted by how sure the repeat is),
# never past the cap: only a person's confirmation makes a fact certain.
BOOST_STEP = 0.25
CONFIDENCE_CAP = 0.99
# Seed 001: an extractor's `duration` maps to a retention class and an explicit expiry.
DURATIONS: dict[str, tuple[str, timedelta | None]] = {
    "permanent": (Priority.PERMANENT, None),
    "7d": (Priority.SHORT_TERM, timedelta(days=7)),
    "24h": (Priority.TRANSIENT, timedelta(hours=24)),
    "session": (Priority.TRANSIENT, timedelta(days=1)),
}
# Seed 001's default retention per type when neither priority nor duration is given.
DEFAULT_RETENTION = {
    FactType.PREFERENCE: "permanent",
    FactType.SKILL: "permanent",
    FactType.IDENTITY: "permanent",
    FactType.RULE: "permanent",
    FactType.CONSTRAINT: "permanent",
    FactType.ERROR: "7d",
}
# Fields a snapshot carries; undo restores exactly these.
FACT_FIELDS = (
    "content",
    "subject",
    "predicate",
    "type",
    "scope",
    "confidence",
    "importance",
    "priority",
    "expires_at",
    "status",
    "verified",
    "tags",
    "hit_count",
)
# Status and repeat count change only through their own actions (archive, boost ...).
EDITABLE = frozenset(FACT_FIELDS) - {"status", "hit_count"}
OPEN = (PendingStatus.PENDING, PendingStatus.SNOOZED)


# --------------------------------------------------------------------------------------
# Public data and errors
# --------------------------------------------------------------------------------------


@dataclass
class Candidate:
    content: str
    subject: str = ""
    predicate: str = ""
    type: str = "fact"
    scope: str = "user"
    confidence: float = 0.9
    importance: float = 0.5
    priority: str | None = None
    duration: str | None = None
    tags: list[str] = field(default_factory=list)
    source: str = "api"
    source_turn_id: int | None = None
    verified: bool = False
    delete_fact_id: int | None = None


@dataclass
class Result:
    outcome: str
    fact: Fact | None
    pending: PendingItem | None
    event: MemoryEvent
    replayed: bool = False


class WritePathError(ValueError):
    """A refusal a person or an agent can read; `code` is stable for the API."""

    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None):
        super().__init__(message)
        self.code = code or self.code
        self.field = field


class InvalidCandidate(WritePathError):
    """Input that cannot become a memory (empty, too long, out of range, unknown choice)."""


class StaleEdit(WritePathError):
    """The fact changed since the editor loaded it; `fact` is the current version."""

    code = "stale_edit"

    def __init__(self, fact: Fact):
        super().__init__(_("This fact changed since you opened it."), field="content")
        self.fact = fact


class AlreadyResolved(WritePathError):
    code = "already_resolved"


class OperationConflict(WritePathError):
    """An operation id reused for a different request: replaying the first outcome would
    silently drop the new content (turns answer the same way: 409)."""

    code = "operation_conflict"

    def __init__(self, operation_id: str):
        super().__init__(
            _(
                "Operation id “%(id)s” was already used for a different memory; "
                "use a new operation id for new content."
            )
            % {"id": operation_id},
            field="operation_id",
        )


class MootPending(WritePathError):
    """The fact a pending item is about changed meanwhile; applying it would be silent."""

    code = "moot"


class ActiveConflict(WritePathError):
    """Another active fact already holds this subject + predicate; `fact` is that one."""

    code = "active_conflict"

    def __init__(self, message: str, fact: Fact):
        super().__init__(message, field="predicate")
        self.fact = fact


class NotAllowed(WritePathError):
    code = "not_allowed"


# --------------------------------------------------------------------------------------
# Snapshots and the unit of work that records changes
# --------------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return list(value) if isinstance(value, tuple) else value


def snapshot(fact: Fact) -> dict[str, Any]:
    """A fact as events carry it: enough to show a diff and to restore it."""
    data = {name: _json_value(getattr(fact, name)) for name in FACT_FIELDS}
    return {"id": fact.pk, **data, "supersedes": fact.supersedes_id}


def pending_snapshot(item: PendingItem) -> dict[str, Any]:
    return {
        "id": item.pk,
        "status": item.status,
        "cooldown_until": _json_value(item.cooldown_until),
        "resulting_fact": item.resulting_fact_id,
        "confidence": item.confidence,
    }


def _diff(before: dict | None, after: dict) -> tuple[dict | None, dict]:
    if before is None:
        return None, {"status": after["status"]}
    keys = [k for k in after if k not in ("id", "supersedes") and before.get(k) != after[k]]
    return {k: before.get(k) for k in keys}, {k: after[k] for k in keys}


class Work:
    """Collects what one operation changed, then writes its single event."""

    def __init__(self, owner: Owner, actor: str, *, job_run: str = "", batch: str = ""):
        self.owner, self.actor, self.job_run, self.batch = owner, actor, job_run, batch
        self.changes: list[dict] = []
        self.fact_ids: set[int] = set()
        self.request = ""  # the fingerprint of what an operation id was first used for

    def fact(self, fact: Fact, before: dict | None) -> None:
        """Record a saved fact against its snapshot from before the change (None = new)."""
        old, new = _diff(before, snapshot(fact))
        if before is None or new:
            self.changes.append({"kind": "fact", "id": fact.pk, "before": old, "after": new})
            self.fact_ids.add(fact.pk)

    def pending(self, item: PendingItem, before: dict | None) -> None:
        old, new = _diff(before, pending_snapshot(item))
        if before is None or new:
            self.changes.append({"kind": "pending", "id": item.pk, "before": old, "after": new})

    def record(self, kind: str, pk: int, before: dict, after: dict) -> None:
        """An episode or attachment whose editable fields changed (`after` from after the save)."""
        old, new = _diff(before, after)
        if new:
            self.changes.append({"kind": kind, "id": pk, "before": old, "after": new})

    def event(self, event_type: str, *, operation_id=None, fact=None, pending=None, **payload):
        event = MemoryEvent.objects.create(
            owner=self.owner,
            event_type=event_type,
            operation_id=operation_id or None,
            actor=self.actor,
            fact=fact,
            pending=pending,
            job_run=self.job_run,
            batch=self.batch,
            reverts=payload.pop("reverts", None),
            payload={**payload, "changes": self.changes, **self._request(operation_id)},
        )
        for fact_id in self.fact_ids:
            indexing.schedule("fact", fact_id)
        return event

    def _request(self, operation_id) -> dict:
        return {"request": self.request} if operation_id and self.request else {}


def record_edit(
    obj,
    kind: str,
    event_type: str,
    before: dict,
    after: dict,
    changed: dict,
    *,
    quote: tuple[str, str],
    actor: str,
) -> MemoryEvent:
    """The event of a person's edit of an episode or attachment, already saved: its field
    changes (what undo reads, like any edit) and `quote`, the (before, after) text the
    activity log shows as the event's "content"."""
    work = Work(obj.owner, actor)
    work.record(kind, obj.pk, before, after)
    return work.event(
        event_type,
        **{kind: obj.pk},
        before={"content": quote[0], **work.changes[0]["before"]},
        after={"content": quote[1], **changed},
    )


def new_batch(prefix: str = "bulk") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# --------------------------------------------------------------------------------------
# Validation and normalisation
# --------------------------------------------------------------------------------------


@dataclass
class Clean:
    """A validated, normalised candidate."""

    content: str
    subject: str
    predicate: str
    type: str
    scope: str
    confidence: float
    importance: float
    priority: str | None
    duration: str | None
    tags: list[str]
    source: str
    source_turn: ConversationTurn | None
    verified: bool
    delete_fact: Fact | None
    why: str = ""

    @property
    def key(self) -> str:
        return content_key(self.content)

    def retention(self, start: datetime | None = None) -> tuple[str, datetime | None]:
        """(priority, expires_at) as of `start`; computed when written, not when proposed."""
        start = start or timezone.now()
        duration = self.duration
        if self.priority is None and duration is None:
            duration = DEFAULT_RETENTION.get(self.type)
            if duration is None:
                return Priority.LONG_TERM, expiry_for(Priority.LONG_TERM, start)
        if duration is not None:
            priority, span = DURATIONS[duration]
            return self.priority or priority, None if span is None else start + span
        return self.priority, expiry_for(self.priority, start)

    def as_json(self) -> dict[str, Any]:
        """The candidate as a PendingItem stores it (confirm rebuilds it from this)."""
        return {
            "content": self.content,
            "content_key": self.key,
            "subject": self.subject,
            "predicate": self.predicate,
            "type": self.type,
            "scope": self.scope,
            "confidence": self.confidence,
            "importance": self.importance,
            "priority": self.priority,
            "duration": self.duration,
            "tags": self.tags,
            "source": self.source,
            "source_turn_id": self.source_turn.pk if self.source_turn else None,
            "verified": self.verified,
        }


def _field_label(name: str, capital: bool = False) -> str:
    """The field's translated name ("置信度", not "confidence"); the code stays in `field`."""
    try:
        label = str(Fact._meta.get_field(name).verbose_name)
    except FieldDoesNotExist:
        label = name
    return label[:1].upper() + label[1:] if capital else label


def _choice(value: Any, choices, name: str) -> str:
    if value not in choices.values:
        allowed = ", ".join(choices.values)
        raise InvalidCandidate(
            _("Unknown %(field)s “%(value)s”; use one of: %(allowed)s.")
            % {"field": _field_label(name), "value": value, "allowed": allowed},
            code=f"invalid_{name}",
            field=name,
        )
    return value


def _unit(value: Any, name: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or math.isnan(value) or not 0 <= value <= 1:
        raise InvalidCandidate(
            _("%(field)s must be a number between 0 and 1.") % {"field": _field_label(name, True)},
            code=f"invalid_{name}",
            field=name,
        )
    return float(value)


def _label(value: Any, name: str) -> str:
    text = normalise_label(str(value or ""))
    if len(text) > MAX_LABEL:
        raise InvalidCandidate(
            _("%(field)s is too long (at most %(max)d characters).")
            % {"field": _field_label(name, True), "max": MAX_LABEL},
            code=f"{name}_too_long",
            field=name,
        )
    return text


def clean_content(value: Any) -> str:
    text = normalise_text(str(value or ""))
    if not text:
        raise InvalidCandidate(
            _("The memory is empty: write what should be remembered."),
            code="empty_content",
            field="content",
        )
    if len(text) > MAX_CONTENT:
        raise InvalidCandidate(
            _("The memory is too long: %(n)d characters, at most %(max)d.")
            % {"n": len(text), "max": MAX_CONTENT},
            code="content_too_long",
            field="content",
        )
    return text


def clean_tags(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, list | tuple):
        message = _("Tags must be a list of words.")
        raise InvalidCandidate(message, code="invalid_tags", field="tags")
    tags = list(dict.fromkeys(t for t in (normalise_label(str(v)) for v in value) if t))
    if len(tags) > MAX_TAGS or any(len(t) > MAX_TAG for t in tags):
        raise InvalidCandidate(
            _("At most %(n)d tags of at most %(max)d characters each.")
            % {"n": MAX_TAGS, "max": MAX_TAG},
            code="invalid_tags",
            field="tags",
        )
    return tags


def _retention_choice(priority: Any, duration: Any) -> tuple[str | None, str | None]:
    if priority not in (None, ""):
        _choice(priority, Priority, "priority")
    if duration not in (None, "") and duration not in DURATIONS:
        raise InvalidCandidate(
            _("Unknown duration “%(value)s”; use one of: %(allowed)s.")
            % {"value": duration, "allowed": ", ".join(DURATIONS)},
            code="invalid_duration",
            field="duration",
        )
    return priority or None, duration or None


def _turn(turn_id: Any, owner: Owner) -> ConversationTurn | None:
    if turn_id in (None, ""):
        return None
    turn = ConversationTurn.objects.filter(pk=turn_id, session__owner=owner).first()
    if turn is None:
        raise InvalidCandidate(
            _("Conversation turn %(id)s does not exist.") % {"id": turn_id},
            code="unknown_turn",
            field="source_turn_id",
        )
    return turn


def _deletion_target(fact_id: Any, owner: Owner) -> Fact | None:
    if fact_id in (None, ""):
        return None
    fact = Fact.objects.filter(pk=fact_id, owner=owner).first()
    if fact is None or fact.status != FactStatus.ACTIVE:
        raise InvalidCandidate(
            _("Fact %(id)s does not exist or is no longer active.") % {"id": fact_id},
            code="unknown_fact",
            field="delete_fact_id",
        )
    return fact


def clean_candidate(candidate: Candidate, owner: Owner) -> Clean:
    """Normalise and validate, or raise InvalidCandidate before anything is written."""
    target = _deletion_target(candidate.delete_fact_id, owner)
    why = ""
    if target is not None:
        # A deletion is about the target; the agent's own text (if any) is its reason.
        why = normalise_text(str(candidate.content or ""))[:MAX_CONTENT]
        content = target.content
    else:
        content = clean_content(candidate.content)
    priority, duration = _retention_choice(candidate.priority, candidate.duration)
    return Clean(
        content=content,
        subject=_label(candidate.subject, "subject"),
        predicate=_label(candidate.predicate, "predicate"),
        type=_choice(candidate.type, FactType, "type"),
        scope=_choice(candidate.scope, Scope, "scope"),
        confidence=_unit(candidate.confidence, "confidence"),
        importance=_unit(candidate.importance, "importance"),
        priority=priority,
        duration=duration,
        tags=clean_tags(candidate.tags),
        source=_choice(candidate.source, Source, "source"),
        source_turn=_turn(candidate.source_turn_id, owner),
        verified=bool(candidate.verified),
        delete_fact=target,
        why=why if why != normalise_text(content) else "",
    )


def _check_actor(actor: str) -> None:
    if actor not in Actor.values:
        raise InvalidCandidate(
            _("Unknown actor “%(value)s”.") % {"value": actor}, code="invalid_actor", field="actor"
        )


# --------------------------------------------------------------------------------------
# propose
# --------------------------------------------------------------------------------------


def propose(
    candidate: Candidate,
    *,
    actor: str,
    owner: Owner | None = None,
    operation_id: str | None = None,
    job_run: str = "",
    batch: str = "",
    same_request: bool = False,
) -> Result:
    """Route one candidate memory; safe inside an outer transaction.atomic().

    A seen operation_id replays its first outcome. With `same_request` (the API), it must
    also come with the same candidate, else OperationConflict; jobs leave it off, because a
    re-run may word a candidate differently and must still write it only once."""
    request = request_fingerprint(candidate) if operation_id else ""
    check = request if same_request else ""
    if operation_id and (done := replay(operation_id, check)):
        return done
    _check_actor(actor)
    owner = owner or Owner.default()
    clean = clean_candidate(candidate, owner)
    work = Work(owner, actor, job_run=job_run, batch=batch)
    work.request = request
    try:
        with transaction.atomic():
            # Checked again under the write lock: a concurrent twin may have committed.
            if operation_id and (done := replay(operation_id, check)):
                return done
            return _route(clean, work, operation_id)
    except IntegrityError:
        if operation_id and (done := replay(operation_id, check)):
            return done
        raise


def request_fingerprint(candidate: Candidate) -> str:
    """A short hash of everything the caller asked for (every field of the candidate)."""
    data = json.dumps(asdict(candidate), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:32]


def replay(operation_id: str, request: str = "") -> Result | None:
    """The first outcome of an operation id, or None if it was never seen. Given the
    request's fingerprint, a different recorded one raises OperationConflict (events from
    before fingerprints were kept cannot tell, and replay)."""
    event = (
        MemoryEvent.objects.filter(operation_id=operation_id)
        .select_related("fact", "pending")
        .first()
    )
    if event is None:
        return None
    if request and event.payload.get("request", request) != request:
        raise OperationConflict(operation_id)
    outcome = event.payload.get("outcome", WRITTEN)
    fact = event.fact if outcome in (WRITTEN, BOOSTED, SUPERSEDED, DELETED) else None
    return Result(outcome, fact, event.pending, event, replayed=True)


def _route(clean: Clean, work: Work, operation_id: str | None) -> Result:
    owner = work.owner
    if clean.delete_fact is not None:
        return _suggest_deletion(clean, work, operation_id)
    if work.actor != Actor.PERSON and (rejected := rejected_before(clean, owner)):
        return _drop(clean, work, operation_id, "rejected_before", rejected=rejected)
    if clean.confidence < settings.CONFIDENCE_PENDING:
        return _drop(clean, work, operation_id, "low_confidence")
    if (same := _duplicate(clean, owner)) is not None:
        return _boost(same, clean, work, operation_id)
    if work.actor != Actor.PERSON and (waiting := _waiting(clean, owner)) is not None:
        return _repeat_pending(waiting, clean, work, operation_id)
    holder = current_holder(owner, clean.subject, clean.predicate, exclude_key=clean.key)
    if clean.confidence < settings.CONFIDENCE_WRITE:
        reason = PendingReason.CONFLICT if holder else PendingReason.LOW_CONFIDENCE
        return _queue(clean, work, operation_id, reason, holder)
    if holder is not None and holder.verified and work.actor != Actor.PERSON:
        return _queue(clean, work, operation_id, PendingReason.CONFLICT, holder)
    return _write(clean, work, operation_id, holder)


def current_holder(owner, subject: str, predicate: str, *, exclude_key: str = "", exclude=()):
    """The active fact holding this subject + predicate (only when both are given)."""
    if not (subject and predicate):
        return None
    found = Fact.objects.active().filter(owner=owner, subject=subject, predicate=predicate)
    if exclude_key:
        found = found.exclude(content_key=exclude_key)
    return found.exclude(pk__in=list(exclude)).order_by("-updated_at", "-pk").first()


def _duplicate(clean: Clean, owner: Owner) -> Fact | None:
    return (
        Fact.objects.active()
        .filter(owner=owner, subject=clean.subject, predicate=clean.predicate)
        .filter(content_key=clean.key)
        .order_by("-updated_at")
        .first()
    )


def _waiting(clean: Clean, owner: Owner) -> PendingItem | None:
    return (
        PendingItem.objects.filter(owner=owner, status__in=OPEN)
        .exclude(reason=PendingReason.DELETION)
        .filter(
            candidate__content_key=clean.key,
            candidate__subject=clean.subject,
            candidate__predicate=clean.predicate,
        )
        .first()
    )


def rejected_before(clean: Clean, owner: Owner) -> dict | None:
    """What the person rejected that matches this candidate (same text and subject)."""
    item = (
        PendingItem.objects.filter(owner=owner, status=PendingStatus.REJECTED)
        .exclude(reason=PendingReason.DELETION)
        .filter(candidate__content_key=clean.key, candidate__subject=clean.subject)
        .first()
    )
    if item is not None:
        return {"pending": item.pk}
    fact = Fact.objects.filter(
        owner=owner, status=FactStatus.REJECTED, content_key=clean.key, subject=clean.subject
    ).first()
    return {"fact": fact.pk} if fact is not None else None


def _drop(clean, work, operation_id, reason: str, **extra) -> Result:
    threshold = settings.CONFIDENCE_PENDING if reason == "low_confidence" else None
    event = work.event(
        EventType.DROP,
        operation_id=operation_id,
        fact=clean.delete_fact,
        outcome=DROPPED,
        reason=reason,
        candidate=_candidate_json(clean),
        confidence=clean.confidence,
        threshold=threshold,
        **extra,
    )
    return Result(DROPPED, None, None, event)


def _candidate_json(clean: Clean) -> dict[str, Any]:
    data = clean.as_json()
    if clean.delete_fact is not None:
        data.update(operation="DELETE", fact_id=clean.delete_fact.pk, why=clean.why)
    return data


def _boost(fact: Fact, clean: Clean, work: Work, operation_id) -> Result:
    before = snapshot(fact)
    fact.hit_count += 1
    raised = fact.confidence + (1 - fact.confidence) * BOOST_STEP * clean.confidence
    fact.confidence = max(fact.confidence, min(CONFIDENCE_CAP, raised))
    fact.tags = list(dict.fromkeys([*fact.tags, *clean.tags]))
    if clean.verified and work.actor == Actor.PERSON:
        fact.verified = True
    fact.save()
    work.fact(fact, before)
    event = work.event(
        EventType.BOOST,
        operation_id=operation_id,
        fact=fact,
        outcome=BOOSTED,
        before=before,
        after=snapshot(fact),
        candidate=_candidate_json(clean),
        confidence=clean.confidence,
    )
    return Result(BOOSTED, fact, None, event)


def _repeat_pending(item: PendingItem, clean: Clean, work: Work, operation_id) -> Result:
    """The same candidate again: keep one item, remember the higher confidence."""
    before = pending_snapshot(item)
    item.confidence = max(item.confidence, clean.confidence)
    item.save()
    work.pending(item, before)
    event = work.event(
        EventType.PENDING,
        operation_id=operation_id,
        fact=item.conflicts_with,
        pending=item,
        outcome=PENDING,
        repeat=True,
        candidate=_candidate_json(clean),
        confidence=clean.confidence,
        reason=item.reason,
    )
    return Result(PENDING, None, item, event)


def _queue(clean, work, operation_id, reason: str, holder: Fact | None) -> Result:
    candidate = _candidate_json(clean)
    if holder is not None and reason == PendingReason.CONFLICT:
        candidate["replaces"] = {"id": holder.pk, "content": holder.content}
    item = PendingItem.objects.create(
        owner=work.owner,
        candidate=candidate,
        confidence=clean.confidence,
        reason=reason,
        conflicts_with=holder,
        source_turn=clean.source_turn,
    )
    work.pending(item, None)
    payload = {"candidate": candidate, "confidence": clean.confidence, "reason": reason}
    if holder is not None:
        payload["conflicts_with"] = snapshot(holder)
        payload["verified_holder"] = holder.verified
    event = work.event(
        EventType.PENDING,
        operation_id=operation_id,
        fact=holder,
        pending=item,
        outcome=PENDING,
        threshold=settings.CONFIDENCE_WRITE,
        **payload,
    )
    return Result(PENDING, None, item, event)


def _new_fact(clean: Clean, owner: Owner, *, verified: bool, confidence: float) -> Fact:
    priority, expires_at = clean.retention()
    return Fact(
        owner=owner,
        scope=clean.scope,
        type=clean.type,
        subject=clean.subject,
        predicate=clean.predicate,
        content=clean.content,
        confidence=confidence,
        importance=clean.importance,
        priority=priority,
        expires_at=expires_at,
        verified=verified,
        source=clean.source,
        source_turn=clean.source_turn,
        tags=clean.tags,
    )


def _put(clean: Clean, work: Work, holder: Fact | None, *, verified, confidence) -> Fact:
    """Create the fact; a holder of the same subject + predicate becomes its past version."""
    fact = _new_fact(clean, work.owner, verified=verified, confidence=confidence)
    if holder is not None:
        before = snapshot(holder)
        holder.status = FactStatus.SUPERSEDED
        holder.save()
        work.fact(holder, before)
        fact.supersedes = holder
    fact.save()
    work.fact(fact, None)
    return fact


def _write(clean: Clean, work: Work, operation_id, holder: Fact | None) -> Result:
    previous = snapshot(holder) if holder is not None else None
    fact = _put(clean, work, holder, verified=clean.verified, confidence=clean.confidence)
    outcome = SUPERSEDED if holder is not None else WRITTEN
    event = work.event(
        EventType.SUPERSEDE if holder is not None else EventType.WRITE,
        operation_id=operation_id,
        fact=fact,
        outcome=outcome,
        before=previous,
        after=snapshot(fact),
        confidence=clean.confidence,
        threshold=settings.CONFIDENCE_WRITE,
    )
    return Result(outcome, fact, None, event)


def _suggest_deletion(clean: Clean, work: Work, operation_id) -> Result:
    target = clean.delete_fact
    mine = PendingItem.objects.filter(
        owner=work.owner, reason=PendingReason.DELETION, candidate__fact_id=target.pk
    )
    if work.actor != Actor.PERSON and (
        old := mine.filter(status=PendingStatus.REJECTED, candidate__content_key=clean.key).first()
    ):
        return _drop(clean, work, operation_id, "rejected_before", rejected={"pending": old.pk})
    if clean.confidence < settings.CONFIDENCE_PENDING:
        return _drop(clean, work, operation_id, "low_confidence")
    if (waiting := mine.filter(status__in=OPEN).first()) is not None:
        return _repeat_pending(waiting, clean, work, operation_id)
    return _queue(clean, work, operation_id, PendingReason.DELETION, target)


# --------------------------------------------------------------------------------------
# Pending actions
# --------------------------------------------------------------------------------------


def due_pending(owner: Owner | None = None, now: datetime | None = None):
    """Items waiting for the person now: pending, or snoozed with the cooldown passed."""
    from django.db.models import Q

    now = now or timezone.now()
    owner = owner or Owner.default()
    return PendingItem.objects.filter(owner=owner).filter(
        Q(status=PendingStatus.PENDING)
        | Q(status=PendingStatus.SNOOZED, cooldown_until__lte=now)
        | Q(status=PendingStatus.SNOOZED, cooldown_until__isnull=True)
    )


def moot_reason(item: PendingItem) -> str | None:
    """Why applying this item would no longer do what the person saw, or None."""
    candidate = item.candidate or {}
    target = (
        Fact.objects.filter(pk=item.conflicts_with_id).first() if item.conflicts_with_id else None
    )
    about = candidate.get("replaces") or {}
    if item.reason in (PendingReason.CONFLICT, PendingReason.DELETION):
        if target is None:
            return _("The fact this item is about was permanently deleted.")
        if target.status != FactStatus.ACTIVE:
            return _("Fact #%(id)s is no longer active (%(status)s) since this was suggested.") % {
                "id": target.pk,
                "status": target.get_status_display(),
            }
        seen = about.get("content") if about else candidate.get("content")
        if item.reason == PendingReason.CONFLICT and not about:
            seen = None  # older items did not record the text they saw
        if seen is not None and content_key(seen) != target.content_key:
            return _("Fact #%(id)s was edited since this was suggested.") % {"id": target.pk}
    if item.reason != PendingReason.DELETION:
        other = current_holder(
            item.owner,
            candidate.get("subject", ""),
            candidate.get("predicate", ""),
            exclude_key=content_key(candidate.get("content", "")),
            exclude=[target.pk] if target else [],
        )
        if other is not None:
            return _("Fact #%(id)s now holds this subject and predicate.") % {"id": other.pk}
    return None


def _open_item(item_id: int) -> PendingItem:
    item = PendingItem.objects.select_related("owner", "conflicts_with").get(pk=item_id)
    if item.status not in OPEN:
        raise AlreadyResolved(
            _("This item was already handled (%(status)s).") % {"status": item.get_status_display()}
        )
    return item


def _candidate_from(data: dict[str, Any]) -> Candidate:
    names = Candidate.__dataclass_fields__
    values = {k: v for k, v in data.items() if k in names and k != "delete_fact_id"}
    values.setdefault("content", "")
    if values.get("source") not in Source.values:
        values["source"] = Source.API  # older items may carry an origin we no longer know
    return Candidate(**values)


def confirm_pending(
    item_id: int,
    *,
    actor: str = "person",
    edits: dict | None = None,
    force: bool = False,
    batch: str = "",
) -> Result:
    """Write the candidate as a verified fact (or apply the suggested deletion).

    A moot item raises MootPending unless `force` says the person saw the current state.
    """
    _check_actor(actor)
    with transaction.atomic():
        item = _open_item(item_id)
        if not force and (why := moot_reason(item)):
            raise MootPending(why)
        work = Work(item.owner, actor, batch=batch)
        before = pending_snapshot(item)
        if item.reason == PendingReason.DELETION:
            return _confirm_deletion(item, work, before)
        data = {**item.candidate, **(edits or {})}
        clean = clean_candidate(_candidate_from(data), item.owner)
        if item.source_turn_id and not data.get("source_turn_id"):
            clean.source_turn = item.source_turn
        same = _duplicate(clean, item.owner)
        if same is not None:
            fact, outcome = _confirm_into(same, work), BOOSTED
        else:
            holder = current_holder(item.owner, clean.subject, clean.predicate)
            fact = _put(clean, work, holder, verified=True, confidence=1.0)
            outcome = SUPERSEDED if holder is not None else WRITTEN
        item.status, item.resulting_fact, item.cooldown_until = PendingStatus.CONFIRMED, fact, None
        item.save()
        work.pending(item, before)
        event = work.event(
            EventType.CONFIRM,
            fact=fact,
            pending=item,
            outcome=outcome,
            edits=sorted((edits or {}).keys()),
            after=snapshot(fact),
        )
    return Result(outcome, fact, item, event)


def _confirm_into(fact: Fact, work: Work) -> Fact:
    """Confirming something that is already stored verifies it instead of duplicating."""
    before = snapshot(fact)
    fact.verified, fact.confidence = True, 1.0
    fact.hit_count += 1
    fact.save()
    work.fact(fact, before)
    return fact


def _confirm_deletion(item: PendingItem, work: Work, before: dict) -> Result:
    target = item.conflicts_with
    if target is None or target.status != FactStatus.ACTIVE:
        raise MootPending(_("There is nothing left to remove: the fact is no longer active."))
    fact_before = snapshot(target)
    target.status = FactStatus.ARCHIVED
    target.save()
    work.fact(target, fact_before)
    item.status, item.resulting_fact, item.cooldown_until = PendingStatus.CONFIRMED, target, None
    item.save()
    work.pending(item, before)
    event = work.event(
        EventType.CONFIRM,
        fact=target,
        pending=item,
        outcome=DELETED,
        before=fact_before,
        after=snapshot(target),
    )
    return Result(DELETED, target, item, event)


def ignore_pending(item_id: int, *, actor: str = "person", batch: str = "") -> PendingItem:
    """Reject the item; the same candidate will not be proposed to the person again."""
    _check_actor(actor)
    with transaction.atomic():
        item = _open_item(item_id)
        work = Work(item.owner, actor, batch=batch)
        before = pending_snapshot(item)
        item.status, item.cooldown_until = PendingStatus.REJECTED, None
        item.save()
        work.pending(item, before)
        work.event(EventType.REJECT, fact=item.conflicts_with, pending=item, outcome=PENDING)
    return item


def snooze_pending(
    item_id: int, until: datetime, *, actor: str = "person", batch: str = ""
) -> PendingItem:
    """Hide the item until `until`; it comes back to the queue by itself afterwards."""
    _check_actor(actor)
    if timezone.is_naive(until) or until <= timezone.now():
        raise WritePathError(
            _("Choose a time in the future."), code="invalid_snooze", field="until"
        )
    with transaction.atomic():
        item = _open_item(item_id)
        work = Work(item.owner, actor, batch=batch)
        before = pending_snapshot(item)
        item.status, item.cooldown_until = PendingStatus.SNOOZED, until
        item.save()
        work.pending(item, before)
        work.event(
            EventType.SNOOZE,
            fact=item.conflicts_with,
            pending=item,
            outcome=PENDING,
            until=_json_value(until),
        )
    return item


# --------------------------------------------------------------------------------------
# Fact actions
# --------------------------------------------------------------------------------------


def _clean_changes(fact: Fact, changes: dict[str, Any]) -> dict[str, Any]:
    unknown = set(changes) - EDITABLE
    if unknown:
        raise InvalidCandidate(
            _("These fields cannot be edited: %(names)s.") % {"names": ", ".join(sorted(unknown))},
            code="unknown_field",
            field=sorted(unknown)[0],
        )
    cleaners = {
        "content": clean_content,
        "subject": lambda v: _label(v, "subject"),
        "predicate": lambda v: _label(v, "predicate"),
        "type": lambda v: _choice(v, FactType, "type"),
        "scope": lambda v: _choice(v, Scope, "scope"),
        "confidence": lambda v: _unit(v, "confidence"),
        "importance": lambda v: _unit(v, "importance"),
        "priority": lambda v: _choice(v, Priority, "priority"),
        "tags": clean_tags,
        "verified": bool,
        "expires_at": _expiry,
    }
    values = {name: cleaners[name](value) for name, value in changes.items()}
    if "priority" in values and "expires_at" not in values and values["priority"] != fact.priority:
        values["expires_at"] = expiry_for(values["priority"])  # a fresh span from now
    return {k: v for k, v in values.items() if getattr(fact, k) != v}


def _expiry(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    if not isinstance(value, datetime) or timezone.is_naive(value):
        raise InvalidCandidate(
            _("The expiry must be a date and time with a time zone."),
            code="invalid_expires_at",
            field="expires_at",
        )
    return value


def _guard_holder(fact: Fact, subject: str, predicate: str, moving: set[int] = frozenset()):
    """Two active facts must never hold the same subject + predicate."""
    other = current_holder(fact.owner, subject, predicate, exclude=[fact.pk, *moving])
    if other is not None:
        raise ActiveConflict(
            _(
                "Fact #%(id)s already holds this subject and predicate (“%(content)s”); "
                "archive it or change it first."
            )
            % {"id": other.pk, "content": other.content[:80]},
            other,
        )


def edit_fact(
    fact_id: int,
    changes: dict,
    *,
    actor: str,
    expected_updated_at: datetime | None = None,
    batch: str = "",
) -> Fact:
    """Change fields in place (an UPDATE event keeps the old values); stale edits are refused."""
    _check_actor(actor)
    with transaction.atomic():
        fact = Fact.objects.select_related("owner").get(pk=fact_id)
        if expected_updated_at is not None and fact.updated_at != expected_updated_at:
            raise StaleEdit(fact)
        values = _clean_changes(fact, changes)
        if not values:
            return fact
        if actor == Actor.PERSON and values.keys() & {"content", "subject", "predicate"}:
            values.setdefault("verified", True)  # the person wrote it: it is theirs now
        if fact.status == FactStatus.ACTIVE and values.keys() & {"subject", "predicate"}:
            subject = values.get("subject", fact.subject)
            _guard_holder(fact, subject, values.get("predicate", fact.predicate))
        _save_fields(fact, values, EventType.UPDATE, actor, batch=batch, action="edit")
    return fact


def _save_fields(fact: Fact, values: dict, event_type: str, actor: str, **payload) -> MemoryEvent:
    batch = payload.pop("batch", "")
    job_run = payload.pop("job_run", "")
    work = Work(fact.owner, actor, batch=batch, job_run=job_run)
    before = snapshot(fact)
    for name, value in values.items():
        setattr(fact, name, value)
    fact.save()
    work.fact(fact, before)
    return work.event(event_type, fact=fact, before=before, after=snapshot(fact), **payload)


def change_fact(
    fact_id: int,
    values: dict,
    *,
    event_type: str,
    actor: str,
    job_run: str = "",
    batch: str = "",
    **payload,
) -> Fact:
    """For jobs (decay, expiry, merge): set fields with an undoable event of `event_type`.

    No validation beyond the model's: jobs compute these values themselves.
    """
    _check_actor(actor)
    with transaction.atomic():
        fact = Fact.objects.select_related("owner").get(pk=fact_id)
        values = {k: v for k, v in values.items() if getattr(fact, k) != v}
        if values:
            _save_fields(fact, values, event_type, actor, job_run=job_run, batch=batch, **payload)
    return fact


ARCHIVABLE = (FactStatus.ACTIVE, FactStatus.EXPIRED)
RESTORABLE = (FactStatus.ARCHIVED, FactStatus.EXPIRED, FactStatus.REJECTED)


def _set_status(fact_id: int, status: str, event_type: str, actor: str, batch: str, allowed):
    _check_actor(actor)
    with transaction.atomic():
        fact = Fact.objects.select_related("owner").get(pk=fact_id)
        if fact.status == status:
            return fact
        if fact.status not in allowed:
            raise NotAllowed(
                _("Fact #%(id)s is %(status)s; that cannot be changed this way.")
                % {"id": fact.pk, "status": fact.get_status_display()}
            )
        values: dict[str, Any] = {"status": status}
        if status == FactStatus.ACTIVE:
            _guard_holder(fact, fact.subject, fact.predicate)
            if fact.expires_at and fact.expires_at <= timezone.now():
                values["expires_at"] = expiry_for(fact.priority)  # restored: a fresh span
        _save_fields(fact, values, event_type, actor, batch=batch)
    return fact


def archive_fact(fact_id: int, *, actor: str, batch: str = "") -> Fact:
    return _set_status(fact_id, FactStatus.ARCHIVED, EventType.ARCHIVE, actor, batch, ARCHIVABLE)


def delete_fact(fact_id: int, *, actor: str, batch: str = "") -> Fact:
    """Soft delete: archived with a `delete` event (a hard purge is a separate step)."""
    return _set_status(fact_id, FactStatus.ARCHIVED, EventType.DELETE, actor, batch, ARCHIVABLE)


def restore_fact(fact_id: int, *, actor: str, batch: str = "") -> Fact:
    return _set_status(fact_id, FactStatus.ACTIVE, EventType.UPDATE, actor, batch, RESTORABLE)


def pin_fact(fact_id: int, *, actor: str, batch: str = "") -> Fact:
    """Keep forever: permanent retention, no expiry."""
    _check_actor(actor)
    with transaction.atomic():
        fact = Fact.objects.select_related("owner").get(pk=fact_id)
        values = {"priority": Priority.PERMANENT, "expires_at": None}
        values = {k: v for k, v in values.items() if getattr(fact, k) != v}
        if values:
            _save_fields(fact, values, EventType.UPDATE, actor, batch=batch, action="pin")
    return fact


def revert_to(fact_id: int, *, actor: str = "person") -> Result:
    """Make an older version of a chain current again, as a new version (history stays)."""
    _check_actor(actor)
    with transaction.atomic():
        old = Fact.objects.select_related("owner").get(pk=fact_id)
        head = old.chain()[-1]
        if head.pk == old.pk or head.status != FactStatus.ACTIVE:
            raise NotAllowed(_("Only an older version of an active fact can be brought back."))
        clean = clean_candidate(
            Candidate(
                content=old.content,
                subject=head.subject,
                predicate=head.predicate,
                type=old.type,
                scope=old.scope,
                confidence=1.0,
                importance=old.importance,
                priority=old.priority,
                tags=old.tags,
                source=Source.MANUAL,
            ),
            old.owner,
        )
        work = Work(old.owner, actor)
        fact = _put(clean, work, head, verified=True, confidence=1.0)
        event = work.event(
            EventType.SUPERSEDE,
            fact=fact,
            outcome=SUPERSEDED,
            before=snapshot(head),
            after=snapshot(fact),
            reverted_to=old.pk,
        )
    return Result(SUPERSEDED, fact, None, event)


BULK_ACTIONS = ("archive", "scope", "priority", "restore", "pin")


def bulk_facts(fact_ids, action: str, value: str = "", *, actor: str = "person") -> tuple[str, int]:
    """One bulk action in one transaction under one batch id (undo takes it back whole)."""
    if action not in BULK_ACTIONS:
        raise NotAllowed(_("Unknown bulk action."), code="invalid_action")
    batch = new_batch()
    changed = 0
    with transaction.atomic():
        for fact in Fact.objects.filter(pk__in=list(fact_ids)).order_by("pk"):
            before = fact.updated_at
            fact = _bulk_one(fact, action, value, actor, batch)
            changed += int(fact.updated_at != before)
    return batch, changed


def _bulk_one(fact: Fact, action: str, value: str, actor: str, batch: str) -> Fact:
    if action == "archive":
        if fact.status not in ARCHIVABLE:
            return fact  # superseded or rejected rows in a selection are left as they are
        return archive_fact(fact.pk, actor=actor, batch=batch)
    if action == "restore":
        if fact.status not in RESTORABLE:
            return fact
        return restore_fact(fact.pk, actor=actor, batch=batch)
    if action == "pin":
        return pin_fact(fact.pk, actor=actor, batch=batch)
    return edit_fact(fact.pk, {action: value}, actor=actor, batch=batch)


def purge_fact(fact_id: int, *, actor: str = "person") -> MemoryEvent:
    """Remove a deleted fact for good, including its text in the log (not undoable).

    Only for facts that are no longer active: a person deletes first, then purges from the
    activity log after a confirmation. The chain stays connected around the gap.
    """
    _check_actor(actor)
    with transaction.atomic():
        fact = Fact.objects.select_related("owner").get(pk=fact_id)
        if fact.status == FactStatus.ACTIVE:
            raise NotAllowed(_("Delete or archive the fact before purging it."))
        previous = fact.supersedes
        following = Fact.objects.filter(supersedes=fact).first()
        _scrub_events(fact)
        Fact.objects.filter(pk=fact.pk).update(supersedes=None)
        fact.delete()
        if following is not None and previous is not None:
            Fact.objects.filter(pk=following.pk).update(supersedes=previous)
        indexing.schedule("fact", fact_id)
        return MemoryEvent.objects.create(
            owner=fact.owner,
            event_type=EventType.PURGE,
            actor=actor,
            payload={"fact_id": fact_id, "purged": True},
        )


def _scrub(value: Any, fact_id: int) -> Any:
    """Blank the purged fact's text wherever a payload quotes it."""
    if isinstance(value, list):
        return [_scrub(v, fact_id) for v in value]
    if not isinstance(value, dict):
        return value
    data = {k: _scrub(v, fact_id) for k, v in value.items()}
    if data.get("id") == fact_id and "content" in data:
        data["content"] = None
    if data.get("kind") == "fact" and data.get("id") == fact_id:
        for side in ("before", "after"):
            if isinstance(data.get(side), dict) and "content" in data[side]:
                data[side]["content"] = None
    return data


def _scrub_events(fact: Fact) -> None:
    from django.db.models import Q

    related = Q(fact=fact) | Q(pending__conflicts_with=fact) | Q(fact__supersedes=fact)
    for event in MemoryEvent.objects.filter(owner=fact.owner).filter(related):
        event.payload = _scrub(event.payload, fact.pk)
        candidate = event.payload.get("candidate")
        if isinstance(candidate, dict) and content_key(candidate.get("content") or "") == (
            fact.content_key
        ):
            candidate["content"] = None
        event.save(update_fields=["payload"])
    for item in PendingItem.objects.filter(conflicts_with=fact):
        if item.reason == PendingReason.DELETION:
            item.candidate["content"] = None
        if "replaces" in item.candidate:
            item.candidate["replaces"]["content"] = None
        item.save(update_fields=["candidate"])
