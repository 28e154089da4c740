"""Routing a proposed candidate: written, boosted, superseded, queued or dropped."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction

from curator import thresholds
from curator.guard import log as guard_log
from curator.guard import rules as guard
from curator.models import (
    CANDIDATE_KEY_SQL,
    Actor,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    Owner,
    PendingItem,
    PendingReason,
    PendingStatus,
)
from curator.writepath.clean import (
    Clean,
    check_actor,
    clean_candidate,
)
from curator.writepath.core import (
    BLOCKED,
    BOOST_STEP,
    BOOSTED,
    CONFIDENCE_CAP,
    DELETED,
    DROPPED,
    OPEN,
    PENDING,
    SUPERSEDED,
    WRITTEN,
    Candidate,
    OperationConflict,
    Result,
    Work,
    pending_snapshot,
    snapshot,
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
    agent_id: int | None = None,
    scopes: Collection[str] | None = None,
) -> Result:
    """Route one candidate memory; safe inside an outer transaction.atomic().

    A seen operation_id replays its first outcome. With `same_request` (the API), it must
    also come with the same candidate, else OperationConflict; jobs leave it off, because a
    re-run may word a candidate differently and must still write it only once.
    `agent_id`: the agent asking (recorded on the event, the fact or the pending item;
    guardrails may be limited to some agents).
    `scopes`: the scopes the candidate's agent may write (None: any); a candidate outside
    them is dropped, with an event saying so (the API refuses such a request before this).
    """
    request = request_fingerprint(candidate) if operation_id else ""
    check = request if same_request else ""
    if operation_id and (done := replay(operation_id, check)):
        return done
    # Inside the caller's transaction (extraction's, a bulk confirm's) the write lock is
    # already held (BEGIN IMMEDIATE): no twin can commit between that check and the write.
    locked = connection.in_atomic_block
    check_actor(actor)
    owner = owner or Owner.default()
    clean = clean_candidate(candidate, owner, actor)
    # The asking agent is the source per-source thresholds know an API write by.
    clean.token_id = clean.token_id or agent_id
    work = Work(owner, actor, job_run=job_run, batch=batch, agent_id=agent_id)
    work.request = request
    try:
        with transaction.atomic():
            # Checked again under the write lock: a concurrent twin may have committed.
            if operation_id and not locked and (done := replay(operation_id, check)):
                return done
            if scopes is not None and _scope_of(clean) not in scopes:
                return _drop(clean, work, operation_id, "scope_not_allowed")
            return _route(clean, work, operation_id, agent_id)
    except IntegrityError:
        if operation_id and (done := replay(operation_id, check)):
            return done
        raise


def _scope_of(clean: Clean) -> str:
    """The scope a candidate writes: a suggested deletion's is its target's."""
    return clean.delete_fact.scope if clean.delete_fact is not None else clean.scope


def request_fingerprint(candidate: Candidate) -> str:
    """A short hash of everything the caller asked for (every field of the candidate but the
    token: a retry through another token of the same agent is still the same request)."""
    fields = {k: v for k, v in asdict(candidate).items() if k != "token_id"}
    data = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:32]


def replay(operation_id: str, request: str = "") -> Result | None:
    """The first outcome of an operation id, or None if it was never seen. Given the
    request's fingerprint, a different recorded one raises OperationConflict (events from
    before fingerprints were kept cannot tell, and replay)."""
    # unique and indexed, asked for every memory: raw (no compiling), no joins (the fact and
    # the item load only on a replay)
    event = next(iter(MemoryEvent.objects.raw(_BY_OPERATION, [operation_id])), None)
    if event is None:
        return None
    if request and event.payload.get("request", request) != request:
        raise OperationConflict(operation_id)
    outcome = event.payload.get("outcome", WRITTEN)
    fact = event.fact if outcome in (WRITTEN, BOOSTED, SUPERSEDED, DELETED) else None
    return Result(outcome, fact, event.pending, event, replayed=True)


_BY_OPERATION = f"SELECT * FROM {MemoryEvent._meta.db_table} WHERE operation_id = %s"


def _route(clean: Clean, work: Work, operation_id: str | None, agent: int | None) -> Result:
    owner = work.owner
    # This source's thresholds: the Calibration page's, else the environment's defaults.
    limits = thresholds.for_source(clean.origin)
    if clean.delete_fact is not None:
        return _suggest_deletion(clean, work, operation_id, limits)
    by_person = work.actor == Actor.PERSON
    # the person's own words are theirs to keep: only blocking rules hold for them
    hit = guard_check(clean, owner, agent, masked_ok=by_person, review=not by_person)
    if hit is not None and not hit.review:
        return _block(clean, work, operation_id, hit)
    known = Known.read(clean, owner, items=not by_person)
    if not by_person and known.rejected:
        return _drop(clean, work, operation_id, "rejected_before", rejected=known.rejected)
    if clean.confidence < limits.pending:
        return _drop(clean, work, operation_id, "low_confidence", threshold=limits.pending)
    if known.duplicate is not None:
        return _boost(known.duplicate, clean, work, operation_id)
    if not by_person and known.waiting is not None:
        return _repeat_pending(known.waiting, clean, work, operation_id)
    holder = known.holder
    if hit is not None:  # personal data (or a rule the person set to review): they decide
        return _queue(clean, work, operation_id, PendingReason.PERSONAL, holder, limits.write, hit)
    if clean.confidence < limits.write:
        reason = PendingReason.CONFLICT if holder else PendingReason.LOW_CONFIDENCE
        return _queue(clean, work, operation_id, reason, holder, limits.write)
    if holder is not None and holder.verified and work.actor != Actor.PERSON:
        return _queue(clean, work, operation_id, PendingReason.CONFLICT, holder, limits.write)
    return _write(clean, work, operation_id, holder, limits.write)


@dataclass
class Known:
    """What the database holds that routes a candidate, read in two keyed statements (one of
    facts, one of review items) instead of one per question: the same answers as
    duplicate_of, current_holder, rejected_before and the waiting-item lookup, chosen in
    Python. Raw SQL: compiling the ORM's queries cost more than running them, and the JSON
    lookups must spell the candidate's key as its index does (PendingItem.Meta)."""

    duplicate: Fact | None = None  # duplicate_of
    holder: Fact | None = None  # current_holder(..., exclude_key=the candidate's key)
    rejected: dict | None = None  # rejected_before
    waiting: PendingItem | None = None  # the same candidate waiting for review

    @classmethod
    def read(cls, clean: Clean, owner: Owner, *, items: bool = True) -> Known:
        """`items`: also the review items (rejected, waiting); the person's own writes never
        look at them."""
        key, subject, predicate = clean.key, clean.subject, clean.predicate
        sql, params = _SAME_WORDS, [owner.pk, key, subject, FactStatus.ACTIVE, FactStatus.REJECTED]
        if subject and predicate:
            sql += _SAME_SLOT
            params += [owner.pk, subject, predicate, FactStatus.ACTIVE, key]
        facts = list(Fact.objects.raw(sql, params))
        known = cls()
        active = [f for f in facts if f.status == FactStatus.ACTIVE and f.predicate == predicate]
        if dups := [f for f in active if f.content_key == key]:
            known.duplicate = max(dups, key=lambda f: f.updated_at)
        if others := [f for f in active if f.content_key != key]:
            known.holder = max(others, key=lambda f: (f.updated_at, f.pk))
        if items:
            known._read_items(clean, owner)
        if known.rejected is None:
            gone = [f.pk for f in facts if f.status == FactStatus.REJECTED]
            known.rejected = {"fact": min(gone)} if gone else None
        return known

    def _read_items(self, clean: Clean, owner: Owner) -> None:
        params = [clean.key, owner.pk, clean.subject, PendingStatus.REJECTED, *OPEN]
        found = list(PendingItem.objects.raw(_SAME_ITEMS, [*params, PendingReason.DELETION]))
        rejected = [i for i in found if i.status == PendingStatus.REJECTED]
        if rejected:
            self.rejected = {"pending": rejected[0].pk}
        waiting = (
            i
            for i in found
            if i.status in OPEN and (i.candidate or {}).get("predicate") == clean.predicate
        )
        self.waiting = next(waiting, None)


