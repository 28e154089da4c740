"""What one memory costs the database: the statements the write path runs for a memory
extracted from a turn (as lifecycle/extraction/extract.py proposes it: inside the turn's own
transaction, with an operation id), bounded so that a change which adds a lookup per memory is
caught here, and the routing reads keyed by their indexes, so the cost does not grow with the
number of memories (bench/writepath.py prints the times; docs/performance.md)."""

from contextlib import nullcontext
from functools import partial

import pytest
from django.db import connection, transaction

from curator.conversations import record_turn
from curator.models import Fact, Owner, PendingItem
from curator.normalize import content_key
from curator.writepath import Candidate, propose
from curator.writepath.propose import _SAME_ITEMS, _SAME_SLOT, _SAME_WORDS

pytestmark = pytest.mark.django_db

# Statements per memory, keyword index row included (before this bound: 26, 35 and 20). A
# written or superseding memory also rewrites its turn's keyword row (memory keys: 7 more,
# retrieval.indexing.refresh_memory_keys); a boosted one changes no words.
WRITTEN, SUPERSEDED, BOOSTED = 28, 35, 16


@pytest.fixture
def turn():
    return record_turn("cost", 0, "user", "I moved to Lisbon and I love oolong tea").turn


def extracted(turn, content, n, counted=nullcontext, **kw) -> str:
    """Propose as extraction does, inside the turn's transaction (`counted`: around the
    proposal alone); the outcome."""
    with transaction.atomic(), counted():
        result = propose(
            Candidate(content=content, source_turn_id=turn.pk, source="rules", **kw),
            actor="job",
            owner=turn.session.owner,
            operation_id=f"extract:{turn.pk}:rules:{n}",
        )
    return result.outcome


def many_memories(count: int) -> None:
    """An install in use: memories and decided review items, written in bulk."""
    owner = Owner.default()
    Fact.objects.bulk_create(
        Fact(
            owner=owner,
            content=f"old memory {i}",
            content_key=content_key(f"old memory {i}"),
            subject="user" if i % 2 else "",
            predicate=f"old: {i}" if i % 2 else "",
        )
        for i in range(count)
    )
    PendingItem.objects.bulk_create(
        PendingItem(
            owner=owner,
            candidate={"content_key": f"old{i}", "subject": ""},
            confidence=0.6,
            reason="low_confidence",
            status="rejected",
        )
        for i in range(count)
    )


@pytest.mark.parametrize("background", [0, 300])
def test_a_new_memory_costs_a_bounded_number_of_statements(
    turn, background, django_assert_max_num_queries
):
    many_memories(background)
    extracted(turn, "The user drinks green tea", 0)  # caches warm: guardrails, thresholds
    at_most = partial(django_assert_max_num_queries, WRITTEN)
    assert extracted(turn, "The user went hiking on Sunday", 1, at_most) == "written"


def test_a_new_value_for_a_subject_costs_a_bounded_number_of_statements(
    turn, django_assert_max_num_queries
):
    slot = {"subject": "user", "predicate": "location"}
    assert extracted(turn, "The user lives in Kyoto", 0, **slot) == "written"
    at_most = partial(django_assert_max_num_queries, SUPERSEDED)
    assert extracted(turn, "The user lives in Lisbon", 1, at_most, **slot) == "superseded"


def test_a_memory_said_again_costs_a_bounded_number_of_statements(
    turn, django_assert_max_num_queries
):
    slot = {"subject": "user", "predicate": "likes: tea"}
    assert extracted(turn, "The user likes oolong tea", 0, **slot) == "written"
    at_most = partial(django_assert_max_num_queries, BOOSTED)
    assert extracted(turn, "The user likes oolong tea", 1, at_most, **slot) == "boosted"


def plan(sql: str, params: list) -> str:
    with connection.cursor() as cur:
        cur.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return " | ".join(row[3] for row in cur.fetchall())


def test_the_routing_reads_are_keyed_by_their_indexes():
    """Without the indexes of migration 0016, SQLite read every active fact of the owner and
    parsed every review item's candidate, for every memory proposed."""
    many_memories(50)
    owner = Owner.default().pk
    facts = plan(
        _SAME_WORDS + _SAME_SLOT,
        [owner, "k", "user", "active", "rejected", owner, "user", "location", "active", "k"],
    )
    assert "USING INDEX fact_same_words" in facts  # the same words
    assert "(owner_id=? AND subject=? AND predicate=?" in facts  # the holder, by its slot
    assert "fact_newest_first" not in facts and "SCAN curator_fact" not in facts
    items = plan(_SAME_ITEMS, ["k", owner, "", "rejected", "pending", "snoozed", "deletion"])
    assert "USING INDEX pending_content_key" in items
