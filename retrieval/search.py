"""The search service: one function the API, the debugger, context assembly and the
benchmarks all call, returning a dataclass that serialises with `to_dict()`.

Pipeline: segment the query; FTS; embed the query (recent queries are kept in memory);
KNN; load the candidates and re-check every filter against the items themselves; score
with the pure scoring module;
then, for callers that recall (not the debugger), bump access counters and write the
recall log. Failures degrade instead of raising (seed 000 section 8): no vectors -> keyword
only; no keyword index -> vectors only; neither -> the most recent turns. Each failure
writes a `retrieval_fail` MemoryEvent and the result says it is degraded and why.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, make_dataclass, replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import DateTimeField
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from curator import timetravel
from curator.guard import rules as guard
from curator.models import (
    Actor,
    Attachment,
    ConversationTurn,
    Episode,
    EventType,
    Fact,
    MemoryEvent,
    Owner,
    Role,
)
from retrieval import backends, decompose, keywords, matrix, scoring, signals, userdict
from retrieval import text as seg
from retrieval.backends import ALL_KINDS, EVENT_KINDS, Filters, Hit
from retrieval.embedders import EmbeddingError, LocalEmbedder, get_embedder, query_cache
from retrieval.indexing import VectorState, item_time, search_space
from retrieval.models import Kind, RecallHit, RecallLog

log = logging.getLogger(__name__)
MODES = ("hybrid", "keyword", "semantic")
MAX_LIMIT = 50


class SearchError(ValueError):
    """The request itself is wrong (unknown preset, bad weights...): a 4xx, not a degradation."""


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


@dataclass
class SearchItem:
    kind: str
    id: int
    content: str
    score: float
    rank: int
    found_by: str
    ranks: dict
    time: datetime | None
    title: str = ""
    status: str = "active"
    session_id: int | None = None
    signals: dict = field(default_factory=dict)
    # What `breakdown` and `matched` are made from, when first read: the API shows them only
    # with explain (off by default), and building them (rounding 20 values, segmenting the
    # text) cost more than ranking the item.
    scored: scoring.Scored | None = field(default=None, repr=False, compare=False)
    query_tokens: list[str] = field(default_factory=list, repr=False, compare=False)

    @functools.cached_property
    def breakdown(self) -> dict:
        return self.scored.breakdown_dict() if self.scored is not None else {}

    @functools.cached_property
    def matched(self) -> list[str]:
        return seg.shared_tokens("", f"{self.title}\n{self.content}", self.query_tokens)

    def to_dict(self, explain: bool = True) -> dict:
        data = {
            "kind": self.kind,
            "id": self.id,
            "content": self.content,
            "score": round(self.score, 6),
            "rank": self.rank,
            "found_by": self.found_by,
            "time": self.time.isoformat() if self.time else None,
        }
        if explain:
            data.update(
                ranks=self.ranks,
                breakdown=self.breakdown,
                matched=self.matched,
                signals=self.signals,
            )
        return data

    @property
    def components(self) -> list[tuple[str, dict]]:
        return list(self.breakdown.items())


@dataclass
class SearchResult:
    query: str
    owner_id: int
    mode: str
    preset: str
    weights: dict
    params: dict
    items: list[SearchItem]
    tokens: list[str]
    degraded: bool = False
    degraded_reasons: list[str] = field(default_factory=list)
    channels: dict = field(default_factory=dict)
    timings_ms: dict = field(default_factory=dict)
    candidates: int = 0
    limit: int = 10
    k: int = 50
    filters: dict = field(default_factory=dict)
    now: datetime | None = None
    as_of: datetime | None = None
    # What the query itself says (signals.QuerySignals.to_dict) and the range searched first.
    signals: dict = field(default_factory=dict)
    # The weights before this question's channel shares (scoring.question_shares): what the
    # recall gates were chosen with, so /context's absolute scores keep their meaning.
    base_weights: dict | None = None
    # Everything scored, kept in memory only (the debugger's "why not" and charts use it).
    ranked: list = field(default_factory=list, repr=False)
    scoring_input: list = field(default_factory=list, repr=False)

    @property
    def degraded_reason(self) -> str:
        return "; ".join(self.degraded_reasons)

    def to_dict(self, explain: bool = True) -> dict:
        return {
            "query": self.query,
            "mode": self.mode,
            "preset": self.preset,
            "weights": self.weights,
            "results": [item.to_dict(explain) for item in self.items],
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason or None,
            "channels": self.channels,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "candidates": self.candidates,
            "tokens": self.tokens,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "signals": self.signals,
        }


# --------------------------------------------------------------------------------------
# Request handling
# --------------------------------------------------------------------------------------


def resolve_owner(owner) -> Owner:
    if owner is None:
        return Owner.default()
    if isinstance(owner, Owner):
        return owner
    return Owner.objects.get(pk=owner)


def resolve_weights(preset: str | None, weights) -> tuple[str, scoring.Weights, scoring.Params]:
    """A preset name and/or custom weights -> (label, weights, params). Raises SearchError."""
    name = preset or settings.SEARCH_PRESET
    if name not in scoring.PRESETS:
        raise SearchError(_("Unknown preset %(name)s.") % {"name": name})
    chosen = scoring.PRESETS[name]
    if weights is None:
        return name, chosen.weights, chosen.params
    params = replace(chosen.params, per_question=False)  # the caller's weights, as given
    if isinstance(weights, dict):
        weights = dict(weights)
        if (half_life := weights.pop("half_life_days", None)) is not None:
            params = scoring.Params(half_life_days=float(half_life))
        unknown = set(weights) - set(scoring.COMPONENTS)
        if unknown:
            raise SearchError(
                _("Unknown weight: %(names)s.") % {"names": ", ".join(sorted(unknown))}
            )
        try:
            weights = scoring.Weights(**{k: float(v) for k, v in weights.items()})
        except (TypeError, ValueError) as exc:
            raise SearchError(str(exc)) from exc
    if weights.total <= 0:
        raise SearchError(_("At least one weight must be above 0."))
    return "custom", weights, params


def clean_kinds(kinds: Iterable[str] | None) -> tuple[str, ...]:
    if not kinds:
        return ALL_KINDS
    chosen = tuple(dict.fromkeys(kinds))
    if bad := [k for k in chosen if k not in ALL_KINDS]:
        raise SearchError(_("Unknown kind: %(kinds)s.") % {"kinds": ", ".join(bad)})
    return chosen


@contextmanager
def _savepoint():
    """Inside a transaction a failed query must not poison it; outside, take no write lock."""
    if connection.in_atomic_block:
        with transaction.atomic():
            yield
    else:
        yield


def record_failure(owner: Owner, stage: str, error: Exception | str, query: str, actor: str):
    """A retrieval_fail event (seed 000 section 8): what failed, why, and what we fell back to."""
    message = str(error)[:500]
    log.warning("retrieval %s failed: %s", stage, message)
    try:
        MemoryEvent.objects.create(
            owner=owner,
            event_type=EventType.RETRIEVAL_FAIL,
            actor=actor if actor in Actor.values else Actor.AGENT,
            payload={"stage": stage, "error": message, "query": query[:200]},
        )
    except DatabaseError:  # the database itself is failing: the log line is all we can do
        log.exception("could not record the retrieval failure")


# --------------------------------------------------------------------------------------
# Loading candidates
# --------------------------------------------------------------------------------------


def load_items(keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], object]:
    """The items behind candidate keys, in as many queries as kinds."""
    by_kind: dict[str, list[int]] = {}
    for kind, object_id in keys:
        by_kind.setdefault(kind, []).append(object_id)
    found = {}
    for kind, ids in by_kind.items():
        # Large JSON columns are never shown here: decoding them would cost more than the search.
        if kind == Kind.FACT:
            rows = Fact.objects.filter(pk__in=ids).defer("tags")
        elif kind == Kind.EPISODE:
            rows = Episode.objects.filter(pk__in=ids).defer("action_nodes", "tools_used")
        elif kind == Kind.TURN:
            rows = (
                ConversationTurn.objects.filter(pk__in=ids)
                .select_related("session")
                .defer("tool_calls", "tool_results")
            )
        else:
            rows = Attachment.objects.filter(pk__in=ids)
        found.update(((kind, obj.pk), obj) for obj in rows)
    return found


class Row:
    """An item's fields the search needs, without building a model instance (3x cheaper).
    Each kind's rows are a slotted class of their own (_row_query): made from the statement's
    tuple in one call, 4x faster than a namespace built from a dict of the same fields."""

    __slots__ = ()

    @property
    def pk(self) -> int:
        return self.id


ROW_FIELDS = {
    Kind.FACT: "id owner_id subject predicate content status expires_at updated_at created_at "
    "importance access_count scope source_turn_id supersedes_id".split(),
    Kind.EPISODE: "id owner_id session_id summary goal started_at ended_at importance "
    "access_count".split(),
    Kind.TURN: "id session_id turn_index role content timestamp session__owner_id "
    "session__title session__external_id".split(),
    Kind.ATTACHMENT: "id owner_id session_id original_name description extracted_text "
    "created_at".split(),
}
ROW_MODELS = {
    Kind.FACT: Fact,
    Kind.EPISODE: Episode,
    Kind.TURN: ConversationTurn,
    Kind.ATTACHMENT: Attachment,
}


def load_rows(keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], Row]:
    """Like load_items, as light rows: what the search path uses for its candidates."""
    by_kind: dict[str, list[int]] = {}
    for kind, object_id in keys:
        by_kind.setdefault(kind, []).append(object_id)
    found = {}
    for kind, ids in by_kind.items():
        query = _row_query(Kind(kind))
        with connection.cursor() as cur:
            cur.execute(query.sql, [json.dumps(ids)])
            found.update(((kind, row.id), row) for row in map(query.row, cur.fetchall()))
    return found


@dataclass(frozen=True)
class _RowQuery:
    sql: str
    names: list[str]
    dates: list[int]  # positions of datetime columns, selected as text (see _row_query) for _utc
    session: int | None  # where the session__ columns start (nested as row.session, like the
    # model's), None when there are none
    make: type  # the kind's Row class

    def row(self, values: tuple) -> Row:
        if self.dates:
            values = list(values)
            for at in self.dates:
                if (text := values[at]) is not None:
                    values[at] = _utc(text)
        if self.session is not None:
            own, joined = values[: self.session], values[self.session :]
            names = self.names[self.session :]
            values = (
                *own,
                SimpleNamespace(**{n[9:]: v for n, v in zip(names, joined, strict=True)}),
            )
        return self.make(*values)


def _utc(text: str) -> datetime:
    """A datetime column's text (Django stores naive UTC) as an aware datetime."""
    try:
        return datetime.fromisoformat(text + "+00:00")  # Django's spelling: one C call
    except ValueError:  # any other spelling: Django's own parser, as its converter would
        value = parse_datetime(text)
        return value if value.tzinfo else value.replace(tzinfo=UTC)


