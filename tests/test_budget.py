"""Local token estimates and the budget trimmer (pure)."""

import pytest

from retrieval.budget import Block, Section, estimate_tokens, fit_section, trim, truncate


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("杭州", 2), ("hello", 1), ("consolidation", 3), ("hi, you!", 4), ("用 Python 3", 4)],
)
def test_tokens_count_cjk_characters_words_and_symbols(text, tokens):
    assert estimate_tokens(text) == tokens


def test_the_estimate_errs_high_for_english_prose():
    words = "The quick brown fox jumps over the lazy dog near the river bank".split()
    assert estimate_tokens(" ".join(words)) >= len(words)


def test_truncate_keeps_the_longest_prefix_within_the_budget():
    text, cut = truncate("一二三四五六七八九十", 5)
    assert cut and text == "一二三四…" and estimate_tokens(text) <= 5
    assert truncate("short", 10) == ("short", False)


def blocks(name, sizes):
    return [Block(f"{name}{i}", "x", size) for i, size in enumerate(sizes)]


def test_a_section_drops_from_its_end_to_fit_its_own_budget():
    turns = fit_section(Section("turns", 100, blocks("t", [40, 40, 40])))
    assert [b.key for b in turns.blocks] == ["t0", "t1"] and [b.key for b in turns.dropped] == [
        "t2"
    ]


def test_protected_sections_are_never_cut():
    cards = fit_section(Section("cards", 10, blocks("c", [30]), protected=True))
    assert cards.tokens == 30 and not cards.dropped


def test_over_budget_cuts_evidence_first_then_turns_never_cards():
    cards = Section("cards", 600, blocks("c", [500]), protected=True)
    turns = Section("turns", 2000, blocks("t", [300, 300, 300]))  # newest first
    evidence = Section("evidence", 900, blocks("e", [200, 200, 200]))  # best first
    over = trim([cards, turns, evidence], max_tokens=1800, reserve=500, order=["evidence", "turns"])
    assert over == 0
    assert [b.key for b in evidence.blocks] == [] and [b.key for b in evidence.dropped] == [
        "e0",
        "e1",
        "e2",
    ]
    assert [b.key for b in turns.blocks] == ["t0", "t1"]  # the oldest turn went
    assert cards.tokens == 500


def test_evidence_loses_its_lowest_ranked_items_first():
    turns = Section("turns", 2000, blocks("t", [100]))
    evidence = Section("evidence", 900, blocks("e", [200, 200, 200]))
    trim([turns, evidence], max_tokens=1000, reserve=500, order=["evidence", "turns"])
    assert [b.key for b in evidence.blocks] == ["e0", "e1"]


def test_cards_alone_over_the_limit_report_the_excess():
    cards = Section("cards", 600, blocks("c", [900]), protected=True)
    assert trim([cards], max_tokens=1000, reserve=500, order=["evidence", "turns"]) == 400
