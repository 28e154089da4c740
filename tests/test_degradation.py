"""Seed 000 section 8: vector failure -> keywords; FTS failure -> vectors / recent turns only.

Every failure writes a retrieval_fail MemoryEvent and the result says it is degraded and why.
Tables are really dropped (SQLite DDL is transactional: the test's rollback restores them).
"""

import pytest
from django.db import connection

from curator.models import EventType, MemoryEvent, Owner
from retrieval.context import assemble
from retrieval.embedders import EmbeddingError, LocalEmbedder, use_embedder
from retrieval.models import EmbeddingSpace
from retrieval.search import search
from tests.search_helpers import fact, session, turn


@pytest.fixture
def owner(db):
    return Owner.default()


@pytest.fixture
def memory(owner):
    return fact(owner, "用户住在杭州，周末喜欢爬山")


def sql(statement):
    with connection.cursor() as cur:
        cur.execute(statement)


def failures():
    return list(MemoryEvent.objects.filter(event_type=EventType.RETRIEVAL_FAIL))


class BrokenEmbedder:
    name, dimension = LocalEmbedder().name, 384

    def query(self, text):
        raise EmbeddingError("endpoint timed out")

    def passages(self, texts):
        raise EmbeddingError("endpoint timed out")


def test_a_missing_vector_table_falls_back_to_keywords(owner, memory):
    sql("DROP TABLE search_vec")
    result = search("杭州", owner=owner)
    assert [i.id for i in result.items] == [memory.id]
    assert result.degraded and "vector" in result.degraded_reason
    assert result.items[0].found_by == "keyword" and result.weights["semantic"] == 0
    [event] = failures()
    assert event.payload["stage"] == "vector" and "search_vec" in event.payload["error"]


def test_a_broken_fts_table_falls_back_to_vectors(owner, memory):
    sql("DROP TABLE search_fts")
    sql("CREATE TABLE search_fts (junk)")
    result = search("杭州", owner=owner)
    assert [i.id for i in result.items] == [memory.id] and result.items[0].found_by == "vector"
    assert result.degraded and result.to_dict()["degraded_reason"].startswith("keyword")
    assert [e.payload["stage"] for e in failures()] == ["keyword"]


def test_no_index_at_all_leaves_the_recent_turns(owner, memory):
    s = session(owner)
    older, newest = turn(s, "第一句"), turn(s, "第二句")
    sql("DROP TABLE search_fts")
    sql("DROP TABLE search_vec")
    result = search("杭州", owner=owner)
    assert [i.id for i in result.items] == [newest.id, older.id]
    assert result.degraded and "recent turns" in result.degraded_reason
    assert sorted(e.payload["stage"] for e in failures()) == ["keyword", "vector"]


def test_a_failing_embedder_degrades_and_is_logged(owner, memory):
    use_embedder(BrokenEmbedder())
    try:
        result = search("杭州", owner=owner, actor="agent")
    finally:
        use_embedder(None)
    assert [i.id for i in result.items] == [memory.id] and result.degraded
    [event] = failures()
    assert event.actor == "agent" and "timed out" in event.payload["error"]


def test_vectors_of_another_model_are_a_known_state_not_a_failure(owner, memory):
    EmbeddingSpace.objects.update(model_name="text-embedding-3-small")
    result = search("杭州", owner=owner)
    assert result.degraded and "reindex" in result.degraded_reason
    assert [i.id for i in result.items] == [memory.id] and failures() == []


def test_context_keeps_cards_and_turns_when_search_fails(owner, memory):
    s = session(owner)
    turn(s, "你还记得我住哪吗")
    sql("DROP TABLE search_fts")
    sql("DROP TABLE search_vec")
    context = assemble("你还记得我住哪吗", owner=owner, session_id=s)
    sections = {sec.name: sec for sec in context.sections}
    assert context.degraded and sections["turns"].items and not sections["evidence"].items