@functools.cache
def _row_query(kind: Kind) -> _RowQuery:
    """The ORM's SELECT of ROW_FIELDS, compiled once, for ids passed as one JSON array.

    Through a queryset, compiling and converting cost 2 ms for 150 candidates, four times
    the query itself; one statement text also lets SQLite reuse its prepared statement.
    """
    model, names = ROW_MODELS[kind], ROW_FIELDS[kind]
    table = model._meta.db_table
    sql, _params = model.objects.order_by().values(*names).query.sql_with_params()
    dates = [name for name in names if isinstance(_field(model, name), DateTimeField)]
    for name in dates:
        # `+column` has no declared type, so the driver leaves its text to _utc instead of
        # running Django's converter on it (a regular expression in Python, then a replace).
        column = f'"{table}"."{name}" AS "{name}"'
        assert sql.count(column) == 1, column
        sql = sql.replace(column, f"+{column}")
    sql += f' WHERE "{table}"."id" IN (SELECT value FROM json_each(%s))'
    session = [name for name in names if name.startswith("session__")]
    assert names[len(names) - len(session) :] == session, "session__ columns come last"
    own = names[: len(names) - len(session)] + (["session"] if session else [])
    make = make_dataclass(f"{model.__name__}Row", own, bases=(Row,), slots=True, eq=False)
    starts = len(names) - len(session) if session else None
    return _RowQuery(sql, names, [names.index(n) for n in dates], starts, make)


def _field(model, path: str):
    *relations, name = path.split("__")
    for relation in relations:
        model = model._meta.get_field(relation).related_model
    return model._meta.get_field(name)


def owner_id_of(kind: str, obj) -> int:
    return obj.session.owner_id if kind == Kind.TURN else obj.owner_id


def gate(kind: str, obj, f: Filters) -> str | None:
    """Why an item may not be returned under these filters (None: it may)."""
    if owner_id_of(kind, obj) != f.owner_id:
        return "owner"
    if kind not in f.kinds:
        return "kind"
    if kind == Kind.FACT and f.fact_scopes is not None and obj.scope not in f.fact_scopes:
        return "scope"
    if kind != Kind.FACT and f.sessions is not None and obj.session_id not in f.sessions:
        return "scope"
    if kind == Kind.FACT and not f.include_inactive:
        if obj.status != "active":
            return obj.status
        if obj.expires_at and obj.expires_at <= f.now:
            return "expired"
    if kind in EVENT_KINDS:
        when = item_time(kind, obj)
        if (f.time_from and when < f.time_from) or (f.time_to and when >= f.time_to):
            return "time"
        if f.session_id and obj.session_id != f.session_id:
            return "session"
    return None


