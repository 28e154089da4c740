"""Pure scoring: candidates in, ranked results with full breakdowns out (no Django, no I/O).

Five components, each normalised to [0, 1]:

- semantic: cosine similarity to the query. "minmax" (default): rescaled over the vector
  channel's top-k, (s - min) / (max - min), so the best vector hit is 1 and anything at or
  below the k-th is 0; "absolute": the cosine itself, clipped at 0.
- keyword: FTS5 BM25 relevance r = -bm25 (SQLite's bm25 is lower-is-better). "minmax":
  rescaled over the keyword channel's top-k like the semantic one; "absolute": the
  saturating r / (r + keyword_saturation).
- freshness: 0.5 ** (age_days / half_life_days); an item from the future counts as new.
- importance: the item's importance clipped to [0, 1] (items without one: 0.5).
- access: log1p(n) / log1p(access_saturation), capped at 1 (n = times recalled).

A weighted sum of the normalised values (weights summing to 1) is the score, so every
score is in [0, 1]. Ties break by recency (newer first), then by kind and id, never by
insertion order. When a channel is unavailable (degraded search), its weight moves to the
other relevance channel so a preset keeps its balance between relevance and the rest.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import NamedTuple

COMPONENTS = ("semantic", "keyword", "freshness", "importance", "access")
CHANNELS = ("keyword", "vector")


@dataclass(frozen=True)
class Weights:
    semantic: float = 0.0
    keyword: float = 0.0
    freshness: float = 0.0
    importance: float = 0.0
    access: float = 0.0

    def __post_init__(self):
        for name in COMPONENTS:
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"weight {name} must be a finite number >= 0, got {value!r}")

    @property
    def total(self) -> float:
        return sum(getattr(self, n) for n in COMPONENTS)

    def normalised(self) -> Weights:
        """The same proportions summing to 1 (all zero is an error: nothing to rank by)."""
        total = self.total
        if total <= 0:
            raise ValueError("at least one weight must be above 0")
        return Weights(**{n: getattr(self, n) / total for n in COMPONENTS})

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in COMPONENTS}  # asdict's, 10x faster

    def without(self, channel: str) -> Weights:
        """Weights for a search where one channel failed: its share goes to the other."""
        values = self.as_dict()
        if channel == "vector":
            values["keyword"] += values["semantic"]
            values["semantic"] = 0.0
        elif channel == "keyword":
            values["semantic"] += values["keyword"]
            values["keyword"] = 0.0
        return Weights(**values)


@dataclass(frozen=True)
class Params:
    half_life_days: float = 30.0
    normalisation: str = "minmax"  # or "absolute"
    keyword_saturation: float = 5.0
    access_saturation: int = 50
    default_importance: float = 0.5
    # The semantic and keyword shares are set per question (question_shares): the default
    # preset only; a seed preset or weights given by the caller are used as they are.
    per_question: bool = False


@dataclass(frozen=True)
class Preset:
    name: str
    weights: Weights
    params: Params
    source: str


# The three seed formulas exactly as written: seed 000 (shiyi), seed 002 (semibot), seed 003
# (openakita; its "relevance" 0.40 is our two relevance channels split like seed 000's,
# 0.55 : 0.30). Seeds 000 and 003 give no half-life; 30 days like seed 002.
# "curator" is the default: seed 000's formula (relevance 0.85 + freshness 0.15) with the
# split between the channels and the half-life chosen by measurement on LoCoMo and
# MADial-Bench (docs/retrieval.md): a semantic share of 0.65 let the weaker e5 channel
# outvote BM25 on LoCoMo (-4 points of R@5), and a 30-day half-life cost another point on
# conversations that span months.
PRESETS: dict[str, Preset] = {
    "curator": Preset(
        "curator",
        Weights(semantic=0.40, keyword=0.45, freshness=0.15),
        Params(half_life_days=180.0, per_question=True),
        "0.40 semantic + 0.45 keyword + 0.15 freshness, half-life 180 days (measured); "
        "the two channels' shares set per question",
    ),
    "shiyi": Preset(
        "shiyi",
        Weights(semantic=0.55, keyword=0.30, freshness=0.15),
        Params(half_life_days=30.0),
        "0.55 semantic + 0.30 keyword + 0.15 freshness (seed 000)",
    ),
    "semibot": Preset(
        "semibot",
        Weights(semantic=0.60, importance=0.25, freshness=0.15),
        Params(half_life_days=30.0),
        "0.60 similarity + 0.25 importance + 0.15 time decay, half-life 30 days (seed 002)",
    ),
    "openakita": Preset(
        "openakita",
        Weights(semantic=0.26, keyword=0.14, freshness=0.25, importance=0.20, access=0.15),
        Params(half_life_days=30.0),
        "0.40 relevance (0.26 semantic + 0.14 keyword) + 0.25 recency + 0.20 importance "
        "+ 0.15 access frequency (seed 003)",
    ),
}
DEFAULT_PRESET = "curator"


@dataclass
class Candidate:
    """One item found by either channel, with everything its score depends on (not frozen:
    a frozen dataclass's __init__ costs 2 us a candidate, a search scores 50-150)."""

    kind: str
    object_id: int
    similarity: float | None = None  # cosine similarity (None: no vector known)
    vector_rank: int | None = None  # 1-based rank in the vector top-k, None if not in it
    bm25: float | None = None  # SQLite bm25 (negative, lower is better), None: no match
    keyword_rank: int | None = None
    age_days: float = 0.0
    importance: float | None = None
    access_count: int = 0

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.object_id)


