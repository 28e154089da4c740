"""API: memories and pending items. Every change goes through curator.writepath (actor "agent",
with the agent's id), exactly as the review desk and the facts pages do.

Each operation is a thin router function over a plain one taking the agent (its token) and the
validated input: the MCP server (memsite.api.mcp) calls the same plain functions.
"""

from datetime import datetime, timedelta
from typing import Any, Literal

from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from ninja import Field, Query, Router, Schema, Status

from curator import retention, timetravel
from curator import writepath as wp
from curator.models import (
    Actor,
    Fact,
    FactStatus,
    FactType,
    MemoryEvent,
    PendingItem,
    Priority,
    Scope,
)
from memsite.api.common import (
    AUTH_ERRORS,
    BODY_ERRORS,
    MAX_OFFSET,
    MAX_PAGE,
    WRITE,
    WRITE_ERRORS,
    ErrorOut,
    Id,
    ReadLimits,
    not_found,
    owner,
    read_limits,
    require_scopes,
)
from memsite.api.errors import ApiError
from memsite.api.types import BodyIn, Moment, RangeStart
from memsite.models import ApiToken

router = Router()
AGENT = Actor.AGENT

TypeName = Literal[tuple(FactType.values)]
ScopeName = Literal[tuple(Scope.values)]
PriorityName = Literal[tuple(Priority.values)]
DurationName = Literal[tuple(wp.DURATIONS)]
StatusName = Literal[tuple(FactStatus.values)]
RetentionKind = Literal[retention.KINDS]


def write_error(exc: wp.WritePathError) -> ApiError:
    """Input problems are 422 (with the field); a state that forbids the change is 409."""
    fields = {exc.field: str(exc)} if exc.field else None
    invalid = isinstance(exc, wp.InvalidCandidate) or exc.code.startswith("invalid")
    return ApiError(422 if invalid else 409, exc.code, str(exc), fields)


# -- shapes ------------------------------------------------------------------------------------


class FactOut(Schema):
    id: int
    content: str
    subject: str
    predicate: str
    type: str
    scope: str
    status: str
    confidence: float
    importance: float
    priority: str
    expires_at: datetime | None
    verified: bool
    source: str
    source_turn_id: int | None
    tags: list[Any]
    hit_count: int
    access_count: int
    last_accessed_at: datetime | None
    supersedes_id: int | None
    superseded_by_id: int | None
    created_at: datetime
    updated_at: datetime = Field(description="Send back as expected_updated_at when editing.")


def fact_dict(fact: Fact | None) -> dict | None:
    if fact is None:
        return None
    successor = getattr(fact, "superseded_by", None) if fact.status == "superseded" else None
    return {
        **{name: getattr(fact, name) for name in FactOut.model_fields if hasattr(fact, name)},
        "superseded_by_id": successor.pk if successor else None,
    }


class RetentionOut(Schema):
    kind: RetentionKind = Field(
        description="permanent; expires (on expires_at); decays (importance halves after "
        "about half_life_days unused, then the person is asked)"
    )
    priority: str
    expires_at: datetime | None = None
    half_life_days: int | None = None
    label: str


class PendingOut(Schema):
    id: int
    content: str
    candidate: dict[str, Any]
    confidence: float
    reason: str
    status: str
    cooldown_until: datetime | None
    conflicts_with_id: int | None
    conflicts_with_content: str | None
    source_turn_id: int | None
    resulting_fact_id: int | None
    created_at: datetime
    retention: RetentionOut | None = Field(
        None, description="How long the memory will last if confirmed now (null: a deletion)."
    )