def display_text(kind: str, obj) -> tuple[str, str]:
    """(title, content) as a person reads the item."""
    if kind == Kind.FACT:
        title = " / ".join(p for p in (obj.subject, obj.predicate) if p)
        return title, obj.content
    if kind == Kind.EPISODE:
        return obj.goal, obj.summary
    if kind == Kind.TURN:
        return (
            # As pages show a turn: counted from 1, the role in the reader's language.
            f"{obj.session.title or obj.session.external_id} #{obj.turn_index + 1} "
            f"{Role(obj.role).label if obj.role in Role.values else obj.role}",
            obj.content,
        )
    body = " — ".join(p for p in (obj.description, obj.extracted_text[:300]) if p)
    return obj.original_name, body or obj.original_name


_RATED_KINDS = frozenset({Kind.FACT.value, Kind.EPISODE.value})  # those with an importance


def to_candidate(kind: str, obj, hits: dict, sims: dict, now: datetime) -> scoring.Candidate:
    kw, vec = hits.get("keyword"), hits.get("vector")
    rated = kind in _RATED_KINDS
    return scoring.Candidate(
        kind,
        obj.pk,
        (1.0 - vec[1].raw) if vec else sims.get((kind, obj.pk)),
        vec[0] if vec else None,
        kw[1].raw if kw else None,
        kw[0] if kw else None,
        (now - item_time(kind, obj)).total_seconds() / 86400,
        getattr(obj, "importance", None) if rated else None,
        (getattr(obj, "access_count", 0) or 0) if rated else 0,
    )


# --------------------------------------------------------------------------------------
# The search
# --------------------------------------------------------------------------------------


@dataclass
class _Channels:
    keyword: list[Hit] | None = None  # None: not run or failed
    vector: list[Hit] | None = None
    query_vector: object = None
    rows: dict = field(default_factory=dict)  # keyword candidates, loaded while KNN ran
    # The keyword candidates' stored vectors, read while the query was being embedded
    # (None: not read then; _missing_similarities reads what it needs).
    vectors: dict | None = None
    # Each part of the question's keyword hits (_part_keys), found while the query was being
    # embedded (None: not searched then).
    parts: dict[str, list] | None = None
    failures: list[tuple[str, str]] = field(default_factory=list)  # (stage, message)
    unavailable: list[tuple[str, str]] = field(default_factory=list)  # known states, no event


# One embedding per core at a time: more would only slice the same cores thinner.
_EMBEDDING_POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 2, thread_name_prefix="embed")


def _run_channels(
    query: str,
    f: Filters,
    mode: str,
    k: int,
    timings: dict,
    meaning: str | None = None,
    parts: tuple[str, ...] = (),
) -> _Channels:
    """The query embedding and then KNN run in a worker thread while FTS runs here. The
    engine releases the GIL and runs on one OpenMP thread (settings), and SQLite releases it
    too, so the two use both cores: the slower of the two is the wait, not their sum. The
    question's `parts` are searched (keywords) in that wait too, when there is one."""
    out = _Channels()
    want_vec, want_kw = mode in ("hybrid", "semantic"), mode in ("hybrid", "keyword")
    meaning = meaning or query  # what the vector channel embeds (signals.person_lines)
    vector = _start_vector(meaning, f, k, out, inline=not want_kw) if want_vec else None
    if want_kw:
        started = time.perf_counter()
        try:
            with _savepoint():
                out.keyword = backends.keyword_hits(query, f.owner_id, k, f)
        except DatabaseError as exc:
            out.failures.append(("keyword", str(exc)))
        timings["fts"] = (time.perf_counter() - started) * 1000
    if vector is not None:
        if out.keyword:  # the worker is usually still busy: use the wait
            started = time.perf_counter()
            out.rows = load_rows((hit.kind, hit.object_id) for hit in out.keyword)
            if not vector.done():
                out.vectors = _stored_vectors([hit.doc_id for hit in out.keyword])
            timings["load"] = (time.perf_counter() - started) * 1000
        if parts and not vector.done():  # else after KNN, as _part_hits would
            started = time.perf_counter()
            out.parts = _part_keys(parts, f)
            timings["parts"] = (time.perf_counter() - started) * 1000
        _finish_vector(vector, out, f, k, timings)
    return out


def _start_vector(
    query: str, f: Filters, k: int, out: _Channels, inline: bool = False
) -> Future | None:
    """The embedding and KNN, in a worker beside FTS; `inline` (no FTS to overlap, a
    vector-only search) runs them here, sparing two thread hand-offs."""
    state = _vector_state_safe()
    if not state.ok:
        (out.failures if state.broken else out.unavailable).append(("vector", state.reason))
        return None
    if not inline:
        # The worker only embeds (the engine releases the GIL); KNN runs here after FTS.
        # In the worker, its Python and numpy steps fought FTS for the GIL: on a busy
        # machine a hybrid search took 14.6 ms (median) where its stages added up to 9.5.
        return _EMBEDDING_POOL.submit(_embed_and_knn, get_embedder(), query, None)
    # (A worker's own connection could not see rows of a transaction still open here.)
    knn = None if connection.in_atomic_block else (f, k)
    done: Future = Future()
    try:
        done.set_result(_embed_and_knn(get_embedder(), query, knn))
    except Exception as exc:  # raised again by result(), as from the worker
        done.set_exception(exc)
    return done


def _embed_and_knn(embedder, query: str, knn: tuple | None) -> tuple:
    started = time.perf_counter()
    vector = query_cache.get(embedder, query)
    embedded = time.perf_counter()
    hits = backends.vector_hits_for(vector, *knn) if knn else None
    done = time.perf_counter()
    return vector, hits, {"embedding": (embedded - started) * 1000, "knn": (done - embedded) * 1000}


def _finish_vector(vector: Future, out: _Channels, f: Filters, k: int, timings: dict):
    try:
        out.query_vector, out.vector, worker_timings = vector.result()
        timings.update(worker_timings)
        if out.vector is None:
            started = time.perf_counter()
            with _savepoint():
                out.vector = backends.vector_hits_for(out.query_vector, f, k)
            timings["knn"] = (time.perf_counter() - started) * 1000
    except (EmbeddingError, DatabaseError) as exc:
        out.failures.append(("vector", str(exc)))


def _vector_state_safe() -> VectorState:
    try:
        return search_space()[0]
    except DatabaseError as exc:
        return VectorState(False, "", 0, str(exc), broken=True)


def _merge(channels: _Channels) -> dict[tuple[str, int], dict]:
    merged: dict[tuple[str, int], dict] = {}
    for name, hits in (("keyword", channels.keyword), ("vector", channels.vector)):
        for position, hit in enumerate(hits or [], 1):
            merged.setdefault((hit.kind, hit.object_id), {})[name] = (position, hit)
    return merged