_FACTS = Fact._meta.db_table
# The same words (active: a duplicate; rejected: asked before), through fact_same_words ...
_SAME_WORDS = (
    f"SELECT * FROM {_FACTS} WHERE owner_id = %s AND content_key = %s AND subject = %s "
    "AND status IN (%s, %s)"
)
# ... and the newest other active fact of the subject + predicate (the holder a new value
# replaces, as current_holder picks it). `+status`: else SQLite walks fact_newest_first in
# time order through every active fact of the owner, looking for one of this slot.
_SAME_SLOT = (
    f" UNION ALL SELECT * FROM (SELECT * FROM {_FACTS} WHERE owner_id = %s AND subject = %s "
    "AND predicate = %s AND +status = %s AND content_key != %s ORDER BY updated_at DESC, id DESC "
    "LIMIT 1)"
)
# Items with the same words and subject, ignored or waiting; newest first (the model's order).
_SAME_ITEMS = (
    f"SELECT * FROM {PendingItem._meta.db_table} WHERE {CANDIDATE_KEY_SQL} = %s "
    "AND owner_id = %s AND json_extract(candidate, '$.subject') = %s "
    "AND status IN (%s, %s, %s) AND reason != %s ORDER BY created_at DESC"
)


def current_holder(owner, subject: str, predicate: str, *, exclude_key: str = "", exclude=()):
    """The active fact holding this subject + predicate (only when both are given)."""
    if not (subject and predicate):
        return None
    found = Fact.objects.active().filter(owner=owner, subject=subject, predicate=predicate)
    if exclude_key:
        found = found.exclude(content_key=exclude_key)
    return found.exclude(pk__in=list(exclude)).order_by("-updated_at", "-pk").first()


