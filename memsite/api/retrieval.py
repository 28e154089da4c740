"""API: hybrid search and the assembled injection context (retrieval.search / retrieval.context,
the same functions the debugger and the jobs call). `run_search` and `run_context` take the
agent and the validated input; the MCP server calls them too. The recall log records which
agent got which items, and an agent's read limits filter what it gets."""

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Router, Schema
from pydantic import StrictBool

from curator import conversations as conv
from memsite.api.common import AUTH_ERRORS, BODY_ERRORS, owner, read_limits
from memsite.api.errors import ApiError
from memsite.api.types import BodyIn, Moment, RangeEnd, RangeStart
from memsite.models import ApiToken
from retrieval import context as contexts
from retrieval import scoring
from retrieval import search as searching
from retrieval.models import Kind

router = Router(tags=["retrieval"])

KindName = Literal[tuple(Kind.values)]
PresetName = Literal[tuple(scoring.PRESETS)]
AS_OF = (
    "Answer with the memory as it stood at this moment: facts active then, as they read "
    "then; episodes, turns and attachments recorded before it. Not logged as a recall. "
    "ISO 8601; without an offset: server time."
)
NO_SESSION = -1  # no Session has this pk: an unknown session_id finds no turns or episodes


def session_pk(external_id: str | None) -> int | None:
    if not external_id:
        return None
    session = conv.session_for(external_id)
    return session.pk if session else NO_SESSION


class SearchIn(BodyIn):
    query: str = Field(min_length=1, max_length=2000)
    kinds: list[KindName] | None = Field(None, description="Default: all kinds.")
    session_id: str | None = Field(
        None, max_length=200, description="Only this session's turns and episodes."
    )
    limit: int = Field(10, ge=1, le=searching.MAX_LIMIT)
    preset: PresetName | None = None
    weights: dict[str, float] | None = Field(
        None, description=f"Custom weights over {', '.join(scoring.COMPONENTS)}."
    )
    mode: Literal[tuple(searching.MODES)] = "hybrid"
    time_from: RangeStart = Field(None, description="ISO 8601; without an offset: server time.")
    time_to: RangeEnd = Field(None, description="Exclusive; far in the future = no bound.")
    include_inactive: StrictBool = False
    explain: StrictBool = Field(False, description="Add each result's score breakdown.")
    as_of: Moment = Field(None, description=AS_OF)


class SearchHit(Schema):
    kind: str
    id: int
    content: str
    score: float
    rank: int
    found_by: str
    time: datetime | None = None
    breakdown: dict[str, dict[str, Any]] | None = Field(
        None, description="component -> {raw, normalized, weight, contribution} (explain)."
    )
    ranks: dict[str, Any] | None = None
    matched: list[str] | None = None
    signals: dict[str, dict[str, Any]] | None = Field(
        None,
        description="The question's signals that moved this result (explain): memory (found "
        "through a fact extracted from it), previous (through the turn before it), time (in "
        "the range searched first), name (shares a name with the question), latest (a "
        "question about now), part (best evidence for one thing the question names).",
    )


class SearchOut(Schema):
    results: list[SearchHit]
    degraded: bool
    degraded_reason: str | None = None
    timings_ms: dict[str, float]
    mode: str | None = None
    preset: str | None = None
    weights: dict[str, float] | None = None
    candidates: int | None = None
    as_of: datetime | None = None
    signals: dict[str, Any] | None = Field(
        None,
        description="What the question says beyond its words: names, time (a range it is "
        "bound to), anchor (before / after an event), latest, parts, searched_first "
        "(the range searched before the whole memory), and as_the_person (a question naming "
        "the person, as the vectors embedded it: in the first person).",
    )


@router.post(
    "/search",
    response={200: SearchOut, **AUTH_ERRORS, **BODY_ERRORS},
    summary="Hybrid search over facts, episodes, turns and attachments",
)
def search(request, payload: SearchIn):
    """Read-only (a read token may call it, though it is a POST). Keyword and vector channels
    are fused; when one fails the result says `degraded` and why, instead of failing."""
    return search_out(searched(request.auth, payload), payload.explain)


def run_search(agent: ApiToken | None, payload: SearchIn, caller: str = "api") -> dict:
    return searched(agent, payload, caller).to_dict(explain=payload.explain)