def _stored_vectors(doc_ids: list[int]) -> dict | None:
    """The stored vectors of these documents (None if SQLite failed: read them later)."""
    try:
        with _savepoint():
            return backends.float_vectors(doc_ids)
    except DatabaseError:
        return None


def _missing_similarities(channels: _Channels, merged: dict) -> dict:
    """Exact cosine for keyword-only candidates: their breakdown shows a real semantic value.
    Their vectors were usually read while the query was embedded: after KNN, reading them
    was one more SQLite statement on the way to the answer."""
    if channels.query_vector is None or channels.vector is None:
        return {}
    need = {hits["keyword"][1].doc_id: key for key, hits in merged.items() if "vector" not in hits}
    if channels.vectors is not None:
        query, held = channels.query_vector, channels.vectors
        sims = {d: float(held[d] @ query) for d in need if d in held}  # as similarities()
    else:
        try:
            with _savepoint():
                sims = backends.similarities(channels.query_vector, list(need))
        except DatabaseError:
            return {}
    return {need[doc_id]: value for doc_id, value in sims.items()}


def _recent_fallback(f: Filters, limit: int) -> list[tuple[tuple[str, int], object]]:
    """Neither index answers: the newest turns (seed 000: recent turns and the core cards)."""
    turns = ConversationTurn.objects.filter(session__owner_id=f.owner_id).select_related("session")
    if f.session_id:
        turns = turns.filter(session_id=f.session_id)
    if f.sessions is not None:
        turns = turns.filter(session_id__in=f.sessions)
    if f.time_from:
        turns = turns.filter(timestamp__gte=f.time_from)
    if f.time_to:
        turns = turns.filter(timestamp__lt=f.time_to)
    return [((Kind.TURN.value, t.pk), t) for t in turns.order_by("-timestamp", "-pk")[:limit]]


# The query's signals (retrieval/signals.py), chosen on the tuning splits (docs/retrieval.md):
# how much each multiplies a score, how deep a part of the question is searched, and within
# which top a part's best evidence is kept.
NAME_SHARE = 0.1
LATEST_SHARE = 0.2
# A time-bound question: items in the range it names rank first while they score at least
# this share of the best candidate (below it, nothing in the range is about the question).
TIME_FLOOR = 0.3
PART_K = 10
# The assistant's reply inherits the meaning of the turn before it only when that turn asks
# something: "Did you go in March?" -> "Yes, with my sister" is found by its question, but
# "好的，我记下了。" after a person's statement is not evidence of it and took places from the
# person's other relevant turns (docs/retrieval.md#the-questions-signals).
PREVIOUS_ASKS_ONLY = True
# "上次登山之后": the item found for the anchor must contain one of its words, not only one of
# its characters (a turn about 一座山 is no 登山), or no range is searched: the range after a
# wrong anchor leaves out the event asked about.
ANCHOR_NEEDS_WORD = True
# A turn said by a person the question names ("Joanna: I made a cake" for "What has Joanna
# made?") is that person's own statement: it scores up to this share more. A turn by another
# speaker that only addresses the person ("Wow Joanna, ...") is not boosted (LoCoMo tuning
# split: R@5 .626 -> .630, multi-hop .300 -> .311); a turn without a speaker keeps NAME_SHARE.
SPEAKER_SHARE = 0.2


def _search_range_first(
    query: str,
    asked: signals.QuerySignals,
    f: Filters,
    mode: str,
    k: int,
    channels: _Channels,
    timings: dict,
) -> signals.TimeRange | None:
    """A question bound to a time searches that range too: its items join the candidates even
    when the whole memory's top k had no room for them, and _boosts raises them. A range the
    caller gave is a filter already."""
    if f.time_from or f.time_to:
        return None
    wanted = asked.time or _anchor_range(asked, f)
    if wanted is None:
        return None
    started = time.perf_counter()
    scoped = replace(f, time_from=wanted.start, time_to=wanted.end)
    inner = _run_channels(query, scoped, mode, k, {}, asked.person)
    channels.keyword = _union(channels.keyword, inner.keyword)
    channels.vector = _union(channels.vector, inner.vector)
    channels.rows.update(inner.rows)
    if channels.vectors is not None:
        channels.vectors = None if inner.vectors is None else channels.vectors | inner.vectors
    timings["time_range"] = (time.perf_counter() - started) * 1000
    return wanted


def _union(first: list[Hit] | None, second: list[Hit] | None) -> list[Hit] | None:
    """Two hit lists of one channel and query, best first (both raw values: lower is better;
    a document scores the same in a scoped search as in the whole memory)."""
    if first is None or second is None:
        return first if second is None else second
    seen = {hit.doc_id for hit in first}
    return sorted([*first, *(h for h in second if h.doc_id not in seen)], key=lambda h: h.raw)


def _anchor_range(asked: signals.QuerySignals, f: Filters) -> signals.TimeRange | None:
    """ "before I moved": the range before the time of the item that best matches "moved"."""
    if not asked.anchor:
        return None
    anyone = Filters(f.owner_id, now=f.now, fact_scopes=f.fact_scopes, sessions=f.sessions)
    try:
        with _savepoint():
            hits = backends.keyword_hits(asked.anchor, f.owner_id, 1, anyone)
            rows = load_rows((hit.kind, hit.object_id) for hit in hits)
    except DatabaseError:
        return None
    if not rows:
        return None
    (kind, _pk), obj = next(iter(rows.items()))
    if ANCHOR_NEEDS_WORD and not seg.shared_tokens(asked.anchor, display_text(kind, obj)[1]):
        return None
    when, text = item_time(kind, obj), f"{asked.anchor_side} {asked.anchor}"
    if asked.anchor_side == "before":
        return signals.TimeRange(signals.timeparse.FIRST_USABLE, when, text)
    return signals.TimeRange(when, max(when, f.now) + timedelta(seconds=1), text)


def _part_hits(
    asked: signals.QuerySignals, f: Filters, merged: dict, found: dict | None = None
) -> dict[str, list]:
    """Each part of a question naming two things, searched on its own (keywords): its hits
    join the candidates, and _interleave_parts gives each part places in the top k. `found`:
    those searches made already (while the query was embedded)."""
    found = _part_keys(asked.parts, f) if found is None else found
    for keys in found.values():
        for key in keys:
            merged.setdefault(key, {})
    return found


def _part_keys(parts: tuple[str, ...], f: Filters) -> dict[str, list]:
    found = {}
    for part in parts:
        try:
            with _savepoint():
                hits = backends.keyword_hits(part, f.owner_id, PART_K, f)
        except DatabaseError:
            continue
        found[part] = [(hit.kind, hit.object_id) for hit in hits]
    return found


