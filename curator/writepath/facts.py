"""A person's (or a job's) actions on facts: edit, archive, delete, restore, pin, revert, purge."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from curator import signals
from curator.guard import log as guard_log
from curator.guard import rules as guard
from curator.models import (
    Actor,
    EventType,
    Fact,
    FactStatus,
    FactType,
    MemoryEvent,
    PendingItem,
    PendingReason,
    Priority,
    Scope,
    Source,
    expiry_for,
)
from curator.normalize import content_key
from curator.writepath.clean import (
    check_actor,
    clean_candidate,
    clean_choice,
    clean_content,
    clean_label,
    clean_tags,
    clean_unit,
)
from curator.writepath.core import (
    BLOCKED,
    EDITABLE,
    SUPERSEDED,
    ActiveConflict,
    Blocked,
    Candidate,
    InvalidCandidate,
    NotAllowed,
    Result,
    StaleEdit,
    Work,
    new_batch,
    snapshot,
)
from curator.writepath.propose import (
    current_holder,
    put_fact,
)

# --------------------------------------------------------------------------------------
# Fact actions
# --------------------------------------------------------------------------------------


def _clean_changes(fact: Fact, changes: dict[str, Any], actor: str = "") -> dict[str, Any]:
    unknown = set(changes) - EDITABLE
    if unknown:
        raise InvalidCandidate(
            _("These fields cannot be edited: %(names)s.") % {"names": ", ".join(sorted(unknown))},
            code="unknown_field",
            field=sorted(unknown)[0],
        )
    cleaners = {
        "content": lambda v: clean_content(v, keep_punctuation=actor == Actor.PERSON),
        "subject": lambda v: clean_label(v, "subject"),
        "predicate": lambda v: clean_label(v, "predicate"),
        "type": lambda v: clean_choice(v, FactType, "type"),
        "scope": lambda v: clean_choice(v, Scope, "scope"),
        "confidence": lambda v: clean_unit(v, "confidence"),
        "importance": lambda v: clean_unit(v, "importance"),
        "priority": lambda v: clean_choice(v, Priority, "priority"),
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
    agent_id: int | None = None,
) -> Fact:
    """Change fields in place (an UPDATE event keeps the old values); stale edits are refused,
    and so are edits a do-not-store rule matches (Blocked, with a block event)."""
    check_actor(actor)
    hit = None
    with transaction.atomic():
        fact = Fact.objects.select_related("owner").get(pk=fact_id)
        if expected_updated_at is not None and fact.updated_at != expected_updated_at:
            raise StaleEdit(fact)
        values = _clean_changes(fact, changes, actor)
        if not values:
            return fact
        if (hit := _guard_edit(fact, values, agent_id)) is None:
            if actor == Actor.PERSON and values.keys() & {"content", "subject", "predicate"}:
                values.setdefault("verified", True)  # the person wrote it: it is theirs now
            if actor == Actor.PERSON and values.get("verified") is True:
                # Verified by the person means certain, as a confirmed review item is; unless
                # they set a confidence themselves in the same edit.
                values.setdefault("confidence", 1.0)
            if fact.status == FactStatus.ACTIVE and values.keys() & {"subject", "predicate"}:
                subject = values.get("subject", fact.subject)
                _guard_holder(fact, subject, values.get("predicate", fact.predicate))
            _save_fields(
                fact, values, EventType.UPDATE, actor, batch=batch, agent_id=agent_id, action="edit"
            )
    if hit is not None:
        _record_blocked_edit(fact, hit, actor)
        raise Blocked(hit.name, hit.field)
    return fact


GUARDED = frozenset({"content", "subject", "predicate", "tags", "type", "scope"})


def _guard_edit(fact: Fact, values: dict, agent: int | None) -> guard.Hit | None:
    """The rule the edited fact would match; only edits of what rules look at are checked."""
    if not values.keys() & GUARDED:
        return None
    after = {name: values.get(name, getattr(fact, name)) for name in GUARDED}
    fields = {
        "content": after["content"],
        "subject": after["subject"],
        "predicate": after["predicate"],
        "tags": " ".join(after["tags"] or []),
    }
    return guard.check_candidate(
        fields,
        type=after["type"],
        scope=after["scope"],
        agent=agent,
        owner=fact.owner,
        masked_ok=True,  # a redacted fact stays editable
    )


def _record_blocked_edit(fact: Fact, hit: guard.Hit, actor: str) -> None:
    with transaction.atomic():
        event = Work(fact.owner, actor).event(
            EventType.BLOCK,
            fact=fact,
            outcome=BLOCKED,
            action="edit",
            rule=hit.name,
            rule_id=hit.rule_id,
            field=hit.field,
            kind=hit.kind,
            length=hit.length,
            excerpt=hit.excerpt,
            agent=hit.agent,
        )
        guard_log.record_block(hit, owner=fact.owner, actor=actor, source="edit", event=event)


def _save_fields(fact: Fact, values: dict, event_type: str, actor: str, **payload) -> MemoryEvent:
    batch = payload.pop("batch", "")
    job_run = payload.pop("job_run", "")
    agent_id = payload.pop("agent_id", None)
    work = Work(fact.owner, actor, batch=batch, job_run=job_run, agent_id=agent_id)
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
    check_actor(actor)
    with transaction.atomic():
        fact = Fact.objects.select_related("owner").get(pk=fact_id)
        values = {k: v for k, v in values.items() if getattr(fact, k) != v}
        if values:
            _save_fields(fact, values, event_type, actor, job_run=job_run, batch=batch, **payload)
    return fact


ARCHIVABLE = (FactStatus.ACTIVE, FactStatus.EXPIRED)
RESTORABLE = (FactStatus.ARCHIVED, FactStatus.EXPIRED, FactStatus.REJECTED)


def _set_status(
    fact_id: int, status: str, event_type: str, actor: str, batch: str, allowed, agent_id=None
):
    check_actor(actor)
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
        _save_fields(fact, values, event_type, actor, batch=batch, agent_id=agent_id)
    return fact


def archive_fact(fact_id: int, *, actor: str, batch: str = "", agent_id: int | None = None) -> Fact:
    return _set_status(
        fact_id, FactStatus.ARCHIVED, EventType.ARCHIVE, actor, batch, ARCHIVABLE, agent_id
    )


def delete_fact(fact_id: int, *, actor: str, batch: str = "") -> Fact:
    """Soft delete: archived with a `delete` event (a hard purge is a separate step)."""
    return _set_status(fact_id, FactStatus.ARCHIVED, EventType.DELETE, actor, batch, ARCHIVABLE)


def restore_fact(fact_id: int, *, actor: str, batch: str = "") -> Fact:
    return _set_status(fact_id, FactStatus.ACTIVE, EventType.UPDATE, actor, batch, RESTORABLE)


def pin_fact(fact_id: int, *, actor: str, batch: str = "") -> Fact:
    """Keep forever: permanent retention, no expiry."""
    check_actor(actor)
    with transaction.atomic():
        fact = Fact.objects.select_related("owner").get(pk=fact_id)
        values = {"priority": Priority.PERMANENT, "expires_at": None}
        values = {k: v for k, v in values.items() if getattr(fact, k) != v}
        if values:
            _save_fields(fact, values, EventType.UPDATE, actor, batch=batch, action="pin")
    return fact


def revert_to(fact_id: int, *, actor: str = "person") -> Result:
    """Make an older version of a chain current again, as a new version (history stays)."""
    check_actor(actor)
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
            actor,
        )
        work = Work(old.owner, actor)
        fact = put_fact(clean, work, head, verified=True, confidence=1.0)
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
    check_actor(actor)
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
        signals.changed("fact", fact_id)
        signals.facts([fact_id])
        return MemoryEvent.objects.create(
            owner=fact.owner,
            event_type=EventType.PURGE,
            actor=actor,
            payload={"fact_id": fact_id, "purged": True},
        )


def delete_for_good(fact_id: int, *, after: timedelta, actor: str = "person") -> MemoryEvent:
    """Delete now, purge later: a `delete` event that says when the fact goes for good
    (`purge_at`). Until then it is an ordinary delete, undone from its banner or the activity
    log, and an undone one is never purged (`purge_due`). A fact that is not active any more
    (archived, an older version) keeps its status; the event records that unchanged status,
    so undoing it is still what cancels the purge."""
    check_actor(actor)
    purge_at = (timezone.now() + after).isoformat()
    with transaction.atomic():
        fact = Fact.objects.select_related("owner").get(pk=fact_id)
        if fact.status in ARCHIVABLE:
            return _save_fields(
                fact,
                {"status": FactStatus.ARCHIVED},
                EventType.DELETE,
                actor,
                purge_at=purge_at,
                for_good=True,
            )
        work = Work(fact.owner, actor)
        same = {"status": fact.status}
        work.changes.append({"kind": "fact", "id": fact.pk, "before": same, "after": same})
        work.fact_ids.add(fact.pk)
        return work.event(EventType.DELETE, fact=fact, purge_at=purge_at, for_good=True)


def purge_when(fact: Fact) -> MemoryEvent | None:
    """The pending "delete for good" of this fact (not undone), or None."""
    return (
        MemoryEvent.objects.filter(fact=fact, event_type=EventType.DELETE, payload__for_good=True)
        .filter(reverted_by__isnull=True)
        .order_by("-pk")
        .first()
    )


def purge_due(now=None) -> list[int]:
    """Purge every fact whose "delete for good" time has come and was not undone nor
    restored since; returns their ids (the job that runs it, and a late consumer, alike)."""
    now = now or timezone.now()
    done = []
    scheduled = MemoryEvent.objects.filter(
        event_type=EventType.DELETE, payload__for_good=True, fact__isnull=False
    ).filter(reverted_by__isnull=True)
    for event in scheduled.select_related("fact"):
        when = parse_datetime(event.payload.get("purge_at") or "")
        if when is None or when > now or event.fact.status == FactStatus.ACTIVE:
            continue
        if purge_when(event.fact) != event:
            continue  # deleted for good twice: the newest event decides
        fact_id = event.fact_id
        purge_fact(fact_id, actor="job")
        done.append(fact_id)
    return done


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
    # A contradiction's resolution quotes both facts, whichever one it belongs to.
    related |= Q(event_type=EventType.RESOLVE, payload__left__id=fact.pk)
    related |= Q(event_type=EventType.RESOLVE, payload__right__id=fact.pk)
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
