""" "Why not recalled?": the exact gate for an item and what would change it."""

import pytest

from curator.models import FactStatus, Owner
from retrieval.explain import why_not
from retrieval.models import SearchDoc
from tests.search_helpers import days_ago, fact, session, turn


@pytest.fixture
def owner(db):
    return Owner.default()


def test_a_recalled_fact_says_its_rank(owner):
    item = fact(owner, "用户住在杭州")
    answer = why_not("杭州", "fact", item.id, owner=owner)
    assert answer.gate == "recalled" and answer.rank == 1 and answer.breakdown["keyword"]["raw"] > 0


@pytest.mark.parametrize(
    ("changes", "gate"),
    [
        ({"status": FactStatus.SUPERSEDED}, "superseded"),
        ({"status": FactStatus.ARCHIVED}, "archived"),
        ({"status": FactStatus.REJECTED}, "rejected"),
        ({"expires_at": days_ago(1)}, "expired"),
    ],
)
def test_filter_gates(owner, changes, gate):
    item = fact(owner, "用户住在杭州", **changes)
    answer = why_not("杭州", "fact", item.id, owner=owner)
    assert answer.gate == gate and answer.suggestions


def test_another_owners_fact(owner):
    other = fact(Owner.objects.create(key="other"), "杭州")
    assert why_not("杭州", "fact", other.id, owner=owner).gate == "owner"


def test_a_kind_left_out(owner):
    item = fact(owner, "杭州")
    assert why_not("杭州", "fact", item.id, owner=owner, kinds=["turn"]).gate == "kind"


def test_outside_the_time_range(owner):
    s = session(owner)
    old = turn(s, "orchard 部署", when=days_ago(30))
    answer = why_not("orchard", "turn", old.id, owner=owner, time_from=days_ago(2))
    assert answer.gate == "time" and "outside the time range" in answer.message


def test_not_indexed_yet(owner):
    item = fact(owner, "杭州", index=False)
    assert why_not("杭州", "fact", item.id, owner=owner).gate == "not_indexed"


def test_no_shared_token_and_below_the_vector_cut_off(owner):
    for n in range(6):
        fact(owner, f"杭州的第 {n} 个地方")
    item = fact(owner, "prefers oolong tea in the morning")
    answer = why_not("杭州", "fact", item.id, owner=owner, k=3)
    assert answer.gate == "not_candidate"
    assert (
        "shares no keyword" in answer.message and "below the vector top-3 cut-off" in answer.message
    )
    assert answer.details["shared_tokens"] == [] and answer.details["similarity"] is not None
    assert answer.hypothetical_rank is not None and answer.suggestions


def test_a_candidate_below_the_limit_gets_what_if_hints(owner):
    same = [fact(owner, "杭州 orchard 记录", importance=0.5) for _ in range(3)]
    target = fact(owner, "杭州 orchard 记录", importance=0.0)
    answer = why_not(
        "杭州 orchard",
        "fact",
        target.id,
        owner=owner,
        mode="keyword",
        weights={"keyword": 1, "importance": 1},
        limit=1,
    )
    assert (answer.gate, answer.rank) == ("below_limit", len(same) + 1)
    assert {
        "change": "importance",
        "component": "importance",
        "value": 0.6,
        "rank": 1,
    } in answer.details["what_if"]
    assert "Rank 1 if its importance were 0.6." in answer.suggestions


def test_a_missing_item(owner):
    assert why_not("x", "fact", 999_999, owner=owner).gate == "missing"


def test_the_index_doc_may_vanish_without_an_error(owner):
    item = fact(owner, "杭州")
    SearchDoc.objects.all().delete()
    assert why_not("杭州", "fact", item.id, owner=owner).gate == "not_indexed"
