"""Pure scoring: normalisations, presets, breakdowns, ties, what-if (no database)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval import scoring
from retrieval.scoring import Candidate, Params, Weights

P = Params(half_life_days=30.0)


def cand(object_id, **kw):
    return Candidate("fact", object_id, **kw)


@pytest.mark.parametrize(
    ("value", "lo", "hi", "expected"),
    [
        (0.5, 0.0, 1.0, 0.5),
        (0.9, 0.7, 0.9, 1.0),
        (0.7, 0.7, 0.9, 0.0),
        (0.6, 0.7, 0.9, 0.0),
        (0.8, 0.8, 0.8, 1.0),
        (None, 0.0, 1.0, 0.0),
    ],
)
def test_minmax_rescales_within_the_channel_range(value, lo, hi, expected):
    assert scoring.minmax(value, lo, hi) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("age", "half_life", "expected"),
    [(0, 30, 1.0), (30, 30, 0.5), (60, 30, 0.25), (-5, 30, 1.0), (10, 0, 1.0)],
)
def test_freshness_halves_every_half_life(age, half_life, expected):
    assert scoring.freshness(age, half_life) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("count", "expected"),
    [(0, 0.0), (50, 1.0), (500, 1.0), (7, math.log1p(7) / math.log1p(50))],
)
def test_access_frequency_is_log_scaled_and_saturates(count, expected):
    assert scoring.access_score(count, 50) == pytest.approx(expected)


def test_presets_are_the_seed_formulas():
    assert scoring.PRESETS["shiyi"].weights == Weights(semantic=0.55, keyword=0.30, freshness=0.15)
    assert scoring.PRESETS["semibot"].weights == Weights(
        semantic=0.60, importance=0.25, freshness=0.15
    )
    assert scoring.PRESETS["semibot"].params.half_life_days == 30
    akita = scoring.PRESETS["openakita"].weights
    assert akita.semantic + akita.keyword == pytest.approx(0.40)
    assert (akita.freshness, akita.importance, akita.access) == (0.25, 0.20, 0.15)
    for preset in scoring.PRESETS.values():
        assert preset.weights.total == pytest.approx(1.0)


def test_each_result_carries_a_full_breakdown():
    ranked = scoring.rank(
        [
            cand(1, similarity=0.9, vector_rank=1, bm25=-8.0, keyword_rank=1, age_days=30),
            cand(2, similarity=0.7, vector_rank=2, age_days=0),
        ],
        scoring.PRESETS["shiyi"].weights,
        P,
    )
    top = ranked[0]
    assert (top.object_id, top.rank, top.found_by, top.ranks) == (
        1,
        1,
        "both",
        {"keyword": 1, "vector": 1},
    )
    sem = top.breakdown["semantic"]
    assert (sem.raw, sem.normalised, sem.weight) == (0.9, 1.0, 0.55)
    assert sem.contribution == pytest.approx(0.55)
    assert top.breakdown["keyword"].raw == 8.0
    assert top.breakdown["freshness"].normalised == pytest.approx(0.5)
    assert top.score == pytest.approx(sum(c.contribution for c in top.breakdown.values()))
    assert ranked[1].found_by == "vector" and ranked[1].breakdown["keyword"].normalised == 0


def test_score_is_the_weighted_sum_of_normalised_components():
    weights = Weights(semantic=2, keyword=1, importance=1)  # proportions, scaled to sum to 1
    [only] = scoring.rank([cand(1, similarity=0.8, vector_rank=1, importance=0.4)], weights, P)
    assert only.score == pytest.approx(0.5 * 1.0 + 0.25 * 0.0 + 0.25 * 0.4)


def test_ties_break_by_recency_not_insertion_order():
    same = {"similarity": 0.8, "vector_rank": 1}
    ranked = scoring.rank(
        [cand(1, age_days=9, **same), cand(2, age_days=1, **same), cand(3, age_days=5, **same)],
        Weights(semantic=1),
        P,
    )
    assert [r.object_id for r in ranked] == [2, 3, 1]


def test_absolute_normalisation_keeps_raw_cosine_and_saturates_bm25():
    params = Params(normalisation="absolute", keyword_saturation=5.0)
    [only] = scoring.rank(
        [cand(1, similarity=0.8, bm25=-5.0, keyword_rank=1)], Weights(keyword=1, semantic=1), params
    )
    assert only.breakdown["semantic"].normalised == pytest.approx(0.8)
    assert only.breakdown["keyword"].normalised == pytest.approx(0.5)


def test_a_failed_channel_gives_its_weight_to_the_other():
    w = scoring.PRESETS["shiyi"].weights
    assert w.without("vector").as_dict() == pytest.approx(
        {"semantic": 0, "keyword": 0.85, "freshness": 0.15, "importance": 0, "access": 0}
    )
    assert w.without("keyword").as_dict() == pytest.approx(
        {"semantic": 0.85, "keyword": 0, "freshness": 0.15, "importance": 0, "access": 0}
    )


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf, "0.5"])
def test_weights_must_be_finite_and_not_negative(bad):
    with pytest.raises(ValueError):
        Weights(semantic=bad)


def test_all_zero_weights_cannot_rank():
    with pytest.raises(ValueError):
        Weights().normalised()


def test_what_if_names_the_smallest_change_that_reaches_the_limit():
    same = {"similarity": 0.8, "vector_rank": 1}
    candidates = [cand(i, importance=0.5, **same) for i in range(1, 6)]
    candidates.append(cand(9, importance=0.1, **same))
    weights = scoring.PRESETS["semibot"].weights
    assert scoring.rank_of(("fact", 9), candidates, weights, P) == 6
    hints = scoring.what_if(("fact", 9), candidates, weights, P, limit=3)
    assert scoring.WhatIf("importance", "importance", 0.6, 1) in hints
    assert all(h.rank <= 3 for h in hints)
    assert scoring.what_if(("fact", 404), candidates, weights, P, limit=3) == []


# ------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------

unit = st.floats(min_value=0, max_value=1, allow_nan=False)
weights_st = st.builds(
    Weights, semantic=unit, keyword=unit, freshness=unit, importance=unit, access=unit
).filter(lambda w: w.total > 1e-6)
candidate_st = st.builds(
    Candidate,
    kind=st.just("fact"),
    object_id=st.integers(1, 10_000),
    similarity=st.none() | st.floats(-1, 1, allow_nan=False),
    vector_rank=st.none() | st.integers(1, 50),
    bm25=st.none() | st.floats(-50, 0, allow_nan=False),
    keyword_rank=st.none() | st.integers(1, 50),
    age_days=st.floats(-10, 5000, allow_nan=False),
    importance=st.none() | st.floats(-2, 3, allow_nan=False),
    access_count=st.integers(0, 10_000),
)
params_st = st.builds(
    Params,
    half_life_days=st.floats(0.5, 365),
    normalisation=st.sampled_from(["minmax", "absolute"]),
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(candidate_st, min_size=1, max_size=30, unique_by=lambda c: c.object_id),
    weights_st,
    params_st,
)
def test_weights_summing_to_one_keep_every_score_in_0_1(candidates, weights, params):
    for item in scoring.rank(candidates, weights.normalised(), params):
        assert 0.0 <= item.score <= 1.0
        for part in item.breakdown.values():
            assert 0.0 <= part.normalised <= 1.0


@settings(max_examples=80, deadline=None)
@given(
    st.lists(candidate_st, min_size=1, max_size=20, unique_by=lambda c: c.object_id),
    st.floats(0.01, 20, allow_nan=False),
    params_st,
)
def test_a_stronger_keyword_match_never_lowers_the_keyword_score(candidates, boost, params):
    """Adding a matching token raises an item's BM25 relevance; its keyword score follows."""
    target = candidates[0]
    before_bm25 = target.bm25 if target.bm25 is not None else 0.0
    stronger = Candidate(
        **{**target.__dict__, "bm25": before_bm25 - boost, "keyword_rank": target.keyword_rank or 1}
    )
    weights = Weights(keyword=1)

    def keyword_of(items):
        scored = {s.object_id: s for s in scoring.rank(items, weights, params)}
        return scored[target.object_id].breakdown["keyword"].normalised

    base = [
        target if target.keyword_rank else Candidate(**{**target.__dict__, "bm25": None}),
        *candidates[1:],
    ]
    assert keyword_of([stronger, *candidates[1:]]) >= keyword_of(base) - 1e-12