def _linked_turns(live: dict, merged: dict, links: scoring.Links, f: Filters) -> dict:
    """Turns found through what stands for them (scoring.Links): the facts extracted from them
    (memory keys), and the turn before them, for the vector channel (keywords have the
    context column). Returns the linked turns that were not candidates yet.

    Memory keys apply only when facts are not asked for themselves: when they are, the fact
    is the evidence, and a turn lifted beside it would take a second place in the top k for
    the same thing (bench/context.py, LoCoMo, evidence always: .691 of questions with gold
    in the context with the lift, .721 without it, .717 before round two)."""
    if Kind.TURN not in f.kinds:
        return {}
    for (kind, pk), obj in live.items():
        if Kind.FACT in f.kinds:
            break
        if kind == Kind.FACT and getattr(obj, "source_turn_id", None):
            links.memory.setdefault((Kind.TURN.value, obj.source_turn_id), []).append((kind, pk))
    by_vector = [key[1] for key in live if key[0] == Kind.TURN and "vector" in merged.get(key, {})]
    try:
        links.previous = _next_turns(by_vector)
        missing = [key for key in (*links.memory, *links.previous) if key not in live]
        rows = load_rows(missing) if missing else {}
    except DatabaseError:
        return {}
    if PREVIOUS_ASKS_ONLY:
        links.previous = _answers_only(links.previous, live, rows)
    linked = links.memory.keys() | links.previous.keys()
    return {key: obj for key, obj in rows.items() if key in linked and gate(key[0], obj, f) is None}


def _answers_only(previous: dict[tuple, tuple], live: dict, rows: dict) -> dict[tuple, tuple]:
    """The pairs where the later turn answers: the assistant's reply to a turn that asks
    nothing ("好的，我记下了。" after "我朋友小林在广告公司画图") acknowledges it and is left
    out. `rows`: the later turns that are not candidates themselves."""
    kept = {}
    for after, before in previous.items():
        row = live.get(after) or rows.get(after)
        reply = row is not None and row.role == Role.ASSISTANT
        if not reply or signals.asks(live[before].content):
            kept[after] = before
    return kept


def _next_turns(turn_ids: list[int]) -> dict[tuple, tuple]:
    """{the turn after each: the turn} in one statement."""
    if not turn_ids:
        return {}
    table = ConversationTurn._meta.db_table
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT n.id, p.id FROM {table} p JOIN {table} n ON n.session_id = p.session_id "
            f"AND n.turn_index = (SELECT min(x.turn_index) FROM {table} x "
            "WHERE x.session_id = p.session_id AND x.turn_index > p.turn_index) "
            "WHERE p.id IN (SELECT value FROM json_each(%s))",
            [json.dumps(turn_ids)],
        )
        return {(Kind.TURN.value, n): (Kind.TURN.value, p) for n, p in cur.fetchall()}


def _boosts(asked, searched, live: dict, candidates, person: str = "") -> dict[tuple, list]:
    """Per candidate, the query's signals it shares: a name, the range searched first, and
    for a question about the present, how new it is among the candidates.

    The person's own name (`person`, the owner's display name) is shared by the turns they
    said, not by turns that contain it: those are mostly the other side addressing them
    ("Hey Evan, what's up?")."""
    boosts: dict[tuple, list] = {}
    theirs = tuple(n for n in asked.names if person and n.lower() == person.lower())
    for (kind, pk), obj in live.items() if asked.names else ():  # most questions name no one
        title, content = display_text(kind, obj)
        text = content if kind == Kind.TURN else f"{title}\n{content}"
        names = signals.names_in(text, asked.names)
        if kind == Kind.TURN and theirs:  # the person's own name: what they said, not to them
            names = [n for n in names if n not in theirs]
            if obj.role == Role.USER:
                detail = {"names": [*theirs, *names], "speaker": True}
                boosts[(kind, pk)] = [("name", SPEAKER_SHARE, detail)]
                continue
        if names:
            share, detail = _name_share(kind, content, names)
            if share:
                boosts[(kind, pk)] = [("name", share, {"names": names, **detail})]
    if asked.latest:
        current = [c for c in candidates if getattr(live[c.key], "status", "active") == "active"]
        current.sort(key=lambda c: c.age_days)
        for position, c in enumerate(current):
            share = LATEST_SHARE * (1 - position / len(current))
            boosts.setdefault(c.key, []).append(("latest", share, {"newest": position + 1}))
    return boosts


def _name_share(kind: str, content: str, names: list[str]) -> tuple[float, dict]:
    """How much a name shared with the question lifts an item: more when a turn is said by
    the person named, nothing when it is said by someone else addressing them."""
    speaker = decompose.speaker_of(content) if kind == Kind.TURN else ""
    if not speaker:
        return NAME_SHARE, {}
    if any(name.lower() == speaker for name in names):
        return SPEAKER_SHARE, {"speaker": True}
    return 0.0, {}


# Each channel's best hit stays within the top 5: the fused ranking then never misses what
# either channel alone ranks first (on the tuning splits R@5 +0.2 LoCoMo, +2.0 zh, +3.2 en).
CHANNEL_BEST_WITHIN = 5


def _channel_bests_kept(ranked: list, within: int) -> list:
    """The keyword and the vector channel's best candidates moved into the top `within`
    (at its end, in rank order) when the fusion put them below it."""
    bests = []
    for channel in ("keyword", "vector"):
        found = [s for s in ranked if s.ranks.get(channel)]
        if found:
            best = min(found, key=lambda s: s.ranks[channel])
            if best not in ranked[:within] and best not in bests:
                bests.append(best)
    if not bests:
        return ranked
    head = [s for s in ranked[:within] if s not in bests][: within - len(bests)]
    out = head + sorted(bests, key=ranked.index) + [s for s in ranked if s not in head + bests]
    for n, s in enumerate(out, 1):
        s.rank = n
    return out


def _range_first(ranked: list, live: dict, searched: signals.TimeRange) -> list:
    """Items of the range a question is bound to first (those scoring at least TIME_FLOOR of
    the best), then everything else: "去年夏天" finds last summer's trip before a better
    worded one from this spring."""
    floor = TIME_FLOOR * (ranked[0].score if ranked else 0.0)
    first, rest = [], []
    for item in ranked:
        when = item_time(item.kind, live[item.key])
        inside = item.kind in EVENT_KINDS and searched.start <= when < searched.end
        if inside and item.score >= floor:
            item.signals["time"] = searched.to_dict()
            first.append(item)
        else:
            rest.append(item)
    for n, item in enumerate(first + rest, 1):
        item.rank = n
    return first + rest


def _newest_of_chains(ranked: list, live: dict) -> list:
    """A question about the present: a fact ranks above the one it superseded, however much
    better the old wording matched."""
    for item in list(ranked):
        old = getattr(live.get(item.key), "supersedes_id", None) if item.kind == Kind.FACT else None
        keys = [s.key for s in ranked]
        if old and (Kind.FACT.value, old) in keys:
            before = keys.index((Kind.FACT.value, old))
            if keys.index(item.key) > before:
                ranked.remove(item)
                ranked.insert(before, item)
                item.signals["latest"] = {**item.signals.get("latest", {}), "supersedes": old}
    for n, s in enumerate(ranked, 1):
        s.rank = n
    return ranked