def search_out(result: searching.SearchResult, explain: bool) -> SearchOut:
    """The response as a SearchOut already, which django-ninja only serialises: validating the
    result's dict again took longer than the search's ranking (values of the declared types:
    the search's own, times as datetimes like validation makes them)."""
    data = result.to_dict(explain)
    hits = [
        SearchHit.model_construct(**{**hit, "time": item.time})
        for hit, item in zip(data["results"], result.items, strict=True)
    ]
    fields = {name: data[name] for name in SearchOut.model_fields if name in data}
    return SearchOut.model_construct(**{**fields, "results": hits, "as_of": result.as_of})


def searched(
    agent: ApiToken | None, payload: SearchIn, caller: str = "api"
) -> searching.SearchResult:
    limits = read_limits(agent)
    try:
        request = searching.SearchRequest(
            payload.query,
            owner=owner(),
            kinds=payload.kinds,
            limit=payload.limit,
            preset=payload.preset,
            weights=payload.weights,
            mode=payload.mode,
            time_from=payload.time_from,
            time_to=payload.time_to,
            session_id=session_pk(payload.session_id),
            include_inactive=payload.include_inactive,
            caller=caller,
            agent_id=agent.pk if agent else None,
            fact_scopes=limits.scopes,
            sessions=limits.sessions,
            as_of=payload.as_of,
        )
        return searching.search(request)
    except searching.SearchError as exc:
        raise ApiError(422, "invalid_search", str(exc)) from None


class ContextIn(BodyIn):
    query: str = Field(max_length=4000, description="The person's latest message.")
    session_id: str | None = Field(None, max_length=200, description="For the recent turns.")
    max_tokens: int | None = Field(None, ge=200, le=100_000)
    evidence: Literal["auto", "always", "never"] = Field(
        "auto",
        description="auto: facts, episodes, raw turns and attachments scoring at least their "
        "kind's recall gate (a turn and the fact made from it once), without the gate and with "
        "a time range when the message points back in time; always: that search for every "
        "message, no gate; never: no evidence.",
    )
    explain: StrictBool = Field(
        False, description="Add each evidence item's score breakdown and what the gate cut."
    )
    as_of: Moment = Field(
        None,
        description="The context the assistant would have been given at this moment: the "
        "cards as they read then, the session's turns before it, evidence from the memory "
        "as it stood. Not logged as a recall.",
    )


class ContextSectionOut(Schema):
    name: str
    tokens: int
    budget: int
    items: list[dict[str, Any]]
    dropped: list[dict[str, Any]] = []


class ContextOut(Schema):
    text: str
    tokens: int
    sections: list[ContextSectionOut]
    budget: dict[str, int]
    triggered: bool
    triggers: list[dict[str, Any]] = []
    time_filter: dict[str, Any] | None = None
    ignored_times: list[str] = Field(
        [], description="Dates in the message that cannot be a time filter (e.g. 9999-12-31)."
    )
    degraded: bool = False
    degraded_reason: str | None = None
    recall: dict[str, Any] = Field(
        default_factory=dict,
        description="How evidence was looked for: mode (gated, triggered, always, off), kinds, "
        "gate (the facts'), gates (per kind), cut_by_gate; with explain also `cut`, the best "
        "items under their gate. Each gated evidence item has its gate_score and gate; a fact "
        "extracted from a turn its source_turn.",
    )
    as_of: datetime | None = None


@router.post(
    "/context",
    response={200: ContextOut, **AUTH_ERRORS, **BODY_ERRORS},
    summary="The injection context for a message: cards, recent turns, evidence",
)
def context(request, payload: ContextIn):
    """Within max_tokens (default 4000: cards 600, turns 2000, evidence 900, reserve 500);
    over budget, evidence is cut first, then turns, never the cards (seed 000 section 5)."""
    return run_context(request.auth, payload)


def run_context(agent: ApiToken | None, payload: ContextIn, caller: str = "api") -> dict:
    limits = read_limits(agent)
    try:
        result = contexts.assemble(
            payload.query,
            owner=owner(),
            session_id=payload.session_id or None,
            max_tokens=payload.max_tokens,
            evidence_mode=payload.evidence,
            caller=caller,
            agent_id=agent.pk if agent else None,
            fact_scopes=limits.scopes,
            sessions=limits.sessions,
            as_of=payload.as_of,
        )
    except searching.SearchError as exc:
        raise ApiError(422, "invalid_search", str(exc)) from None
    data = result.to_dict(explain=payload.explain)
    if payload.explain and result.search is not None:
        _add_breakdowns(data, result.search)
    return data


def _add_breakdowns(data: dict, found) -> None:
    by_key = {(item.kind, item.id): item.breakdown for item in found.items}
    for section in data["sections"]:
        for item in section["items"]:
            if (key := (item.get("kind"), item.get("id"))) in by_key:
                item["breakdown"] = by_key[key]
