"""The two candidate generators: FTS5 BM25 and sqlite-vec KNN, each returning doc hits.

Scores are returned raw (bm25: lower is better; distance: cosine, lower is better);
normalising and weighting them is the pure scoring module's job. Both apply the same
filters in SQL, before their LIMIT, so inactive or out-of-range items never crowd the top k.

Both first rank without filters and filter the top 2 x limit afterwards (FTS5 alone; the
in-memory vector matrix, retrieval/matrix.py), falling back to filtered SQL when too few
pass. That SQL vector step is exact (vec0's brute-force KNN) up to SEARCH_EXACT_MAX vectors
per owner; above, it scans the sign bits of each vector (centred on the mean vector: a 32x
smaller scan), takes an oversampled candidate set and rescores it with the float vectors.
"""

import functools
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from retrieval import keywords, matrix
from retrieval import text as seg
from retrieval.embedders import get_embedder, query_cache
from retrieval.indexing import search_space, sign_bits
from retrieval.models import Kind

log = logging.getLogger(__name__)
ALL_KINDS = tuple(k.value for k in Kind)
EVENT_KINDS = (Kind.EPISODE.value, Kind.TURN.value, Kind.ATTACHMENT.value)
# bm25 weights of the grams column and of a turn's context (the turn before it) against the
# jieba column (measured: docs/retrieval.md).
GRAMS_WEIGHT = 0.5
CONTEXT_WEIGHT = 0.6
BM25_WEIGHTS = (1.0, GRAMS_WEIGHT, CONTEXT_WEIGHT)  # search_fts's columns, in order
# The column sets of seg.match_terms' two groups of phrases: {tokens context} and grams.
KEYWORD_FIELDS = ((0, 2), (1,))


def _bm25() -> str:
    return "bm25(search_fts, " + ", ".join(map(str, BM25_WEIGHTS)) + ")"


class Hit(NamedTuple):
    """A search runs 100-200 of these: a named tuple is made in a third of a frozen
    dataclass's time (its __init__ sets each field through object.__setattr__)."""

    doc_id: int
    kind: str
    object_id: int
    raw: float


@dataclass(frozen=True)
class Filters:
    """What may be returned. Facts are timeless: time and session filters apply to events."""

    owner_id: int
    kinds: tuple[str, ...] = ALL_KINDS
    include_inactive: bool = False
    time_from: datetime | None = None
    time_to: datetime | None = None
    session_id: int | None = None
    now: datetime = field(default_factory=timezone.now)
    # An agent's read limits (None: no limit): the fact scopes it may read, and the sessions
    # whose turns, episodes and attachments it may see (its own, when its scopes are limited).
    fact_scopes: frozenset[str] | None = None
    sessions: frozenset[int] | None = None

    @property
    def scoped(self) -> bool:
        return bool(self.time_from or self.time_to or self.session_id)

    @property
    def rank_then_filter(self) -> bool:
        """Whether the best items overall, filtered afterwards, are likely to fill the page.
        A time or session scope filters events only (facts are timeless), so with facts
        wanted most of the overall best pass it; when too few do, _first_passing says so."""
        return not self.scoped or Kind.FACT in self.kinds


@functools.lru_cache(maxsize=64)
def _db_time(value: datetime) -> str:
    # Raw SQL compares Django's stored text form (naive UTC); aware values would not match.
    # Remembered: a search asks for its `now` 2-4 times, and Django's conversion (settings
    # and time zone checks) cost more than the statement's other parameters together.
    return connection.ops.adapt_datetimefield_value(value)


def placeholders(values) -> str:
    return ", ".join(["%s"] * len(values))


