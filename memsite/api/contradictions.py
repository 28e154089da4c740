"""API: the contradiction inbox (curator.contradictions) and its resolution through the write
path (curator.writepath.resolve_contradiction), as on Review → Contradictions."""

from datetime import datetime
from typing import Any, Literal

from django.utils.translation import gettext as _
from ninja import Field, Query, Router, Schema

from curator import contradictions as inbox
from curator import writepath as wp
from curator.models import Actor, Contradiction, ContradictionStatus, Resolution
from memsite.api.common import (
    AUTH_ERRORS,
    BODY_ERRORS,
    MAX_OFFSET,
    MAX_PAGE,
    WRITE,
    WRITE_ERRORS,
    ErrorOut,
    Id,
    not_found,
    owner,
)
from memsite.api.memories import FactOut, fact_dict, write_error
from memsite.api.types import BodyIn

router = Router(tags=["contradictions"])


class ContradictionFilters(Schema):
    status: Literal[tuple(ContradictionStatus.values) + ("all",)] = Field(
        "open", description="open (default: both facts still active), resolved, compatible, ..."
    )
    limit: int = Field(50, ge=1, le=MAX_PAGE)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


class ContradictionOut(Schema):
    id: int
    left: FactOut
    right: FactOut
    rule: str = Field(description="same_slot, negation, slot, exclusive or llm")
    detail: dict[str, Any]
    explanation: str = Field(description="Why they cannot both be true, in words.")
    status: str
    resolution: str
    found_at: datetime
    resolved_at: datetime | None


class ContradictionListOut(Schema):
    items: list[ContradictionOut]
    count: int


def contradiction_dict(item: Contradiction) -> dict:
    return {
        "id": item.pk,
        "left": fact_dict(item.left),
        "right": fact_dict(item.right),
        "rule": item.rule,
        "detail": item.detail or {},
        "explanation": inbox.explain(item),
        "status": item.status,
        "resolution": item.resolution,
        "found_at": item.found_at,
        "resolved_at": item.resolved_at,
    }


@router.get(
    "/contradictions",
    response={200: ContradictionListOut, **AUTH_ERRORS},
    summary="Active facts that cannot both be true (the Review page's Contradictions tab)",
)
def list_contradictions(request, filters: Query[ContradictionFilters]):
    found = inbox.inbox(owner(), filters.status)
    page = found[filters.offset : filters.offset + filters.limit]
    return {"items": [contradiction_dict(c) for c in page], "count": found.count()}


class ResolveIn(BodyIn):
    action: Literal[tuple(Resolution.values)] = Field(
        description="keep_left / keep_right (the other is archived), both (never asked again "
        "for this pair), merge (the left fact takes `text`, the right is archived)"
    )
    text: str | None = Field(None, max_length=wp.MAX_CONTENT, description="For merge.")


class ResolveOut(Schema):
    contradiction: ContradictionOut
    event_id: int = Field(description="The event to undo in the Activity log.")


@router.post(
    "/contradictions/{contradiction_id}/resolve",
    auth=WRITE,
    response={200: ResolveOut, 404: ErrorOut, 409: ErrorOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Resolve a contradiction through the write path (undoable)",
)
def resolve(request, contradiction_id: Id, payload: ResolveIn):
    item = Contradiction.objects.filter(owner=owner(), pk=contradiction_id).first()
    if item is None:
        raise not_found(_("contradiction"))
    try:
        event = wp.resolve_contradiction(
            item.pk, payload.action, text=payload.text or "", actor=Actor.AGENT
        )
    except wp.WritePathError as exc:
        raise write_error(exc) from None
    item = Contradiction.objects.select_related("left", "right").get(pk=item.pk)
    return {"contradiction": contradiction_dict(item), "event_id": event.pk}