class Component(NamedTuple):
    raw: float | None
    normalised: float
    weight: float
    contribution: float


# One per candidate key: identity is equality, and `in` stays cheap; slots: 50-150 a search.
@dataclass(eq=False, slots=True)
class Scored:
    kind: str
    object_id: int
    score: float
    rank: int
    found_by: str  # "keyword", "vector", "both" or "none"
    ranks: dict[str, int | None]
    # The query's own signals that moved this score (see Links): memory, turn before, time,
    # name, latest, part. Each says what it found and how much it added.
    signals: dict = field(default_factory=dict)
    # The semantic and keyword contributions (the links lift by them) and what the breakdown
    # is built from when first read: a search reads it for its ten results only, so building
    # it for all 50-150 candidates cost more than scoring them (see rank).
    semantic: float = field(default=0.0, compare=False)
    keyword: float = field(default=0.0, compare=False)
    recipe: tuple | None = field(default=None, repr=False, compare=False)
    built: dict[str, Component] | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.object_id)

    @property
    def breakdown(self) -> dict[str, Component]:
        """{component: Component}, exactly as score_one computes it."""
        if self.built is None:
            self.built = breakdown_of(*self.recipe) if self.recipe else {}
        return self.built

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "id": self.object_id,
            "score": round(self.score, 6),
            "rank": self.rank,
            "found_by": self.found_by,
            "ranks": dict(self.ranks),
            "breakdown": self.breakdown_dict(),
            "signals": self.signals,
        }

    def breakdown_dict(self) -> dict:
        return {
            name: {
                "raw": None if c.raw is None else round(c.raw, 6),
                "normalized": round(c.normalised, 6),
                "weight": round(c.weight, 6),
                "contribution": round(c.contribution, 6),
            }
            for name, c in self.breakdown.items()
        }


def clamp01(value: float) -> float:
    return 0.0 if value < 0 or math.isnan(value) else 1.0 if value > 1 else float(value)


def minmax(value: float | None, lo: float, hi: float) -> float:
    """value rescaled to [0, 1] between lo and hi (a single-valued range gives 1 at its top)."""
    if value is None:
        return 0.0
    if hi <= lo:
        return 1.0 if value >= hi else 0.0
    return clamp01((value - lo) / (hi - lo))


def keyword_relevance(bm25: float | None) -> float | None:
    return None if bm25 is None else max(0.0, -bm25)


def saturate(value: float | None, k: float) -> float:
    return 0.0 if value is None or value <= 0 else value / (value + k)


def freshness(age_days: float, half_life_days: float) -> float:
    if half_life_days <= 0:
        return 1.0
    return clamp01(0.5 ** (max(0.0, age_days) / half_life_days))


def access_score(count: int, saturation: int) -> float:
    return clamp01(math.log1p(max(0, count)) / math.log1p(max(1, saturation)))


@dataclass(frozen=True)
class Ranges:
    """The channel ranges min-max normalisation rescales by."""

    sim: tuple[float, float] | None
    kw: tuple[float, float] | None

    @classmethod
    def of(cls, candidates: list[Candidate]) -> Ranges:
        sims = [c.similarity for c in candidates if c.vector_rank and c.similarity is not None]
        kws = [
            keyword_relevance(c.bm25) for c in candidates if c.keyword_rank and c.bm25 is not None
        ]
        return cls((min(sims), max(sims)) if sims else None, (min(kws), max(kws)) if kws else None)