def duplicate_of(clean: Clean, owner: Owner) -> Fact | None:
    return (
        Fact.objects.active()
        .filter(owner=owner, subject=clean.subject, predicate=clean.predicate)
        .filter(content_key=clean.key)
        .order_by("-updated_at")
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


def _drop(clean, work, operation_id, reason: str, threshold=None, **extra) -> Result:
    event = work.event(
        EventType.DROP,
        operation_id=operation_id,
        fact=clean.delete_fact,
        outcome=DROPPED,
        reason=reason,
        candidate=_candidate_json(clean),
        confidence=clean.confidence,
        threshold=threshold,
        origin=clean.origin,
        **extra,
    )
    return Result(DROPPED, None, None, event)


def guard_check(
    clean: Clean, owner: Owner, agent: int | None, *, masked_ok: bool = False, review: bool = False
) -> guard.Hit | None:
    """The do-not-store rule this candidate matches. Extracted memories count as the agent's
    whose turn they came from, so a rule limited to an agent holds for them too."""
    if agent is None and clean.source_turn is not None:
        agent = clean.source_turn.agent_id
    fields = {
        "content": clean.content,
        "subject": clean.subject,
        "predicate": clean.predicate,
        "tags": " ".join(clean.tags),
    }
    return guard.check_candidate(
        fields,
        type=clean.type,
        scope=clean.scope,
        agent=agent,
        owner=owner,
        masked_ok=masked_ok,
        review=review,
    )


def guard_summary(clean: Clean) -> dict[str, Any]:
    """What a block event keeps of the candidate: its kind and origin, never its text."""
    return {
        "type": clean.type,
        "scope": clean.scope,
        "source": clean.source,
        "source_turn_id": clean.source_turn.pk if clean.source_turn else None,
    }


def record_guard_block(clean: Clean, work: Work, operation_id, hit: guard.Hit, **extra):
    """The block event and its Blocked-log entry: the rule and a masked excerpt, never the
    candidate's text (nor the request's fingerprint, a hash a short secret could be guessed
    back from)."""
    work.request = ""
    event = work.event(
        EventType.BLOCK,
        operation_id=operation_id,
        outcome=BLOCKED,
        rule=hit.name,
        rule_id=hit.rule_id,
        field=hit.field,
        kind=hit.kind,
        length=hit.length,
        excerpt=hit.excerpt,
        agent=hit.agent,
        candidate=guard_summary(clean),
        **extra,
    )
    guard_log.record_block(
        hit, owner=work.owner, actor=work.actor, source=clean.source, event=event
    )
    return event


def _block(clean: Clean, work: Work, operation_id, hit: guard.Hit) -> Result:
    return Result(BLOCKED, None, None, record_guard_block(clean, work, operation_id, hit))


def _candidate_json(clean: Clean) -> dict[str, Any]:
    data = clean.as_json()
    if clean.delete_fact is not None:
        data.update(operation="DELETE", fact_id=clean.delete_fact.pk, why=clean.why)
        if clean.why_code:
            data.update(why_code=clean.why_code, why_params=clean.why_params)
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


def proposer(clean: Clean, work: Work) -> int | None:
    """The agent a new fact or pending item belongs to: the one that asked, else the one
    whose conversation turn it was extracted from (None: the person or a job on its own)."""
    if work.agent_id:
        return work.agent_id
    return clean.source_turn.agent_id if clean.source_turn is not None else None


def _queue(
    clean, work, operation_id, reason: str, holder: Fact | None, threshold, hit=None
) -> Result:
    candidate = _candidate_json(clean)
    if holder is not None and reason in (PendingReason.CONFLICT, PendingReason.PERSONAL):
        candidate["replaces"] = {"id": holder.pk, "content": holder.content}
    if hit is not None:  # which rule asked for review (the card names it)
        candidate["guardrail"] = {"rule": hit.name, "rule_id": hit.rule_id, "kind": hit.kind}
    item = PendingItem.objects.create(
        owner=work.owner,
        agent_id=proposer(clean, work),
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
        threshold=threshold,
        origin=clean.origin,
        **payload,
    )
    return Result(PENDING, None, item, event)


def _new_fact(
    clean: Clean,
    owner: Owner,
    *,
    verified: bool,
    confidence: float,
    agent_id: int | None,
    at: datetime | None = None,
) -> Fact:
    """`at`: when it was written, for history recorded afterwards (Work.at; else now)."""
    priority, expires_at = clean.retention(at)
    return Fact(
        **({"created_at": at} if at else {}),
        owner=owner,
        agent_id=agent_id,
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


def put_fact(
    clean: Clean, work: Work, holder: Fact | None, *, verified, confidence, agent_id=None
) -> Fact:
    """Create the fact; a holder of the same subject + predicate becomes its past version.
    `agent_id`: whose proposal it is (default: the proposer of this write)."""
    agent_id = agent_id or proposer(clean, work)
    fact = _new_fact(
        clean, work.owner, verified=verified, confidence=confidence, agent_id=agent_id, at=work.at
    )
    if holder is not None:
        before = snapshot(holder)
        holder.status = FactStatus.SUPERSEDED
        holder.save()
        work.fact(holder, before)
        fact.supersedes = holder
    fact.save()
    work.fact(fact, None)
    return fact


def _write(clean: Clean, work: Work, operation_id, holder: Fact | None, threshold) -> Result:
    previous = snapshot(holder) if holder is not None else None
    fact = put_fact(clean, work, holder, verified=clean.verified, confidence=clean.confidence)
    outcome = SUPERSEDED if holder is not None else WRITTEN
    event = work.event(
        EventType.SUPERSEDE if holder is not None else EventType.WRITE,
        operation_id=operation_id,
        fact=fact,
        outcome=outcome,
        before=previous,
        after=snapshot(fact),
        confidence=clean.confidence,
        threshold=threshold,
        origin=clean.origin,
    )
    return Result(outcome, fact, None, event)


def _suggest_deletion(clean: Clean, work: Work, operation_id, limits) -> Result:
    target = clean.delete_fact
    mine = PendingItem.objects.filter(
        owner=work.owner, reason=PendingReason.DELETION, candidate__fact_id=target.pk
    )
    if work.actor != Actor.PERSON and (
        old := mine.filter(status=PendingStatus.REJECTED, candidate__content_key=clean.key).first()
    ):
        return _drop(clean, work, operation_id, "rejected_before", rejected={"pending": old.pk})
    if clean.confidence < limits.pending:
        return _drop(clean, work, operation_id, "low_confidence", threshold=limits.pending)
    if (waiting := mine.filter(status__in=OPEN).first()) is not None:
        return _repeat_pending(waiting, clean, work, operation_id)
    return _queue(clean, work, operation_id, PendingReason.DELETION, target, limits.write)