def _interleave_parts(ranked: list, parts: dict[str, list], limit: int) -> list:
    """A question naming two things: each part's own keyword ranking woven into the whole
    question's, round robin over the first `limit` places (retrieval.decompose), so every
    part gets places in the top k. Each item a part placed, and each part's best, says
    which part it is evidence for, of how many."""
    if not parts:
        return ranked
    by_key = {s.key: s for s in ranked}
    lists = [[k for k in keys if k in by_key] for keys in parts.values()]
    order, placed = decompose.interleave([s.key for s in ranked], lists, limit)
    for n, keys in enumerate(lists, 1):  # each part's best is its evidence, whoever placed it
        if keys and keys[0] in order[:limit]:
            placed.setdefault(keys[0], n)
    texts = list(parts)
    for key, n in placed.items():
        by_key[key].signals["part"] = {"text": texts[n - 1], "n": n, "of": len(texts)}
    out = [by_key[key] for key in order]
    for n, s in enumerate(out, 1):
        s.rank = n
    return out


@dataclass(frozen=True)
class SearchRequest:
    """One search, as every caller builds it (the API and MCP, the debugger, /context,
    replays, regression checks), like backends.Filters is for the filters.

    `record=False` (the debugger) neither bumps access counters nor writes the recall log:
    looking is not recalling. `agent_id` is the agent receiving the results (the recall log
    says who got what); `fact_scopes` and `sessions` are its read limits (backends.Filters).
    `as_of` answers with the memory as it stood then: facts active at that moment, as they
    read then (curator.timetravel), and episodes, turns and attachments recorded before it;
    freshness is measured from it. Such a look back is never recorded as a recall.
    `params` are kept with the recall log entry (who asked, through what), for replays.
    `use_signals=False` ranks by the two channels alone (no memory keys, time, names...)."""

    query: str
    owner: object = None
    kinds: Iterable[str] | None = None
    limit: int = 10
    preset: str | None = None
    weights: object = None  # a dict of proportions (and half_life_days) or scoring.Weights
    mode: str = "hybrid"
    time_from: datetime | None = None
    time_to: datetime | None = None
    session_id: int | None = None
    include_inactive: bool = False
    k: int | None = None
    now: datetime | None = None
    caller: str = "api"
    actor: str = Actor.AGENT
    record: bool = True
    agent_id: int | None = None
    fact_scopes: frozenset[str] | None = None
    sessions: frozenset[int] | None = None
    as_of: datetime | None = None
    params: dict | None = None
    use_signals: bool = True


def search(request: SearchRequest | str, /, **changes) -> SearchResult:
    """Hybrid search with full breakdowns, for a SearchRequest (or its query, with the other
    fields as keyword arguments: `search("杭州", owner=owner, record=False)`)."""
    if not isinstance(request, SearchRequest):
        request = SearchRequest(request, **changes)
    elif changes:
        request = replace(request, **changes)
    return _search(request)


def _search(r: SearchRequest) -> SearchResult:
    query, owner, kinds, limit, preset, weights = (
        r.query, r.owner, r.kinds, r.limit, r.preset, r.weights,
    )  # fmt: skip
    mode, time_from, time_to, session_id = r.mode, r.time_from, r.time_to, r.session_id
    include_inactive, k, now, caller, actor = r.include_inactive, r.k, r.now, r.caller, r.actor
    record, agent_id, fact_scopes, sessions = r.record, r.agent_id, r.fact_scopes, r.sessions
    as_of, params, use_signals = r.as_of, r.params, r.use_signals
    started = time.perf_counter()
    if mode not in MODES:
        raise SearchError(_("Unknown mode %(mode)s.") % {"mode": mode})
    label, chosen_weights, score_params = resolve_weights(preset, weights)
    owner = resolve_owner(owner)
    limit, k = max(1, min(int(limit), MAX_LIMIT)), int(k or settings.SEARCH_TOP_K)
    if as_of is not None:
        # The indexes hold today's status: every fact is a candidate, the log decides.
        now, record = now or as_of, False
        time_to = min(time_to, as_of) if time_to else as_of
    f = Filters(
        owner.pk,
        clean_kinds(kinds),
        include_inactive or as_of is not None,
        time_from,
        time_to,
        session_id,
        now or timezone.now(),
        fact_scopes,
        sessions,
    )
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    userdict.ensure_loaded(max_age=userdict.SEARCH_MAX_AGE)
    tokens = seg.tokens(query)
    timings["segmentation"] = (time.perf_counter() - t0) * 1000

    t0 = time.perf_counter()
    asked = signals.analyse(query, f.now) if use_signals else signals.QuerySignals()
    named = use_signals and not asked.person
    as_person = signals.as_the_person(query, owner.display_name) if named else ""
    if as_person:  # the vectors embed the question as the person asks it of their own turns
        asked = replace(asked, person=as_person)
    # Facts stand for the turns they were extracted from (memory keys): searched even when
    # only turns are asked for, and dropped from the answer then.
    search_f = f
    if use_signals and Kind.TURN in f.kinds and Kind.FACT not in f.kinds:
        search_f = replace(f, kinds=(*f.kinds, Kind.FACT.value))
    timings["signals"] = (time.perf_counter() - t0) * 1000
    searched_parts = asked.parts if use_signals else ()
    channels = _run_channels(query, search_f, mode, k, timings, asked.person, searched_parts)
    reasons = [f"{stage}: {msg}" for stage, msg in channels.unavailable]
    for stage, message in channels.failures:
        record_failure(owner, stage, message, query, actor)
        reasons.append(f"{stage}: {message}")
    searched = _search_range_first(query, asked, search_f, mode, k, channels, timings)

    t0 = time.perf_counter()
    merged = _merge(channels)
    sims = _missing_similarities(channels, merged)
    parts = _part_hits(asked, search_f, merged, channels.parts) if use_signals else {}
    objects = channels.rows | load_rows(key for key in merged if key not in channels.rows)
    live = {key: obj for key, obj in objects.items() if gate(key[0], obj, search_f) is None}
    links = scoring.Links()
    if use_signals:
        live.update(_linked_turns(live, merged, links, f))
    if as_of is not None:
        live = as_it_was(live, as_of, include_inactive)
    timings["load"] = timings.get("load", 0.0) + (time.perf_counter() - t0) * 1000

    effective = chosen_weights
    if channels.vector is None:
        effective = effective.without("vector")
    if channels.keyword is None:
        effective = effective.without("keyword")
    fallback = channels.keyword is None and channels.vector is None
    t0 = time.perf_counter()
    if fallback:
        live = dict(_recent_fallback(f, limit))
        effective = scoring.Weights(freshness=1.0)
        if mode == "hybrid" or channels.failures:
            reasons.append(_("no index answered: showing the most recent turns"))
    candidates = [
        to_candidate(kind, obj, merged.get((kind, obj.pk), {}), sims, f.now)
        for (kind, _), obj in live.items()
    ]
    if use_signals and not fallback:
        links.boosts = _boosts(asked, searched, live, candidates, owner.display_name.strip())
    base_weights, shares = effective, None
    if score_params.per_question and mode == "hybrid" and channels.keyword and channels.vector:
        chinese = signals.is_chinese(asked.person or query)
        effective, shares = scoring.question_shares(effective, candidates, chinese)
    ranked = scoring.rank(candidates, effective, score_params, links)
    if search_f is not f:  # facts searched only as keys
        ranked = [s for s in ranked if s.kind in f.kinds]
    if mode == "hybrid" and channels.keyword is not None and channels.vector is not None:
        ranked = _channel_bests_kept(ranked, CHANNEL_BEST_WITHIN)
    if searched is not None:
        ranked = _range_first(ranked, live, searched)
    ranked = _interleave_parts(ranked, parts, limit)
    if asked.latest:
        ranked = _newest_of_chains(ranked, live)
    timings["scoring"] = (time.perf_counter() - t0) * 1000

    items = [_item(s, live[s.key], tokens) for s in ranked[:limit]]
    result = SearchResult(
        query=query,
        owner_id=owner.pk,
        mode=mode,
        preset=label,
        weights=effective.normalised().as_dict(),
        params={
            "half_life_days": score_params.half_life_days,
            "normalisation": score_params.normalisation,
        },
        items=items,
        tokens=tokens,
        degraded=bool(reasons),
        degraded_reasons=reasons,
        channels={
            "keyword": _channel_state(channels.keyword, mode in ("hybrid", "keyword")),
            "vector": _channel_state(channels.vector, mode in ("hybrid", "semantic")),
        },
        timings_ms=timings,
        candidates=len(ranked),
        limit=limit,
        k=k,
        filters={
            "kinds": list(f.kinds),
            "include_inactive": include_inactive,
            "time_from": time_from,
            "time_to": time_to,
            "session_id": session_id,
        },
        ranked=ranked,
        scoring_input=candidates,
        now=f.now,
        as_of=as_of,
        signals={
            **asked.to_dict(),
            "searched_first": searched.to_dict() if searched else None,
            "as_the_person": as_person or None,
            "shares": shares,
        },
        base_weights=base_weights.normalised().as_dict(),
    )
    timings["total"] = (time.perf_counter() - started) * 1000
    if record:
        _record(result, owner, caller, f.now, _recall_params(result, params), agent_id)
    return result