def _keyword_where(f: Filters) -> tuple[str, list]:
    """The filters over retrieval_searchdoc d, for statements that reach d by its id (FTS5
    matches, candidate ids). The unary + keeps SQLite from looking each id up through the
    owner index and then the table (two B-tree descents): by rowid alone, the keyword
    filter statement took 0.34 instead of 0.47 ms of CPU for 101 ids at 100k items."""
    sql, params = ["+d.owner_id = %s"], [f.owner_id]
    if not set(f.kinds) >= set(ALL_KINDS):
        sql.append(f"d.kind IN ({placeholders(f.kinds)})")
        params.extend(f.kinds)
    if not f.include_inactive:
        sql.append("d.status = 'active' AND (d.expires_at IS NULL OR d.expires_at > %s)")
        params.append(_db_time(f.now))
    scope, scope_params = [], []
    if f.time_from:
        scope.append("d.ts >= %s")
        scope_params.append(_db_time(f.time_from))
    if f.time_to:
        scope.append("d.ts < %s")
        scope_params.append(_db_time(f.time_to))
    if f.session_id:
        scope.append("d.session_id = %s")
        scope_params.append(f.session_id)
    if scope:
        sql.append("(d.kind = 'fact' OR (" + " AND ".join(scope) + "))")
        params.extend(scope_params)
    return " AND ".join(sql), params


def keyword_hits(
    query: str, owner_id: int, limit: int = 50, filters: Filters | None = None
) -> list[Hit]:
    """FTS5 top `limit` by BM25 over jieba tokens and CJK grams; [] when no token is left."""
    terms = _terms(query)
    match = seg.match_terms(*terms)
    if not match:
        return []
    f = filters or Filters(owner_id)
    where, params = _keyword_where(f)
    if f.rank_then_filter:
        hits = _keyword_hits_unjoined(terms, f, limit)
        if hits is not None:
            return hits
    # Equal scores: the newest document first, the order _keyword_hits_unjoined can see.
    sql = (
        f"SELECT d.id, d.kind, d.object_id, {_bm25()} AS score "
        "FROM search_fts JOIN retrieval_searchdoc d ON d.id = search_fts.rowid "
        f"WHERE search_fts MATCH %s AND {where} ORDER BY score, d.id DESC LIMIT %s"
    )
    with connection.cursor() as cur:
        cur.execute(sql, [match, *params, limit])
        return [Hit(*row) for row in cur.fetchall()]


def _keyword_hits_unjoined(
    terms: tuple[list[str], list[str]], f: Filters, limit: int
) -> list[Hit] | None:
    """The same top `limit`, ranked without filters and filtered afterwards; None when unsure.

    Joining every match to its document to filter it cost 40% of the keyword step (a common
    word matches a fifth of the collection). Most matches pass the filters, so rank the top
    2 x limit unfiltered, then filter those: exact whenever at least `limit` of them survive,
    because (score, doc id) orders every match, so nothing beyond them could rank higher.
    Otherwise the caller runs the join. Ties used to be broken by item time, which FTS cannot
    see: a tie on the edge then forced the join, for a quarter of the queries at 100k items.
    """

    def ranking(count: int) -> list[tuple]:
        ranked = _keyword_index_ranking(*terms, count)
        return _fts_ranking(seg.match_terms(*terms), count) if ranked is None else ranked

    return _first_passing(ranking, f, limit, lambda score: score)


def _fts_ranking(match: str, count: int) -> list[tuple]:
    """FTS5's own top `count` (rowid, bm25) for a MATCH, unfiltered: best first, equal scores
    newest first (the ranking the in-memory postings reproduce)."""
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT rowid, {_bm25()} AS score FROM search_fts WHERE search_fts MATCH %s "
            "ORDER BY score, rowid DESC LIMIT %s",
            [match, count],
        )
        return cur.fetchall()


def _keyword_index_ranking(tokens: list[str], grams: list[str], count: int) -> list | None:
    """FTS5's own ranking, computed from the process's in-memory postings (retrieval/keywords.py:
    the same scores, 7-13x faster at p95); None when it cannot be used."""
    if not keywords_usable():
        return None
    # The phrases of seg.match_terms, in its order: tokens in field 0, grams in field 1.
    phrases = [(0, t) for t in seg.query_terms(tokens)] + [(1, g) for g in seg.query_terms(grams)]
    return keywords.current(KEYWORD_FIELDS, BM25_WEIGHTS).rank(phrases, count)