@settings(max_examples=100, deadline=None)
@given(
    st.lists(candidate_st, min_size=1, max_size=30, unique_by=lambda c: c.object_id),
    weights_st,
    params_st,
)
def test_ranking_scores_exactly_as_the_full_breakdown_does(candidates, weights, params):
    """rank() scores without building breakdowns; each score, each relevance part the links
    lift by, and the breakdown read afterwards are score_one's to the last bit."""
    ranges, unit = scoring.Ranges.of(candidates), weights.normalised()
    full = {c.key: scoring.score_one(c, unit, params, ranges) for c in candidates}
    for item in scoring.rank(candidates, weights, params):
        expected = full[item.key]
        assert item.score == expected.score
        assert (item.semantic, item.keyword) == (expected.semantic, expected.keyword)
        assert item.breakdown == expected.breakdown
        assert item.found_by == expected.found_by


def test_links_lift_a_ranked_turn_by_its_memory_as_with_full_breakdowns():
    fact = Candidate("fact", 1, similarity=0.9, vector_rank=1, bm25=-8.0, keyword_rank=1)
    turn = Candidate("turn", 2, similarity=0.5, vector_rank=2, age_days=3.0)
    other = Candidate("turn", 3, similarity=0.4, vector_rank=3, bm25=-1.0, keyword_rank=2)
    links = scoring.Links(memory={("turn", 2): [("fact", 1)]})
    ranked = {s.key: s for s in scoring.rank([fact, turn, other], Weights(1, 1, 0.5), P, links)}
    base = scoring.Ranges.of([fact, turn, other])
    unit = Weights(1, 1, 0.5).normalised()
    fact_full = scoring.score_one(fact, unit, P, base)
    turn_full = scoring.score_one(turn, unit, P, base)
    inherited = scoring.MEMORY_SHARE * (fact_full.semantic + fact_full.keyword)
    lifted = ranked[("turn", 2)]
    assert lifted.score == scoring.clamp01(
        turn_full.score - (turn_full.semantic + turn_full.keyword) + inherited
    )
    assert lifted.signals["memory"] == {
        "kind": "fact",
        "id": 1,
        "relevance": round(inherited, 6),
        "added": round(inherited - turn_full.semantic - turn_full.keyword, 6),
    }
    assert lifted.breakdown == turn_full.breakdown  # the lift moves the score, not the parts