def as_it_was(live: dict, as_of: datetime, include_inactive: bool) -> dict:
    """The candidates as they were at `as_of`: facts in the state the event log gives for
    that moment (those written later, or inactive then, are left out), episodes finished
    by then. Rows are this search's own copies, so their text is replaced in place; the
    ranking still comes from today's index text (docs/insight.md#time-travel)."""
    fact_ids = [pk for kind, pk in live if kind == Kind.FACT]
    states = timetravel.states_at(as_of, fact_ids=fact_ids) if fact_ids else {}
    kept = {}
    for (kind, pk), obj in live.items():
        if kind == Kind.FACT:
            state = states.get(pk)
            if state is None or not (include_inactive or timetravel.active_then(state, as_of)):
                continue
            for name in ("content", "subject", "predicate", "status", "importance", "expires_at"):
                setattr(obj, name, state[name])
            if obj.updated_at > as_of:  # changed since: its age then counts from its write
                obj.updated_at = obj.created_at
        elif kind == Kind.EPISODE and obj.ended_at and obj.ended_at > as_of:
            continue  # the session was still going: its episode was written afterwards
        kept[(kind, pk)] = obj
    return kept


def _channel_state(hits: list[Hit] | None, wanted: bool) -> dict:
    if not wanted:
        return {"state": "off", "hits": 0}
    return {"state": "ok" if hits is not None else "failed", "hits": len(hits or [])}


def _item(scored: scoring.Scored, obj, query_tokens: list[str]) -> SearchItem:
    title, content = display_text(scored.kind, obj)
    return SearchItem(
        signals=scored.signals,
        kind=scored.kind,
        id=scored.object_id,
        content=content,
        score=scored.score,
        rank=scored.rank,
        found_by=scored.found_by,
        ranks=scored.ranks,
        time=item_time(scored.kind, obj),
        title=title,
        status=getattr(obj, "status", "active"),
        session_id=getattr(obj, "session_id", None),
        scored=scored,
        query_tokens=query_tokens,
    )


# The bookkeeping of a recall (access counters, the recall log) is a write transaction that
# would queue behind the consumer's writes on every search (3-4 ms of a 10k-item search on an
# idle machine, more under load); one thread writes it after the answer has gone.
_RECALL_WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recall-log")


def record_recall(
    result: SearchResult,
    keys: set[tuple[str, int]],
    caller: str,
    agent_id: int | None = None,
    params: dict | None = None,
) -> None:
    """Record as recalled only these items of a search made with record=False (context
    assembly: what went into the context, not everything the search ranked)."""
    kept = [item for item in result.items if (item.kind, item.id) in keys]
    if kept:
        chosen = SearchResult(**{**result.__dict__, "items": kept})
        now = result.now or timezone.now()
        owner = resolve_owner(result.owner_id)
        _record(chosen, owner, caller, now, _recall_params(chosen, params), agent_id)


def _recall_params(result: SearchResult, extra: dict | None) -> dict:
    """What a replay needs to ask the same question again (beyond query, preset, weights
    and mode, which have columns), plus the caller's own notes (the API token)."""
    f = result.filters
    data = {
        "kinds": f["kinds"],
        "limit": result.limit,
        "include_inactive": f["include_inactive"],
        "session_id": f["session_id"],
        "time_from": f["time_from"].isoformat() if f["time_from"] else None,
        "time_to": f["time_to"].isoformat() if f["time_to"] else None,
        "half_life_days": result.params["half_life_days"],
    }
    return {**data, **(extra or {})}