def _first_passing(ranking, f: Filters, limit: int, raw) -> list[Hit] | None:
    """The first `limit` (doc id, value) that pass the filters, from `ranking(count)`: the
    best `count` unfiltered, best first in a total order. As hits with `raw(value)`; None when
    fewer pass and the ranking went on (a document beyond it might pass).

    The ranking goes 2 x limit deep; a scoped one once more, 8 x limit deep, because the
    turns of a busy conversation outside the scope can crowd the top: with 900 turns beside
    10k facts, 46% of time-scoped keyword queries fell back to SQL at 2 x, none at 8 x (2.5 ms
    a query against 7.7-9.7 for SQL alone)."""
    for depth in (2 * limit, 8 * limit) if f.scoped else (2 * limit,):
        ranked = ranking(depth + 1)  # one more: did the ranking go on?
        values = dict(ranked[:depth])
        rows = _passing(values, f) if values else {}
        kept = [rows[d] for d in values if d in rows]  # values is in rank order
        if len(kept) >= limit or len(ranked) <= depth:
            return [Hit(d, kind, obj, raw(values[d])) for d, kind, obj in kept[:limit]]
    return None


def _passing(doc_ids, f: Filters) -> dict[int, tuple]:
    """(id, kind, object_id) of the given documents that pass the filters."""
    where, params = _keyword_where(f)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT d.id, d.kind, d.object_id FROM retrieval_searchdoc d "
            f"WHERE d.id IN (SELECT value FROM json_each(%s)) AND {where}",
            [id_list(doc_ids), *params],
        )
        return {row[0]: row for row in cur.fetchall()}


def id_list(ids) -> str:
    """Ids as one JSON array parameter (`IN (SELECT value FROM json_each(%s))`): one statement
    text whatever their number, so SQLite reuses its prepared statement instead of parsing
    and planning a new one for every count of placeholders."""
    return "[" + ",".join(map(str, ids)) + "]"


# Large collections: FTS5 scores every document that matches any query term, and a common
# word or character matches a fifth of them (docs/performance.md).
_df_cache: dict[str, int] = {}
_df_lock = threading.Lock()
_df_since = 0.0


def prune_terms(tokens: list[str], grams: list[str]) -> tuple[list[str], list[str]]:
    """The query terms worth matching. Below SEARCH_PRUNE_MIN_DOCS documents, all of them.

    Above, two kinds of term go: a CJK character that a longer query term contains (喜 when
    喜欢 is asked for) and any term in more than SEARCH_PRUNE_SHARE of the documents, unless
    it is the query's rarest. At 100k items this took FTS p95 from 72 to 42 ms and kept 96.6% of
    the keyword top 10; smaller collections (every recall benchmark) are untouched.
    """
    total = document_count()
    if total < settings.SEARCH_PRUNE_MIN_DOCS or not tokens + grams:
        return tokens, grams
    longer = [t for t in tokens + grams if len(t) > 1]
    grams = [g for g in grams if len(g) > 1 or not any(g in t for t in longer)]
    df = document_frequencies(set(tokens + grams))
    rarest = min(df.values())

    def keep(term: str) -> bool:
        return df[term] <= settings.SEARCH_PRUNE_SHARE * total or df[term] == rarest

    return [t for t in tokens if keep(t)], [g for g in grams if keep(g)]


def _terms(query: str) -> tuple[list[str], list[str]]:
    """The query's jieba tokens and CJK grams to match, pruned on large collections."""
    return prune_terms(seg.tokens(query), seg.grams(query))


def _match(query: str) -> str:
    """The MATCH keyword_scores runs (keyword_hits builds the same from _terms)."""
    return seg.match_terms(*_terms(query))


def left_out_terms(query: str) -> list[str]:
    """The query's terms that prune_terms leaves out (the debugger shows them)."""
    tokens, grams = seg.tokens(query), seg.grams(query)
    kept = set().union(*prune_terms(tokens, grams))
    return [t for t in dict.fromkeys(tokens + grams) if t not in kept]


def document_frequencies(terms: set[str], ttl: float = 600.0) -> dict[str, int]:
    """How many documents hold each term (fts5vocab; remembered ten minutes: a pruning
    threshold needs no exact count)."""
    global _df_since
    with _df_lock:
        if time.monotonic() - _df_since > ttl:
            _df_cache.clear()
            _df_since = time.monotonic()
        missing = [t for t in terms if t not in _df_cache]
    found = {}
    with connection.cursor() as cur:
        for term in missing:  # one lookup each: fts5vocab scans for IN (...)
            cur.execute("SELECT doc FROM search_fts_vocab WHERE term = %s", [term])
            row = cur.fetchone()
            found[term] = row[0] if row else 0
    with _df_lock:
        _df_cache.update(found)
        return {t: _df_cache.get(t, found.get(t, 0)) for t in terms}