def normalised_values(c: Candidate, params: Params, ranges: Ranges) -> dict[str, tuple]:
    """{component: (raw, normalised)} for one candidate."""
    relevance = None if c.bm25 is None else (-c.bm25 if c.bm25 < 0 else 0.0)
    if params.normalisation == "absolute":
        sem = clamp01(c.similarity) if c.similarity is not None else 0.0
        kw = saturate(relevance, params.keyword_saturation)
    else:
        sem = minmax(c.similarity, *ranges.sim) if ranges.sim and c.similarity is not None else 0.0
        kw = minmax(relevance, *ranges.kw) if ranges.kw and relevance is not None else 0.0
    importance = params.default_importance if c.importance is None else c.importance
    count = c.access_count if c.access_count > 0 else 0
    return {
        "semantic": (c.similarity, sem),
        "keyword": (relevance, kw),
        "freshness": (c.age_days, freshness(c.age_days, params.half_life_days)),
        "importance": (importance, clamp01(importance)),
        "access": (float(c.access_count), access_score(count, params.access_saturation)),
    }


def _found_by(c: Candidate) -> str:
    if c.keyword_rank and c.vector_rank:
        return "both"
    return "keyword" if c.keyword_rank else "vector" if c.vector_rank else "none"


def breakdown_of(c: Candidate, weights: Weights, params: Params, ranges: Ranges) -> dict:
    """One candidate's components; `weights` must already sum to 1 (see rank)."""
    shares = (weights.semantic, weights.keyword, weights.freshness, weights.importance,
              weights.access)  # fmt: skip
    return {
        name: Component(raw, norm, weight, weight * norm)
        for (name, (raw, norm)), weight in zip(
            normalised_values(c, params, ranges).items(), shares, strict=True
        )
    }


def score_one(c: Candidate, weights: Weights, params: Params, ranges: Ranges) -> Scored:
    """One candidate's score with its breakdown built; `weights` must already sum to 1."""
    breakdown = breakdown_of(c, weights, params, ranges)
    total = 0.0
    for component in breakdown.values():
        total += component.contribution
    ranks = {"keyword": c.keyword_rank, "vector": c.vector_rank}
    return Scored(
        c.kind, c.object_id, clamp01(total), 0, _found_by(c), ranks,
        semantic=breakdown["semantic"].contribution, keyword=breakdown["keyword"].contribution,
        built=breakdown,
    )  # fmt: skip


class _Lean:
    """What scoring every candidate of one search shares: the weights and the parameters'
    constants, read once instead of per candidate."""

    def __init__(self, weights: Weights, params: Params, ranges: Ranges):
        self.recipe_tail = (weights, params, ranges)
        self.shares = (weights.semantic, weights.keyword, weights.freshness, weights.importance,
                       weights.access)  # fmt: skip
        self.absolute = params.normalisation == "absolute"
        self.params = params
        # (lo, hi, hi - lo) of each channel, or None: minmax's arguments
        self.sim = ranges.sim and (*ranges.sim, ranges.sim[1] - ranges.sim[0])
        self.kw = ranges.kw and (*ranges.kw, ranges.kw[1] - ranges.kw[0])

    def score(self, c: Candidate) -> Scored:
        """score_one's value by the same arithmetic in the same order, without the breakdown
        (built from `recipe` if someone reads it). The clamps and min-max are written out:
        their calls were most of the cost, and a value already in [0, 1] is what clamp01
        returns for it."""
        p = self.params
        w_sem, w_kw, w_fresh, w_imp, w_acc = self.shares
        sim, bm25 = c.similarity, c.bm25
        relevance = None if bm25 is None else (-bm25 if bm25 < 0 else 0.0)
        if self.absolute:
            sem = clamp01(sim) if sim is not None else 0.0
            kw = saturate(relevance, p.keyword_saturation)
        else:
            sem = _minmax(sim, self.sim) if self.sim and sim is not None else 0.0
            kw = _minmax(relevance, self.kw) if self.kw and relevance is not None else 0.0
        semantic, keyword = w_sem * sem, w_kw * kw
        total = 0.0
        total += semantic
        total += keyword
        if p.half_life_days <= 0:
            fresh = 1.0
        else:
            age = c.age_days if c.age_days > 0.0 else 0.0  # max(0.0, age), NaN included
            fresh = 0.5 ** (age / p.half_life_days)
            fresh = fresh if 0.0 <= fresh <= 1.0 else clamp01(fresh)
        total += w_fresh * fresh
        importance = p.default_importance if c.importance is None else c.importance
        total += w_imp * (importance if 0.0 <= importance <= 1.0 else clamp01(importance))
        # access_score(0) is 0.0 whatever the saturation: most items were never recalled
        count = c.access_count
        total += w_acc * (access_score(count, p.access_saturation) if count > 0 else 0.0)
        ranks = {"keyword": c.keyword_rank, "vector": c.vector_rank}
        return Scored(
            c.kind, c.object_id, total if 0.0 <= total <= 1.0 else clamp01(total), 0,
            _found_by(c), ranks, semantic=semantic, keyword=keyword,
            recipe=(c, *self.recipe_tail),
        )  # fmt: skip