def _record(
    result: SearchResult,
    owner: Owner,
    caller: str,
    now: datetime,
    params: dict,
    agent_id: int | None = None,
) -> None:
    items = [(i.kind, i.id, i.rank, i.score) for i in result.items]
    entry = {
        "owner_id": owner.pk,
        "agent_id": agent_id,
        "query": result.query,
        "caller": caller[:32],
        "preset": result.preset,
        "weights": result.weights,
        "mode": result.mode,
        "degraded": result.degraded,
        "degraded_reason": result.degraded_reason,
        "results": [{"kind": k, "id": i, "rank": r, "score": round(s, 6)} for k, i, r, s in items],
        "took_ms": round(result.timings_ms.get("total", 0.0), 2),
        "params": params,
    }
    if not settings.SEARCH_RECORD_IN_BACKGROUND:
        _write_recalls([(entry, items, now)])
        return
    with _pending_lock:
        _pending_recalls.append((entry, items, now))
        first = len(_pending_recalls) == 1
    if first:  # else a write already queued takes this one too
        _RECALL_WRITER.submit(_write_pending)


# Recalls waiting for the writer: under load several searches share one transaction.
_pending_recalls: list[tuple] = []
_pending_lock = threading.Lock()


def _write_pending() -> None:
    # Searches in the meantime join this transaction: one commit, so one re-read of the
    # searching connections' pages, per SEARCH_RECORD_DELAY however many searches ran.
    time.sleep(settings.SEARCH_RECORD_DELAY)
    with _pending_lock:
        batch = _pending_recalls[:]
        _pending_recalls.clear()
    if batch:
        _write_recalls(batch)


def _write_recalls(batch: list[tuple]) -> None:
    """One write transaction for these recalls: access counters (seeds 002/003) and the
    recall log entries.

    Raw SQL: the same four statements through the ORM spent 1.9 ms compiling, in a thread
    that competes for the GIL with the next search (bench/search.py runs them back to back).
    """
    try:
        _mask_queries(batch)
        with transaction.atomic(), connection.cursor() as cur:
            for entry, items, now in batch:
                _write_recall(cur, entry, items, now)
    except DatabaseError:  # bookkeeping must never fail a search (e.g. a locked database)
        log.exception("could not record the recall")


def _mask_queries(batch: list[tuple]) -> None:
    """A query may quote what the guardrails keep out of the memory (an agent searching for
    "my password is ..."): the log keeps it masked, as transcripts are. Done here, after the
    answer has gone, so no search waits for the rules."""
    rules: dict[int, list] = {}
    for entry, _items, _now in batch:
        owner_id = entry["owner_id"]
        if owner_id not in rules:
            rules[owner_id] = guard.current_text_rules(owner_id)
        entry["query"] = guard.mask_all(entry["query"], rules[owner_id])


def _write_recall(cur, entry: dict, items: list[tuple], now: datetime) -> None:
    facts = [i for kind, i, _, _ in items if kind == Kind.FACT]
    episodes = [i for kind, i, _, _ in items if kind == Kind.EPISODE]
    at = connection.ops.adapt_datetimefield_value(now)
    if facts:
        cur.execute(
            f"UPDATE {Fact._meta.db_table} SET access_count = access_count + 1, "
            f"last_accessed_at = %s WHERE id IN ({backends.placeholders(facts)})",
            [at, *facts],
        )
    if episodes:
        cur.execute(
            f"UPDATE {Episode._meta.db_table} SET access_count = access_count + 1 "
            f"WHERE id IN ({backends.placeholders(episodes)})",
            episodes,
        )
    cur.execute(_INSERT_RECALL, _recall_values(entry, at))
    log_id = cur.lastrowid
    cur.executemany(_INSERT_HIT, [(log_id, k, i, r, s) for k, i, r, s in items])


_RECALL_COLUMNS = (
    "owner_id agent_id query caller preset weights mode degraded degraded_reason results took_ms "
    "params"
).split()
_INSERT_RECALL = (
    f"INSERT INTO {RecallLog._meta.db_table} ({', '.join(_RECALL_COLUMNS)}, created_at) "
    f"VALUES ({backends.placeholders(_RECALL_COLUMNS)}, %s)"
)
_INSERT_HIT = (
    f"INSERT INTO {RecallHit._meta.db_table} (log_id, kind, object_id, rank, score) "
    "VALUES (%s, %s, %s, %s, %s)"
)


def _recall_values(entry: dict, at: str) -> list:
    values = {
        **entry,
        "weights": json.dumps(entry["weights"]),
        "results": json.dumps(entry["results"]),
        "params": json.dumps(entry["params"], ensure_ascii=False),
    }
    return [values[c] for c in _RECALL_COLUMNS] + [at]


def flush_recalls() -> None:
    """Wait until every recall recorded so far is written (for a reader that must see it)."""
    _RECALL_WRITER.submit(lambda: None).result()


def recalls_of(kind: str, object_id: int, limit: int = 20):
    """The latest searches that returned an item (for the fact detail page), newest first."""
    return (
        RecallHit.objects.filter(kind=kind, object_id=object_id)
        .select_related("log")
        .order_by("-log__created_at", "-log_id")[:limit]
    )


def prune_recall_log(days: int | None = None, now: datetime | None = None) -> int:
    """Drop recall log entries older than RECALL_LOG_DAYS (the nightly job may call this)."""
    days = settings.RECALL_LOG_DAYS if days is None else days
    cutoff = (now or timezone.now()) - timedelta(days=days)
    deleted, _ = RecallLog.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def load_dictionary() -> None:
    """jieba's dictionary and the user's words (61 MB of a web process): what segmenting the
    first query would wait for. `serve` loads it before forking, so workers share it."""
    userdict.ensure_loaded()
    seg.tokens("预热 warm-up")


def warm_up(engine: bool = True) -> None:
    """Load what the first search would otherwise wait for: jieba's dictionary, the local
    embedding engine (with `engine` False only its weights: no run, so no thread), the vector
    matrix (1.4 s at 100k vectors) and the keyword postings (3-4 s at 100k items). `serve`
    runs it before it forks (engine False) and in a thread of each worker; a failure only
    means the first search pays instead."""

    try:
        load_dictionary()
        state, _center = search_space()
        if state.ok and isinstance(get_embedder(), LocalEmbedder):
            if engine:
                get_embedder().query("预热 warm-up")
            else:
                get_embedder().load()  # before a fork: loaded, never run (no threads)
        if state.ok and backends.matrix_usable():
            matrix.current(state.dimension)
        if backends.keywords_usable():
            keywords.current(backends.KEYWORD_FIELDS, backends.BM25_WEIGHTS)
    except Exception:
        log.exception("warming up search failed; the first search will load what it needs")
    finally:
        connection.close()  # this thread's own connection: it will not be used again
    # What is loaded now lives as long as the process. Left to the garbage collector, every
    # full collection walks it again (jieba's dictionary above all): a 56 ms pause inside
    # whichever search triggers it. At 10k items 4 of 1,200 searches took 64-75 ms; frozen,
    # none took over 35.
    gc.freeze()
    _give_back_freed_memory()


def _give_back_freed_memory() -> None:
    """Loading the keyword postings leaves freed heap that glibc keeps for later (90 MB at
    100k items): hand it back to the system, so the process's memory is what it holds."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim this way
        pass