def document_count(ttl: float = 60.0) -> int:
    """Documents in the keyword index (remembered a minute, like owner_vector_count)."""
    return _cached_count(0, "SELECT count(*) FROM retrieval_searchdoc", [], ttl)


def keyword_scores(query: str, doc_ids: list[int]) -> dict[int, float]:
    """BM25 of given documents for a query (for explaining items outside the top k)."""
    match = _match(query)
    if not match or not doc_ids:
        return {}
    sql = (
        f"SELECT rowid, {_bm25()} FROM search_fts "
        f"WHERE search_fts MATCH %s AND rowid IN ({placeholders(doc_ids)})"
    )
    with connection.cursor() as cur:
        cur.execute(sql, [match, *doc_ids])
        return dict(cur.fetchall())


def _vec_groups(f: Filters) -> list[tuple[str, list]]:
    """(WHERE, params) per KNN query: facts and events apart when only events are scoped."""
    base, base_params = "v.owner_id = %s", [f.owner_id]
    if not f.include_inactive:
        # Events are stored live and never expiring, so this only ever filters facts.
        base += " AND v.live = 1 AND v.expires > %s"
        base_params.append(int(f.now.timestamp()))
    facts = [k for k in f.kinds if k == Kind.FACT]
    events = [k for k in f.kinds if k != Kind.FACT]
    if not f.scoped:
        if set(f.kinds) >= set(ALL_KINDS):  # every kind: a filter would only cost time
            return [(base, base_params)]
        return [(base + f" AND v.kind IN ({placeholders(f.kinds)})", [*base_params, *f.kinds])]
    scope, scope_params = [], []
    if f.time_from:
        scope.append("v.ts >= %s")
        scope_params.append(int(f.time_from.timestamp()))
    if f.time_to:
        scope.append("v.ts < %s")
        scope_params.append(int(f.time_to.timestamp()))
    if f.session_id:
        scope.append("v.session_id = %s")
        scope_params.append(f.session_id)
    groups = []
    if facts:
        groups.append((base + " AND v.kind = 'fact'", list(base_params)))
    if events:
        where = base + f" AND v.kind IN ({placeholders(events)}) AND " + " AND ".join(scope)
        groups.append((where, [*base_params, *events, *scope_params]))
    return groups


_counts: dict[tuple[str, int], tuple[float, int]] = {}
_counts_lock = threading.Lock()


def owner_vector_count(owner_id: int, ttl: float = 60.0) -> int:
    """How many vectors an owner has (cached a minute: it only picks exact or approximate)."""
    sql = "SELECT count(*) FROM retrieval_searchdoc WHERE owner_id = %s AND embedded_hash != ''"
    return _cached_count(owner_id, sql, [owner_id], ttl)


def _cached_count(key: int, sql: str, params: list, ttl: float) -> int:
    now = time.monotonic()
    with _counts_lock:
        hit = _counts.get((sql, key))
    if hit and now - hit[0] < ttl:
        return hit[1]
    with connection.cursor() as cur:
        cur.execute(sql, params)
        count = cur.fetchone()[0]
    with _counts_lock:
        _counts[(sql, key)] = (now, count)
    return count


def _knn_exact(vector: np.ndarray, where: str, params: list, limit: int) -> list[tuple]:
    sql = (
        "SELECT v.doc_id, v.kind, v.distance FROM search_vec v "
        f"WHERE v.embedding MATCH %s AND k = %s AND {where} ORDER BY v.distance"
    )
    with connection.cursor() as cur:
        cur.execute(sql, [vector.astype("float32").tobytes(), limit, *params])
        return cur.fetchall()


def float_vectors(doc_ids: list[int]) -> dict[int, np.ndarray]:
    if not doc_ids:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            "SELECT doc_id, embedding FROM search_vecf "
            "WHERE doc_id IN (SELECT value FROM json_each(%s))",
            [id_list(doc_ids)],
        )
        return {d: np.frombuffer(bytes(b), dtype=np.float32) for d, b in cur.fetchall()}