def _minmax(value: float, bounds: tuple[float, float, float]) -> float:
    """minmax(value, lo, hi) with hi - lo computed once."""
    lo, hi, span = bounds
    if hi <= lo:
        return 1.0 if value >= hi else 0.0
    scaled = (value - lo) / span
    return scaled if 0.0 <= scaled <= 1.0 else clamp01(scaled)


# How much of an item's relevance a turn inherits from what stands for it elsewhere: a memory
# extracted from it, and (vector channel only: keywords have the context column) the turn
# before it. Measured on LoCoMo's tuning split (docs/retrieval.md#memory-keys).
MEMORY_SHARE = 0.9
PREVIOUS_SHARE = 0.6


@dataclass
class Links:
    """What the search knows beyond each candidate's own channels (all keyed by candidate key).

    - memory: a turn -> the facts extracted from it: the turn is found through them too;
    - previous: a turn -> the turn before it: an answer is found through its question;
    - boosts: a key -> [(signal, share, detail)]: the score grows by `share` of itself
      (capped at 1), so a boost reorders items of similar relevance and never lifts an
      irrelevant item above a relevant one far ahead of it; items without it keep their score.
    """

    memory: dict[tuple, list[tuple]] = field(default_factory=dict)
    previous: dict[tuple, tuple] = field(default_factory=dict)
    boosts: dict[tuple, list[tuple[str, float, dict]]] = field(default_factory=dict)


def _relevance(s: Scored) -> float:
    return s.semantic + s.keyword


def _lift(s: Scored, name: str, source: Scored, share: float, inherited: float) -> None:
    """Raise s's relevance to `share` of what `source` has, when that is more than its own."""
    own = _relevance(s)
    if share * inherited > own:
        s.score = clamp01(s.score - own + share * inherited)
        s.signals[name] = {
            "kind": source.kind,
            "id": source.object_id,
            "relevance": round(share * inherited, 6),
            "added": round(share * inherited - own, 6),
        }


def apply_links(scored: list[Scored], links: Links) -> None:
    by_key = {(s.kind, s.object_id): s for s in scored}
    base = {key: (s.semantic + s.keyword, s.semantic) for key, s in by_key.items()}
    for key, facts in links.memory.items():
        turn = by_key.get(key)
        sources = [by_key[f] for f in facts if f in by_key]
        if turn and sources:
            best = max(sources, key=lambda f: base[f.key][0])
            _lift(turn, "memory", best, MEMORY_SHARE, base[best.key][0])
    for key, before in links.previous.items():
        turn, prev = by_key.get(key), by_key.get(before)
        if turn and prev and prev.ranks.get("vector"):
            _lift(turn, "previous", prev, PREVIOUS_SHARE, base[prev.key][1])
    for key, boosts in links.boosts.items():
        if (s := by_key.get(key)) is None:
            continue
        for name, share, detail in boosts:
            before = s.score
            s.score = clamp01(s.score * (1.0 + share))
            s.signals[name] = {**detail, "added": round(s.score - before, 6)}


def rank(
    candidates: list[Candidate], weights: Weights, params: Params, links: Links | None = None
) -> list[Scored]:
    """Every candidate scored and ranked (1 = best); `links` adds the query's signals."""
    ranges, unit = Ranges.of(candidates), weights.normalised()
    lean = _Lean(unit, params, ranges)
    scored = [lean.score(c) for c in candidates]
    if links is not None and (links.memory or links.previous or links.boosts):
        apply_links(scored, links)
    # Ties: newer first, then kind and higher id: deterministic and meaningful.
    ages = {id(s): c.age_days for s, c in zip(scored, candidates, strict=True)}
    scored.sort(key=lambda s: (-s.score, ages[id(s)], s.kind, -s.object_id))
    for position, item in enumerate(scored, 1):
        item.rank = position
    return scored


