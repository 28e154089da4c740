""" "Why (not) recalled?": for one item and one query, the exact gate that decided it.

Gates in the order the search applies them: the item must exist and belong to the owner,
be of a requested kind, be active and not expired (facts), lie in the time range and the
session (turns, episodes, attachments), be indexed, be a candidate (share a token within
the keyword top k, or be within the vector top k), and finally rank within the limit.
For the last two it also says what would change the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from django.db import DatabaseError
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curator import timetravel
from curator.models import FactStatus
from retrieval import backends, scoring
from retrieval import text as seg
from retrieval.indexing import document_text, item_time
from retrieval.models import Kind, SearchDoc
from retrieval.search import (
    SearchRequest,
    SearchResult,
    display_text,
    gate,
    load_items,
    search,
    to_candidate,
)

NO_KEYWORD_RANK_BEYOND = 5000
# The scoring components as a person reads them (the debugger's sliders and suggestions).
COMPONENT_LABELS = {
    "semantic": gettext_lazy("semantic"),
    "keyword": gettext_lazy("keyword"),
    "freshness": gettext_lazy("freshness"),
    "importance": gettext_lazy("importance"),
    "access": gettext_lazy("access frequency"),
}


@dataclass
class WhyNot:
    kind: str
    id: int
    gate: str  # recalled, below_limit, not_candidate, not_indexed, missing, owner, kind, ...
    message: str
    text: str = ""
    title: str = ""
    rank: int | None = None
    hypothetical_rank: int | None = None
    breakdown: dict = field(default_factory=dict)
    suggestions: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    @property
    def recalled(self) -> bool:
        return self.gate == "recalled"

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "id": self.id,
            "gate": self.gate,
            "message": self.message,
            "rank": self.rank,
            "hypothetical_rank": self.hypothetical_rank,
            "breakdown": self.breakdown,
            "suggestions": self.suggestions,
            "details": self.details,
        }


def _filter_gate(code: str, kind: str, obj, result: SearchResult) -> WhyNot:
    messages = {
        "owner": (_("It belongs to another person's memory."), []),
        "kind": (
            _("Its kind (%(kind)s) is not among the kinds searched.") % {"kind": Kind(kind).label},
            [_("Add %(kind)s to the kinds.") % {"kind": Kind(kind).label}],
        ),
        "superseded": (
            _("It was superseded by a newer version of the same fact."),
            [_("Search with “include inactive” to see history, or revert to this version.")],
        ),
        "archived": (_("It is archived."), [_("Restore it to make it recallable again.")]),
        "rejected": (_("It was rejected."), [_("Restore it to make it recallable again.")]),
        "expired": (
            _("It expired (its retention ran out)."),
            [_("Give it a longer retention (long term or permanent).")],
        ),
        "time": (
            _("It happened at %(time)s, outside the time range.")
            % {"time": item_time(kind, obj).strftime("%Y-%m-%d %H:%M")},
            [_("Widen or clear the time range.")],
        ),
        "session": (_("It belongs to another session."), [_("Clear the session filter.")]),
    }
    message, suggestions = messages.get(
        code, (_("It is filtered out (%(code)s).") % {"code": code}, [])
    )
    title, text = display_text(kind, obj)
    return WhyNot(kind, obj.pk, code, message, text, title, suggestions=suggestions)


def why_not(
    query: str, kind: str, object_id: int, *, result: SearchResult | None = None, **search_args
) -> WhyNot:
    """Explain one item for one query (runs the search unless given its result)."""
    kind = Kind(kind).value
    if result is None:
        result = search(SearchRequest(query, record=False, **search_args))
    obj = load_items([(kind, object_id)]).get((kind, object_id))
    if obj is None:
        return WhyNot(
            kind,
            object_id,
            "missing",
            _("There is no %(kind)s #%(id)s.") % {"kind": Kind(kind).label, "id": object_id},
        )
    if result.as_of is not None and kind == Kind.FACT:
        if (past := _gate_then(obj, result)) is not None:
            return past
    filters = backends.Filters(
        result.owner_id,
        tuple(result.filters["kinds"]),
        # As of a moment, the fact's status then was checked above; today's does not count.
        result.filters["include_inactive"] or result.as_of is not None,
        result.filters["time_from"],
        result.filters["time_to"],
        result.filters["session_id"],
        result.now,
    )
    if code := gate(kind, obj, filters):
        return _filter_gate(code, kind, obj, result)
    title, text = display_text(kind, obj)
    ranked = {s.key: s for s in result.ranked}
    if (scored := ranked.get((kind, object_id))) is not None:
        return _candidate(result, scored, title, text)
    doc = SearchDoc.objects.filter(kind=kind, object_id=object_id).first()
    if doc is None or doc.fts_at is None:
        return WhyNot(
            kind,
            object_id,
            "not_indexed",
            _("It is not in the search index yet."),
            text,
            title,
            suggestions=[_("Wait for the indexing queue, or run `manage.py reindex`.")],
        )
    return _not_candidate(query, result, obj, doc, title, text)


def _candidate(result: SearchResult, scored: scoring.Scored, title: str, text: str) -> WhyNot:
    breakdown = scored.to_dict()["breakdown"]
    if scored.rank <= result.limit:
        message = _("Recalled at rank %(rank)d of %(n)d candidates.") % {
            "rank": scored.rank,
            "n": result.candidates,
        }
        return WhyNot(
            scored.kind,
            scored.object_id,
            "recalled",
            message,
            text,
            title,
            scored.rank,
            breakdown=breakdown,
        )
    message = _("A candidate, but at rank %(rank)d: only the top %(limit)d are returned.") % {
        "rank": scored.rank,
        "limit": result.limit,
    }
    weights = scoring.Weights(**result.weights)
    params = scoring.Params(
        half_life_days=result.params["half_life_days"], normalisation=result.params["normalisation"]
    )
    hints = scoring.what_if(scored.key, result.scoring_input, weights, params, result.limit)
    return WhyNot(
        scored.kind,
        scored.object_id,
        "below_limit",
        message,
        text,
        title,
        scored.rank,
        breakdown=breakdown,
        suggestions=[_describe(h) for h in hints],
        details={"what_if": [h.to_dict() for h in hints]},
    )


def _describe(hint: scoring.WhatIf) -> str:
    if hint.change == "importance":
        return _("Rank %(rank)d if its importance were %(value).1f.") % {
            "rank": hint.rank,
            "value": hint.value,
        }
    return _("Rank %(rank)d if %(component)s had %(share)d%% of the weight.") % {
        "rank": hint.rank,
        "component": COMPONENT_LABELS.get(hint.component, hint.component),
        "share": round(hint.value * 100),
    }


def _gate_then(fact, result: SearchResult) -> WhyNot | None:
    """A search as of a moment: was the fact there, and active, at that moment?"""
    state = timetravel.states_at(result.as_of, fact_ids=[fact.pk]).get(fact.pk)
    when = date_format(timezone.localtime(result.as_of), "Y-m-d H:i")
    if state is None:
        message = _("Fact #%(id)s was written after %(when)s.") % {"id": fact.pk, "when": when}
        return WhyNot(Kind.FACT, fact.pk, "not_yet", message, text=fact.content)
    if not result.filters["include_inactive"] and not timetravel.active_then(state, result.as_of):
        status = FactStatus(state["status"]).label if state["status"] in FactStatus.values else ""
        message = _("At %(when)s fact #%(id)s was no longer active (%(status)s).") % {
            "when": when,
            "id": fact.pk,
            "status": status or _("expired"),
        }
        return WhyNot(Kind.FACT, fact.pk, "inactive_then", message, text=state["content"] or "")
    return None


def _keyword_position(query: str, result: SearchResult, doc_id: int, bm25: float) -> int:
    """How many documents the keyword channel ranks above this one (under the same filters)."""
    filters = backends.Filters(
        result.owner_id,
        tuple(result.filters["kinds"]),
        result.filters["include_inactive"],
        now=result.now,
    )
    hits = backends.keyword_hits(query, result.owner_id, NO_KEYWORD_RANK_BEYOND, filters)
    for position, hit in enumerate(hits, 1):
        if hit.doc_id == doc_id:
            return position
    return len(hits) + 1


def _not_candidate(
    query: str, result: SearchResult, obj, doc: SearchDoc, title: str, text: str
) -> WhyNot:
    kind, details, reasons, suggestions = doc.kind, {}, [], []
    shared = seg.shared_tokens(query, document_text(kind, obj))
    details["shared_tokens"] = shared
    try:
        bm25 = backends.keyword_scores(query, [doc.id]).get(doc.id)
    except DatabaseError:
        bm25 = None
    if bm25 is None:
        reasons.append(_("it shares no keyword with the query"))
        suggestions.append(
            _("If a name or word is split wrongly, add it to the dictionary and reindex.")
        )
    else:
        position = _keyword_position(query, result, doc.id, bm25)
        details.update(bm25=bm25, keyword_position=position)
        reasons.append(
            _("its keyword match ranks %(pos)d, below the keyword top %(k)d")
            % {"pos": position, "k": result.k}
        )
    similarity = _similarity(query, doc.id)
    cutoff = _vector_cutoff(result)
    details.update(similarity=similarity, vector_cutoff=cutoff)
    if similarity is None:
        reasons.append(_("it has no vector yet"))
    else:
        reasons.append(
            _("its similarity %(sim).3f is below the vector top-%(k)d cut-off %(cut)s")
            % {"sim": similarity, "k": result.k, "cut": "—" if cutoff is None else f"{cutoff:.3f}"}
        )
    message = _("Not a candidate: %(reasons)s.") % {"reasons": "; ".join(reasons)}
    suggestions.append(_("Raise the candidates per channel (k) above %(k)d.") % {"k": result.k})
    hypothetical = _hypothetical_rank(result, obj, kind, bm25, similarity)
    return WhyNot(
        kind,
        obj.pk,
        "not_candidate",
        message,
        text,
        title,
        hypothetical_rank=hypothetical,
        suggestions=suggestions,
        details=details,
    )


def _similarity(query: str, doc_id: int) -> float | None:
    try:
        vector = backends.embed_query(query)
        return backends.similarities(vector, [doc_id]).get(doc_id)
    except Exception:  # no embedder or no vector table: the explanation says "no vector"
        return None


def _vector_cutoff(result: SearchResult) -> float | None:
    sims = [
        c.similarity for c in result.scoring_input if c.vector_rank and c.similarity is not None
    ]
    return min(sims) if sims else None


def _hypothetical_rank(result: SearchResult, obj, kind: str, bm25, similarity) -> int | None:
    """Where it would land if it had been a candidate, with its real raw values."""
    candidate = to_candidate(kind, obj, {}, {(kind, obj.pk): similarity}, result.now)
    candidate = replace(candidate, bm25=bm25)
    weights = scoring.Weights(**result.weights)
    params = scoring.Params(
        half_life_days=result.params["half_life_days"], normalisation=result.params["normalisation"]
    )
    return scoring.rank_of(candidate.key, [*result.scoring_input, candidate], weights, params)