def pending_dict(item: PendingItem | None) -> dict | None:
    if item is None:
        return None
    other = item.conflicts_with
    return {
        "id": item.pk,
        "content": str((item.candidate or {}).get("content", "")),
        "candidate": item.candidate or {},
        "confidence": item.confidence,
        "reason": item.reason,
        "status": item.status,
        "cooldown_until": item.cooldown_until,
        "conflicts_with_id": other.pk if other else None,
        "conflicts_with_content": other.content if other else None,
        "source_turn_id": item.source_turn_id,
        "resulting_fact_id": item.resulting_fact_id,
        "created_at": item.created_at,
        "retention": (
            lasting.to_dict()
            if item.status in wp.OPEN and (lasting := wp.retention_of(item))
            else None
        ),
    }


class OutcomeOut(Schema):
    outcome: str = Field(
        description="written, pending, boosted, superseded, dropped, deleted or blocked"
    )
    replayed: bool = False
    fact: FactOut | None = None
    pending: PendingOut | None = None
    reason: str | None = Field(None, description="Why it was dropped, when it was.")
    rule: str | None = Field(
        None, description="The guardrail that blocked it (outcome blocked): nothing was kept."
    )


def outcome_dict(result: wp.Result) -> dict:
    payload = (result.event.payload or {}) if result.event else {}
    blocked = result.outcome == wp.BLOCKED
    return {
        "outcome": result.outcome,
        "replayed": result.replayed,
        "fact": fact_dict(result.fact),
        "pending": pending_dict(result.pending),
        "reason": "guardrail" if blocked else payload.get("reason"),
        "rule": payload.get("rule") if blocked else None,
    }


# -- propose and list --------------------------------------------------------------------------


class MemoryIn(BodyIn):
    content: str = Field(min_length=1, max_length=wp.MAX_CONTENT)
    subject: str = Field("", max_length=wp.MAX_LABEL)
    predicate: str = Field("", max_length=wp.MAX_LABEL)
    type: TypeName = "fact"
    scope: ScopeName = "user"
    confidence: float = Field(0.9, ge=0, le=1)
    importance: float = Field(0.5, ge=0, le=1)
    priority: PriorityName | None = None
    duration: DurationName | None = Field(None, description="Instead of priority.")
    expires_at: Moment = Field(
        None, description="When it stops being true (wins over the retention's expiry)."
    )
    tags: list[str] = Field(default_factory=list, max_length=wp.MAX_TAGS)
    source_turn_id: int | None = Field(None, ge=1, le=2**63 - 1)
    operation_id: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Idempotency key: a retry replays; other content under it is a 409.",
    )