# Per-question channel shares (issue 31): which channel is the stronger one differs by set and
# by question. On LoCoMo (English) keyword search alone beats the vectors by 15 points; on
# MADial zh, the zh daily-life check and the product owner's Chinese held-out set the vectors
# win (e5 reads Chinese better than jieba and character n-grams match it). A Chinese question
# therefore takes seed 000's split (0.55 semantic : 0.30 keyword), and every question moves
# the two shares towards the channel whose best hits stand out from the rest of its top k
# (confidence: the z-score of its best), square-rooted and kept within a quarter and three
# quarters of the relevance share so neither channel is ever switched off. Chosen on the
# tuning splits (docs/retrieval.md#per-question-channel-shares).
CHINESE_SHARES = (0.55, 0.30)
CONFIDENCE_POWER = 0.5
SHARE_BOUNDS = (0.25, 0.75)


def confidence(values: list[float]) -> float | None:
    """How far a channel's best stands out from its top k: (best - mean) / standard deviation
    (None below three hits or when all are equal)."""
    if len(values) < 3:
        return None
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return (max(values) - mean) / sd if sd > 0 else None


def question_shares(
    weights: Weights, candidates: list[Candidate], chinese: bool
) -> tuple[Weights, dict]:
    """The semantic and keyword shares for this question (the rest keep theirs) and what
    decided them, for the breakdown."""
    sem, kw = weights.semantic, weights.keyword
    relevance = sem + kw
    if chinese:
        sem, kw = (relevance * share / sum(CHINESE_SHARES) for share in CHINESE_SHARES)
    sims = [c.similarity for c in candidates if c.vector_rank and c.similarity is not None]
    kws = [-c.bm25 for c in candidates if c.keyword_rank and c.bm25 is not None]
    conf_sem, conf_kw = confidence(sims), confidence(kws)
    if conf_sem and conf_kw and conf_sem > 0 and conf_kw > 0:
        a, b = sem * conf_sem**CONFIDENCE_POWER, kw * conf_kw**CONFIDENCE_POWER
        low, high = (bound * relevance for bound in SHARE_BOUNDS)
        sem = min(high, max(low, relevance * a / (a + b)))
        kw = relevance - sem
    why = {
        "semantic": round(sem, 4),
        "keyword": round(kw, 4),
        "chinese": chinese,
        "confidence": {
            "vector": None if conf_sem is None else round(conf_sem, 3),
            "keyword": None if conf_kw is None else round(conf_kw, 3),
        },
    }
    return replace(weights, semantic=sem, keyword=kw), why


@dataclass(frozen=True)
class WhatIf:
    change: str  # "importance" or "weight"
    component: str
    value: float
    rank: int

    def to_dict(self) -> dict:
        return asdict(self)


def rank_of(key, candidates, weights, params) -> int | None:
    for item in rank(candidates, weights, params):
        if item.key == key:
            return item.rank
    return None


def what_if(
    key: tuple[str, int],
    candidates: list[Candidate],
    weights: Weights,
    params: Params,
    limit: int,
) -> list[WhatIf]:
    """Small changes that would bring `key` into the top `limit` (smallest change first)."""
    target = next((c for c in candidates if c.key == key), None)
    if target is None:
        return []
    found = []
    if weights.importance > 0:
        for value in (0.6, 0.7, 0.8, 0.9, 1.0):
            if value <= (target.importance or 0):
                continue
            changed = [replace(c, importance=value) if c.key == key else c for c in candidates]
            if (r := rank_of(key, changed, weights, params)) and r <= limit:
                found.append(WhatIf("importance", "importance", value, r))
                break
    base = weights.normalised()
    for name in COMPONENTS:
        for share in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
            if share <= getattr(base, name):
                continue
            moved = _with_share(base, name, share)
            if (r := rank_of(key, candidates, moved, params)) and r <= limit:
                found.append(WhatIf("weight", name, share, r))
                break
    return found


def _with_share(weights: Weights, name: str, share: float) -> Weights:
    """`name` gets `share` of the total; the others keep their proportions in the rest."""
    values = weights.as_dict()
    rest = sum(v for k, v in values.items() if k != name)
    scale = (1 - share) / rest if rest > 0 else 0.0
    return Weights(**{k: (share if k == name else v * scale) for k, v in values.items()})