@settings(max_examples=60, deadline=None)
@given(st.lists(candidate_st, min_size=2, max_size=20, unique_by=lambda c: c.object_id), weights_st)
def test_ranks_are_a_permutation_sorted_by_score(candidates, weights):
    ranked = scoring.rank(candidates, weights, P)
    assert [r.rank for r in ranked] == list(range(1, len(candidates) + 1))
    scores = [r.score for r in ranked]
    assert scores == sorted(scores, reverse=True)


def test_the_default_preset_is_the_measured_one():
    default = scoring.PRESETS[scoring.DEFAULT_PRESET]
    assert default.name == "curator" and default.params.half_life_days == 180
    assert default.weights == Weights(semantic=0.40, keyword=0.45, freshness=0.15)


# Per-question channel shares (issue 31) ------------------------------------------------


def _channels(sims, relevances):
    """Candidates found by the vector channel (cosines) and the keyword channel (BM25)."""
    found = [cand(n, similarity=s, vector_rank=n + 1) for n, s in enumerate(sims)]
    found += [cand(100 + n, bm25=-r, keyword_rank=n + 1) for n, r in enumerate(relevances)]
    return found


def test_a_chinese_question_leans_on_meaning_and_keeps_the_other_weights():
    base = scoring.PRESETS["curator"].weights
    even = _channels([0.9, 0.8, 0.7, 0.6], [9.0, 8.0, 7.0, 6.0])  # equally peaked channels
    english, why = scoring.question_shares(base, even, chinese=False)
    chinese, why_zh = scoring.question_shares(base, even, chinese=True)
    assert english.keyword > english.semantic and chinese.semantic > chinese.keyword
    assert math.isclose(chinese.semantic / chinese.keyword, 0.55 / 0.30)
    for shares in (english, chinese):
        assert math.isclose(shares.semantic + shares.keyword, 0.85)
        assert shares.freshness == base.freshness
    assert why_zh["chinese"] and not why["chinese"]


def test_the_channel_whose_best_stands_out_gets_the_larger_share_never_all():
    base = scoring.PRESETS["curator"].weights
    spread = [0.9 - n * 0.004 for n in range(50)]  # a top 50 without a clear best
    # One keyword hit far above the other 49: even a Chinese question then leans on keywords.
    peaked = _channels(spread, [30.0] + [2.0 - n * 0.01 for n in range(49)])
    shares, why = scoring.question_shares(base, peaked, chinese=True)
    assert why["confidence"]["keyword"] > 3 * why["confidence"]["vector"]
    assert shares.keyword > shares.semantic
    assert shares.semantic >= 0.25 * 0.85 - 1e-9  # bounded: the other channel still counts
    flat_words = _channels([0.95] + spread[1:], [5.0 - n * 0.01 for n in range(50)])
    shares, _ = scoring.question_shares(base, flat_words, chinese=False)
    assert shares.semantic > shares.keyword and shares.keyword >= 0.25 * 0.85 - 1e-9


def test_a_channel_with_too_few_hits_leaves_the_shares_as_they_start():
    base = scoring.PRESETS["curator"].weights
    shares, why = scoring.question_shares(base, _channels([0.9, 0.8], [5.0, 4.0, 3.0]), False)
    assert shares == base and why["confidence"]["vector"] is None
