"""The review queue's actions: confirm, ignore, snooze, and when an item is due."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from curator import retention
from curator.models import (
    EventType,
    Fact,
    FactStatus,
    Owner,
    PendingItem,
    PendingReason,
    PendingStatus,
    Source,
)
from curator.normalize import content_key
from curator.writepath.clean import (
    check_actor,
    clean_candidate,
)
from curator.writepath.core import (
    BLOCKED,
    BOOSTED,
    DELETED,
    OPEN,
    PENDING,
    SUPERSEDED,
    WRITTEN,
    AlreadyResolved,
    Candidate,
    InvalidCandidate,
    MootPending,
    Result,
    Work,
    WritePathError,
    json_value,
    pending_snapshot,
    snapshot,
)
from curator.writepath.propose import (
    current_holder,
    duplicate_of,
    guard_check,
    put_fact,
    record_guard_block,
)

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


def retention_of(item: PendingItem) -> retention.Retention | None:
    """How long the memory would last if confirmed now: what the review card and the API's
    pending items show (None for a suggested deletion or a candidate that no longer cleans)."""
    if item.reason == PendingReason.DELETION:
        return None
    data = {k: v for k, v in (item.candidate or {}).items() if k != "source_turn_id"}
    try:
        return retention.for_clean(clean_candidate(_candidate_from(data), item.owner))
    except InvalidCandidate:
        return None


def confirm_pending(
    item_id: int,
    *,
    actor: str = "person",
    edits: dict | None = None,
    force: bool = False,
    batch: str = "",
    agent_id: int | None = None,
    at: datetime | None = None,
) -> Result:
    """Write the candidate as a verified fact (or apply the suggested deletion).

    A moot item raises MootPending unless `force` says the person saw the current state; a
    candidate a do-not-store rule matches is not written (outcome blocked, item unchanged).
    `at`: when the person decided, for history recorded afterwards (the demo); else now.
    """
    check_actor(actor)
    with transaction.atomic():
        item = _open_item(item_id)
        if not force and (why := moot_reason(item)):
            raise MootPending(why)
        work = Work(item.owner, actor, batch=batch, agent_id=agent_id, at=at)
        before = pending_snapshot(item)
        if item.reason == PendingReason.DELETION:
            return _confirm_deletion(item, work, before)
        data = {**item.candidate, **(edits or {})}
        clean = clean_candidate(_candidate_from(data), item.owner, actor)
        if item.source_turn_id and not data.get("source_turn_id"):
            clean.source_turn = item.source_turn
        if (hit := guard_check(clean, item.owner, agent_id, masked_ok=True)) is not None:
            # queued before the rule, or edited into a match: it stays as it is, unwritten
            event = record_guard_block(clean, work, None, hit, pending=item, action="confirm")
            return Result(BLOCKED, None, item, event)
        same = duplicate_of(clean, item.owner)
        if same is not None:
            fact, outcome = _confirm_into(same, work), BOOSTED
        else:
            holder = current_holder(item.owner, clean.subject, clean.predicate)
            # The fact stays the proposing agent's, whoever confirms it.
            fact = put_fact(
                clean, work, holder, verified=True, confidence=1.0, agent_id=item.agent_id
            )
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


def ignore_pending(
    item_id: int,
    *,
    actor: str = "person",
    batch: str = "",
    agent_id: int | None = None,
    at: datetime | None = None,
) -> Result:
    """Reject the item; the same candidate will not be proposed to the person again.
    `at` as for confirm_pending."""
    check_actor(actor)
    with transaction.atomic():
        item = _open_item(item_id)
        work = Work(item.owner, actor, batch=batch, agent_id=agent_id, at=at)
        before = pending_snapshot(item)
        item.status, item.cooldown_until = PendingStatus.REJECTED, None
        item.save()
        work.pending(item, before)
        event = work.event(
            EventType.REJECT, fact=item.conflicts_with, pending=item, outcome=PENDING
        )
    return Result(PENDING, item.conflicts_with, item, event)


def snooze_pending(
    item_id: int,
    until: datetime,
    *,
    actor: str = "person",
    batch: str = "",
    agent_id: int | None = None,
) -> Result:
    """Hide the item until `until`; it comes back to the queue by itself afterwards."""
    check_actor(actor)
    if timezone.is_naive(until) or until <= timezone.now():
        raise WritePathError(
            _("Choose a time in the future."), code="invalid_snooze", field="until"
        )
    with transaction.atomic():
        item = _open_item(item_id)
        work = Work(item.owner, actor, batch=batch, agent_id=agent_id)
        before = pending_snapshot(item)
        item.status, item.cooldown_until = PendingStatus.SNOOZED, until
        item.save()
        work.pending(item, before)
        event = work.event(
            EventType.SNOOZE,
            fact=item.conflicts_with,
            pending=item,
            outcome=PENDING,
            until=json_value(until),
        )
    return Result(PENDING, item.conflicts_with, item, event)


def ask_about(
    fact: Fact, candidate: dict[str, Any], *, reason: str, actor: str, job_run: str = ""
) -> Result:
    """Queue a question about an existing fact that no candidate routing would ask (a job's
    "keep this as core memory?"): the item and its event, nothing written."""
    check_actor(actor)
    with transaction.atomic():
        work = Work(fact.owner, actor, job_run=job_run)
        item = PendingItem.objects.create(
            owner=fact.owner,
            candidate=candidate,
            confidence=candidate.get("confidence", fact.confidence),
            reason=reason,
            conflicts_with=fact,
        )
        work.pending(item, None)
        event = work.event(
            EventType.PENDING,
            fact=fact,
            pending=item,
            outcome=PENDING,
            reason=reason,
            candidate=candidate,
            fact_snapshot=snapshot(fact),
        )
    return Result(PENDING, fact, item, event)