@router.post(
    "/memories",
    auth=WRITE,
    response={201: OutcomeOut, 200: OutcomeOut, 409: ErrorOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Propose a memory through the write path (retry-safe with operation_id)",
    tags=["memories"],
)
def propose(request, payload: MemoryIn):
    """Routed by confidence: written, pending (for the person), boosted (a repeat),
    superseded (a new value for the same subject + predicate) or dropped; blocked (200, with
    the rule's name) when a guardrail matches it: nothing is written or queued. The same
    operation_id with the same memory again answers 200 with the first outcome and writes
    nothing; with different content, 409 operation_conflict.
    403 scope_not_allowed when this agent may not write the memory's scope."""
    status, body = propose_memory(request.auth, payload)
    return Status(status, body)


def propose_memory(agent: ApiToken, payload: MemoryIn) -> tuple[int, dict]:
    """(201 or 200 for a replay, the outcome); the caller checked that the agent may write."""
    data = payload.dict()
    if data["priority"] and data["duration"]:
        raise ApiError(
            422, "invalid", _("Give priority or duration, not both."), {"duration": "conflict"}
        )
    require_scopes(agent, [data["scope"]])
    operation_id = data.pop("operation_id")
    candidate = wp.Candidate(**data, source="api", token_id=agent.pk if agent else None)
    try:
        result = wp.propose(
            candidate,
            actor=AGENT,
            owner=owner(),
            operation_id=operation_id,
            same_request=True,
            agent_id=agent.pk,
        )
    except wp.WritePathError as exc:
        raise write_error(exc) from None
    kept = not result.replayed and result.outcome != wp.BLOCKED
    return 201 if kept else 200, outcome_dict(result)


class MemoryFilters(Schema):
    status: StatusName | Literal["all"] = "active"
    type: TypeName | None = None
    scope: ScopeName | None = None
    tag: str | None = Field(None, max_length=wp.MAX_TAG)
    q: str = Field("", max_length=500, description="Words that must all appear (literal).")
    updated_after: RangeStart = None
    as_of: Moment = Field(
        None,
        description="The memory as it stood at this moment: with status=active (the default) "
        "the facts active then, with their fields as they were (rebuilt from the event log; "
        "updated_at stays the row's current value, for editing). Newest written first. "
        "Without an offset: server time.",
    )
    limit: int = Field(50, ge=1, le=MAX_PAGE)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


class FactsOut(Schema):
    items: list[FactOut]
    count: int
    as_of: datetime | None = None


def facts_then(f: MemoryFilters) -> list[Fact]:
    if f.updated_after is not None:
        raise ApiError(
            422,
            "invalid",
            _("as_of and updated_after cannot be combined: as_of shows the memory at one moment."),
            {"updated_after": "conflict"},
        )
    return timetravel.facts_as_of(
        owner(), f.as_of, status=f.status, type=f.type, scope=f.scope, tag=f.tag, q=f.q
    )


def find_facts(f: MemoryFilters, limits: ReadLimits | None = None):
    facts = Fact.objects.filter(owner=owner()).select_related("superseded_by")
    if limits is not None and limits.scopes is not None:
        facts = facts.filter(scope__in=limits.scopes)
    facts = facts.filtered(
        status=None if f.status == "all" else f.status,
        type=f.type,
        scope=f.scope,
        tag=f.tag,
        updated_after=f.updated_after,
    )
    for term in f.q.split():
        facts = facts.filter(
            Q(content__icontains=term) | Q(subject__icontains=term) | Q(predicate__icontains=term)
        )
    return facts.order_by("-updated_at", "-id")


@router.get(
    "/memories",
    response={200: FactsOut, **AUTH_ERRORS},
    summary="List memories (newest change first)",
    tags=["memories"],
)
def list_memories(request, filters: Query[MemoryFilters]):
    return memories_page(request.auth, filters)


def memories_page(agent: ApiToken | None, filters: MemoryFilters) -> dict:
    """One page of the memories this agent may read, newest change first (or, with as_of,
    those active at that moment)."""
    limits = read_limits(agent)
    if filters.as_of is not None:
        facts = [f for f in facts_then(filters) if limits.fact_visible(f.scope)]
        page = facts[filters.offset : filters.offset + filters.limit]
        return {"items": [fact_dict(f) for f in page], "count": len(facts), "as_of": filters.as_of}
    facts = find_facts(filters, limits)
    page = facts[filters.offset : filters.offset + filters.limit]
    return {"items": [fact_dict(f) for f in page], "count": facts.count()}


def _fact(fact_id: int, agent: ApiToken | None = None) -> Fact:
    """The memory, or 404 (also when it is in a scope this agent may not read)."""
    fact = Fact.objects.filter(owner=owner(), pk=fact_id).select_related("superseded_by").first()
    if fact is None or not read_limits(agent).fact_visible(fact.scope):
        raise not_found(_("memory"))
    return fact


@router.get(
    "/memories/{fact_id}",
    response={200: FactOut, 404: ErrorOut, **AUTH_ERRORS},
    summary="One memory",
    tags=["memories"],
)
def get_memory(request, fact_id: Id):
    return fact_dict(_fact(fact_id, request.auth))


class MemoryPatch(BodyIn):
    content: str | None = Field(None, max_length=wp.MAX_CONTENT)
    subject: str | None = Field(None, max_length=wp.MAX_LABEL)
    predicate: str | None = Field(None, max_length=wp.MAX_LABEL)
    type: TypeName | None = None
    scope: ScopeName | None = None
    confidence: float | None = Field(None, ge=0, le=1)
    importance: float | None = Field(None, ge=0, le=1)
    priority: PriorityName | None = None
    expires_at: Moment = Field(None, description="Without an offset: the server's time zone.")
    tags: list[str] | None = Field(None, max_length=wp.MAX_TAGS)
    expected_updated_at: Moment = Field(
        None, description="The updated_at you read; 409 stale_edit if it changed since."
    )


@router.patch(
    "/memories/{fact_id}",
    auth=WRITE,
    response={200: FactOut, 404: ErrorOut, 409: ErrorOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Edit a memory (optimistic concurrency with expected_updated_at)",
    tags=["memories"],
)
def edit_memory(request, fact_id: Id, payload: MemoryPatch):
    agent = request.auth
    fact = _fact(fact_id, agent)
    changes = payload.dict(exclude_unset=True)
    require_scopes(agent, {fact.scope, changes.get("scope") or fact.scope})
    expected = changes.pop("expected_updated_at", None)
    for name in ("content", "type", "scope", "priority", "tags", "confidence", "importance"):
        if name in changes and changes[name] is None:  # null means "clear" only where it can
            raise ApiError(422, "invalid", _("%(f)s cannot be null.") % {"f": name}, {name: "null"})
    try:
        fact = wp.edit_fact(
            fact_id, changes, actor=AGENT, expected_updated_at=expected, agent_id=agent.pk
        )
    except wp.StaleEdit as exc:
        raise ApiError(
            409,
            "stale_edit",
            _("This memory changed since you read it (now updated at %(t)s); read it again.")
            % {"t": exc.fact.updated_at.isoformat()},
        ) from None
    except wp.WritePathError as exc:
        raise write_error(exc) from None
    return fact_dict(_fact(fact.pk, agent))


@router.delete(
    "/memories/{fact_id}",
    auth=WRITE,
    response={204: None, 404: ErrorOut, 409: ErrorOut, **WRITE_ERRORS},
    summary="Archive a memory (it stays in the history and can be restored by the person)",
    tags=["memories"],
)
def archive_memory(request, fact_id: Id):
    fact = _fact(fact_id, request.auth)
    require_scopes(request.auth, [fact.scope])
    try:
        wp.archive_fact(fact_id, actor=AGENT, agent_id=request.auth.pk)
    except wp.WritePathError as exc:
        raise write_error(exc) from None
    return Status(204, None)


class ForgetIn(BodyIn):
    reason: str = Field("", max_length=wp.MAX_CONTENT, description="Why it should go.")
    confidence: float = Field(0.9, ge=0, le=1, description="How sure the agent is.")
    operation_id: str | None = Field(
        None, min_length=1, max_length=200, description="Idempotency key: a retry replays."
    )


@router.post(
    "/memories/{fact_id}/forget",
    auth=WRITE,
    response={
        201: OutcomeOut,
        200: OutcomeOut,
        404: ErrorOut,
        409: ErrorOut,
        **WRITE_ERRORS,
        **BODY_ERRORS,
    },
    summary="Ask the person to remove a memory (files a deletion request; deletes nothing)",
    tags=["memories"],
)
def forget(request, fact_id: Id, payload: ForgetIn | None = None):
    """The memory stays until the person confirms the request on the review desk; the
    outcome is `pending` (or `dropped` when the person already refused the same request)."""
    status, body = forget_memory(request.auth, fact_id, payload or ForgetIn())
    return Status(status, body)


def forget_memory(agent: ApiToken, fact_id: int, payload: ForgetIn) -> tuple[int, dict]:
    fact = _fact(fact_id, agent)
    require_scopes(agent, [fact.scope])
    candidate = wp.Candidate(
        content=payload.reason,
        subject=fact.subject,
        predicate=fact.predicate,
        type=fact.type,
        scope=fact.scope,
        confidence=payload.confidence,
        delete_fact_id=fact.pk,
        source="api",
    )
    try:
        result = wp.propose(
            candidate,
            actor=AGENT,
            owner=owner(),
            operation_id=payload.operation_id,
            agent_id=agent.pk,
        )
    except wp.WritePathError as exc:
        raise write_error(exc) from None
    return 200 if result.replayed else 201, outcome_dict(result)


class EventOut(Schema):
    id: int
    event_type: str
    actor: str
    fact_id: int | None
    pending_id: int | None
    operation_id: str | None
    job_run: str
    payload: dict[str, Any]
    created_at: datetime


class HistoryOut(Schema):
    fact: FactOut
    chain: list[FactOut] = Field(description="The supersede chain, oldest first.")
    events: list[EventOut] = Field(description="Events of every fact in the chain, newest first.")


@router.get(
    "/memories/{fact_id}/history",
    response={200: HistoryOut, 404: ErrorOut, **AUTH_ERRORS},
    summary="The supersede chain and the events of a memory",
    tags=["memories"],
)
def memory_history(request, fact_id: Id):
    fact = _fact(fact_id, request.auth)
    chain = fact.chain()
    events = MemoryEvent.objects.filter(fact__in=[f.pk for f in chain]).order_by(
        "-created_at", "-id"
    )
    return {
        "fact": fact_dict(fact),
        "chain": [fact_dict(f) for f in chain],
        "events": list(events.values(*EventOut.model_fields)),
    }


# -- pending -----------------------------------------------------------------------------------


class PendingFilters(Schema):
    status: Literal["due", "pending", "snoozed", "confirmed", "rejected", "all"] = Field(
        "due", description="due (default) = pending plus snoozed items whose time has come."
    )
    limit: int = Field(50, ge=1, le=MAX_PAGE)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


class PendingListOut(Schema):
    items: list[PendingOut]
    count: int


@router.get(
    "/pending",
    response={200: PendingListOut, **AUTH_ERRORS},
    summary="Memories waiting for the person's confirmation",
    tags=["pending"],
)
def list_pending(request, filters: Query[PendingFilters]):
    return pending_page(request.auth, filters)


def pending_page(agent: ApiToken | None, filters: PendingFilters) -> dict:
    """Pending items in scopes this agent may read, newest first."""
    if filters.status == "due":
        items = wp.due_pending(owner())
    else:
        items = PendingItem.objects.filter(owner=owner())
        if filters.status != "all":
            items = items.filter(status=filters.status)
    limits = read_limits(agent)
    if limits.scopes is not None:
        items = items.filter(candidate__scope__in=limits.scopes)
    items = items.select_related("conflicts_with").order_by("-created_at", "-id")
    page = items[filters.offset : filters.offset + filters.limit]
    return {"items": [pending_dict(i) for i in page], "count": items.count()}


class PendingEdits(BodyIn):
    content: str | None = Field(None, min_length=1, max_length=wp.MAX_CONTENT)
    subject: str | None = Field(None, max_length=wp.MAX_LABEL)
    predicate: str | None = Field(None, max_length=wp.MAX_LABEL)
    type: TypeName | None = None
    scope: ScopeName | None = None
    priority: PriorityName | None = None
    tags: list[str] | None = Field(None, max_length=wp.MAX_TAGS)
    retention: RetentionKind | None = Field(
        None, description="How long it lasts: permanent, expires (give expires_at) or decays."
    )
    expires_at: datetime | None = Field(None, description='With retention "expires".')


class ConfirmIn(BodyIn):
    edits: PendingEdits | None = Field(None, description="Corrections the person made.")


def _retention_edits(kind: str, expires_at: datetime | None) -> dict:
    if kind == "expires":
        if expires_at is None:
            message = _("Give expires_at with retention “expires”.")
            raise ApiError(422, "invalid_expires_at", message, {"expires_at": message})
        if timezone.is_naive(expires_at):
            expires_at = timezone.make_aware(expires_at)
    elif expires_at is not None:
        message = _("expires_at goes with retention “expires” only.")
        raise ApiError(422, "invalid_retention", message, {"expires_at": message})
    return retention.edits(kind, expires_at)


class LaterIn(BodyIn):
    until: Moment = None
    hours: float | None = Field(None, gt=0, le=24 * 365)


class PendingActionOut(Schema):
    outcome: str | None = None
    fact: FactOut | None = None
    pending: PendingOut
    rule: str | None = Field(None, description="The guardrail that blocked it (outcome blocked).")


def _pending_call(agent: ApiToken, item_id: int, action):
    """Run a write-path action on a pending item this agent may see and write."""
    item = PendingItem.objects.filter(owner=owner(), pk=item_id).first()
    scope = str((item.candidate or {}).get("scope", "")) if item else ""
    if item is None or not read_limits(agent).fact_visible(scope):
        raise not_found(_("pending item"))
    require_scopes(agent, [scope])
    try:
        return action()
    except wp.WritePathError as exc:
        raise write_error(exc) from None


PENDING_RESPONSES = {200: PendingActionOut, 404: ErrorOut, 409: ErrorOut, **WRITE_ERRORS}
PENDING_BODY_RESPONSES = {**PENDING_RESPONSES, **BODY_ERRORS}


@router.post(
    "/pending/{item_id}/confirm",
    auth=WRITE,
    response=PENDING_BODY_RESPONSES,
    summary="Confirm: the candidate becomes a verified memory",
    tags=["pending"],
)
def confirm(request, item_id: Id, payload: ConfirmIn | None = None):
    return confirm_item(request.auth, item_id, payload)


def confirm_item(agent: ApiToken, item_id: int, payload: ConfirmIn | None = None) -> dict:
    edits = payload.edits.dict(exclude_none=True) if payload and payload.edits else None
    if edits and "scope" in edits:
        require_scopes(agent, [edits["scope"]])
    if edits and (kind := edits.pop("retention", None)):
        edits.update(_retention_edits(kind, edits.pop("expires_at", None)))
    result = _pending_call(
        agent,
        item_id,
        lambda: wp.confirm_pending(item_id, actor=AGENT, edits=edits or None, agent_id=agent.pk),
    )
    blocked = result.outcome == wp.BLOCKED
    return {
        "outcome": result.outcome,
        "fact": fact_dict(_fact(result.fact.pk)) if result.fact else None,
        "pending": pending_dict(result.pending),
        "rule": result.event.payload.get("rule") if blocked else None,
    }


@router.post(
    "/pending/{item_id}/ignore",
    auth=WRITE,
    response=PENDING_RESPONSES,
    summary="Ignore: it will not be proposed again",
    tags=["pending"],
)
def ignore(request, item_id: Id):
    agent = request.auth
    result = _pending_call(
        agent, item_id, lambda: wp.ignore_pending(item_id, actor=AGENT, agent_id=agent.pk)
    )
    return {"pending": pending_dict(result.pending)}


@router.post(
    "/pending/{item_id}/later",
    auth=WRITE,
    response=PENDING_BODY_RESPONSES,
    summary="Later: ask again at `until`, or in `hours` (default 24 hours)",
    tags=["pending"],
)
def later(request, item_id: Id, payload: LaterIn | None = None):
    payload = payload or LaterIn()
    if payload.until and payload.hours:
        raise ApiError(422, "invalid", _("Give until or hours, not both."), {"hours": "conflict"})
    until = payload.until or timezone.now() + timedelta(hours=payload.hours or 24)
    agent = request.auth
    result = _pending_call(
        agent, item_id, lambda: wp.snooze_pending(item_id, until, actor=AGENT, agent_id=agent.pk)
    )
    return {"pending": pending_dict(result.pending)}
