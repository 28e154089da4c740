"""API: the recall log read back and replayed (retrieval.recalls, the same functions the
recall pages call). Read-only: a replay searches again but records nothing."""

from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _
from ninja import Field, Query, Router, Schema

from memsite.api.common import AUTH_ERRORS, MAX_OFFSET, MAX_PAGE, ErrorOut, Id, not_found, owner
from memsite.api.types import RangeEnd, RangeStart
from retrieval import recalls
from retrieval.models import RecallLog

router = Router(tags=["recalls"])


class RecallFilters(Schema):
    fact: int | None = Field(None, ge=1, le=2**63 - 1, description="Only recalls that returned it.")
    since: RangeStart = Field(None, description="Made at or after (ISO 8601).")
    until: RangeEnd = Field(None, description="Made before (ISO 8601).")
    caller: str | None = Field(None, max_length=32, description="api, ...")
    token: int | None = Field(
        None, ge=1, le=2**63 - 1, description="The API token that asked (today's agent identity)."
    )
    limit: int = Field(50, ge=1, le=MAX_PAGE)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


class RecalledOut(Schema):
    kind: str
    id: int
    rank: int
    score: float
    content: str | None = None
    title: str | None = None
    status: str | None = None


class RecallOut(Schema):
    id: int
    query: str
    caller: str
    via: str | None = Field(None, description="context: the evidence search of POST /context.")
    token: int | None = None
    mode: str
    preset: str
    degraded: bool
    took_ms: float
    created_at: datetime
    results: list[RecalledOut]


class RecallListOut(Schema):
    items: list[RecallOut]
    count: int


def recall_dict(log: RecallLog, items=None) -> dict:
    params = log.params or {}
    return {
        "id": log.pk,
        "query": log.query,
        "caller": log.caller,
        "via": params.get("via"),
        "token": log.agent_id,
        "mode": log.mode,
        "preset": log.preset,
        "degraded": log.degraded,
        "took_ms": log.took_ms,
        "created_at": log.created_at,
        "results": [i.to_dict() for i in items] if items is not None else log.results or [],
    }


@router.get(
    "/recalls",
    response={200: RecallListOut, **AUTH_ERRORS},
    summary="The recall log: searches and contexts given to agents, newest first",
)
def list_recalls(request, filters: Query[RecallFilters]):
    logs = recalls.find(
        owner(),
        fact=filters.fact,
        since=filters.since,
        until=filters.until,
        caller=filters.caller,
        token=filters.token,
    )
    page = logs[filters.offset : filters.offset + filters.limit]
    return {"items": [recall_dict(log) for log in page], "count": logs.count()}


def _log(recall_id: int) -> RecallLog:
    log = RecallLog.objects.filter(owner=owner(), pk=recall_id).select_related("owner").first()
    if log is None:
        raise not_found(_("recall"))
    return log


@router.get(
    "/recalls/{recall_id}",
    response={200: RecallOut, 404: ErrorOut, **AUTH_ERRORS},
    summary="One recall: what it returned, with each fact as it read then",
)
def get_recall(request, recall_id: Id):
    log = _log(recall_id)
    return recall_dict(log, recalls.then_items(log))


class ChangedOut(Schema):
    fact_id: int
    events: list[dict[str, Any]]


class DiffOut(Schema):
    added: list[RecalledOut]
    removed: list[dict[str, Any]] = Field(description="Each with why: superseded, archived ...")
    moved: list[dict[str, Any]] = Field(description="Each with then_rank and now_rank.")
    unchanged: int
    changed: list[ChangedOut] = Field(description="Facts changed since, with their events.")


class ReplayOut(Schema):
    recall: RecallOut
    then: list[RecalledOut]
    now: list[RecalledOut]
    diff: DiffOut
    degraded_reason: str | None = None


@router.post(
    "/recalls/{recall_id}/replay",
    response={200: ReplayOut, 404: ErrorOut, **AUTH_ERRORS},
    summary="Replay a recall: what it returned then, what the same query returns now, the diff",
)
def replay_recall(request, recall_id: Id):
    """Read-only (a read token may call it): the search runs again and is not logged."""
    log = _log(recall_id)
    result = recalls.replay(log)
    return {"recall": recall_dict(log), **result.to_dict()}