def _knn_bits(vector: np.ndarray, where: str, params: list, limit: int) -> list[tuple]:

    oversample = max(limit, int(limit * settings.SEARCH_OVERSAMPLE))
    sql = (
        "SELECT v.doc_id, v.kind FROM search_vec v "
        f"WHERE v.bits MATCH vec_bit(%s) AND k = %s AND {where}"
    )
    bits = sign_bits(vector.astype("float32"), search_space()[1])
    with connection.cursor() as cur:
        cur.execute(sql, [bits, oversample, *params])
        rough = dict(cur.fetchall())
    floats = float_vectors(list(rough))
    if not floats:
        return []
    ids = list(floats)
    distances = 1.0 - np.vstack([floats[i] for i in ids]) @ vector
    order = np.argsort(distances, kind="stable")[:limit]
    return [(ids[i], rough[ids[i]], float(distances[i])) for i in order]


def _with_object_ids(rows: list[tuple]) -> list[Hit]:
    if not rows:
        return []
    ids = [r[0] for r in rows]
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT id, object_id FROM retrieval_searchdoc WHERE id IN ({placeholders(ids)})", ids
        )
        objects = dict(cur.fetchall())
    return [Hit(d, kind, objects[d], dist) for d, kind, dist in rows if d in objects]


def vector_hits_for(
    vector: np.ndarray, filters: Filters, limit: int = 50, exact: bool | None = None
) -> list[Hit]:
    """KNN top `limit` for a query vector under the filters (cosine distance, ascending)."""
    if exact is None and matrix_usable(filters):
        try:
            hits = _matrix_hits(vector, filters, limit)
        except OSError as exc:  # the vector file cannot be written (disk full, read-only)
            log.warning("the vector file is unusable, sqlite-vec answers: %s", exc)
            hits = None
        if hits is not None:
            return hits
    if exact is None:
        exact = owner_vector_count(filters.owner_id) <= settings.SEARCH_EXACT_MAX
    knn = _knn_exact if exact else _knn_bits
    rows = [
        row for where, params in _vec_groups(filters) for row in knn(vector, where, params, limit)
    ]
    rows.sort(key=lambda r: r[2])
    return _with_object_ids(rows[:limit])


def matrix_usable(f: Filters | None = None) -> bool:
    # Inside a transaction the matrix could see rows a rollback takes back (retrieval.matrix);
    # a scope on events only keeps few of the overall top vectors, so SQL filters those first.
    in_scope = f is None or f.rank_then_filter
    return settings.SEARCH_VECTOR_MATRIX and not connection.in_atomic_block and in_scope


def keywords_usable() -> bool:
    # Like the matrix, only outside transactions (retrieval.changelog).
    return settings.SEARCH_KEYWORD_INDEX and not connection.in_atomic_block


def _matrix_hits(vector: np.ndarray, f: Filters, limit: int) -> list[Hit] | None:
    """KNN in the shared vector file (retrieval/matrix.py) over the owner's vectors of the
    wanted kinds, filtered for status, expiry and scope in the same statement that reads
    their exact vectors: None when too few of the top pass (SQL then filters first)."""
    held = matrix.current(len(vector))
    where, params = _keyword_where(f)
    # limit deep: the filters apply to the 1.5 x limit rows rescored, so most searches find
    # limit passing at once (every row read costs: 152 exact vectors took 1-3 ms at 100k)
    for depth in (limit, 8 * limit) if f.scoped else (limit, 4 * limit):
        found, complete = held.nearest(vector, depth, f.owner_id, f.kinds, (where, params))
        if len(found) >= limit or complete:
            return [Hit(d, kind, obj, 1.0 - sim) for d, sim, kind, obj in found[:limit]]
    return None


def embed_query(query: str) -> np.ndarray:
    return query_cache.get(get_embedder(), query)


def vector_hits(
    query: str, owner_id: int, limit: int = 50, filters: Filters | None = None
) -> list[Hit]:
    return vector_hits_for(embed_query(query), filters or Filters(owner_id), limit)


def similarities(vector: np.ndarray, doc_ids: list[int]) -> dict[int, float]:
    """Exact cosine similarity of given documents (those the vector top k did not reach)."""
    return {d: float(v @ vector) for d, v in float_vectors(doc_ids).items()}
