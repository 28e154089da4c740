"""The in-memory keyword index: FTS5's bm25 ranking to the last bit, in step with the database."""

import gc
import mmap
import random
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from curator.models import Fact, FactStatus, Owner
from retrieval import backends, keywords
from retrieval import text as seg
from retrieval.backends import Filters, keyword_hits
from retrieval.indexing import index_items, remove_item
from tests.search_helpers import fact, session, turn

pytestmark = pytest.mark.django_db(transaction=True)  # like the matrix, never in a transaction

WORDS = [
    "杭州", "西湖", "龙井", "咖啡", "咖啡馆", "跑步", "周末", "妈妈", "生日", "过敏",
    "running", "runs", "runner", "café", "Neovim", "SQLite", "kubernetes", "deploy", "2026",
    "interview", "interviews", "piano", "lessons",
]  # fmt: skip


@pytest.fixture
def owner():
    with connection.cursor() as cur:  # search_fts is not Django's: a flush leaves its rows
        cur.execute("DELETE FROM search_fts")
    keywords._indexes.clear()
    return Owner.default()


def fts_ranking(query: str, count: int = 41) -> list[tuple[int, float]]:
    """What FTS5 itself returns for the query (the SQL the index replaces)."""
    return [tuple(row) for row in backends._fts_ranking(backends._match(query), count)]


def index_ranking(query: str, count: int = 41):
    return backends._keyword_index_ranking(*backends._terms(query), count)


def some_texts(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) for _ in range(n)]


def queries(rng: random.Random) -> list[str]:
    return [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(60)] + [
        "杭州的咖啡",
        "周末去西湖跑步",
        "run",
        "CAFE",
    ]


@pytest.fixture(params=["in memory", "memory-mapped"])
def spill(request, monkeypatch):
    """Both ways the main postings are held (large ones are spilled to a mapped file)."""
    if request.param == "memory-mapped":
        monkeypatch.setattr(keywords, "SPILL_MIN_BYTES", 0)
    return request.param == "memory-mapped"


def assert_held_as(spilled: bool) -> None:
    held = keywords.current(backends.KEYWORD_FIELDS, backends.BM25_WEIGHTS)
    mapped = [isinstance(getattr(p.rows.base, "obj", None), mmap.mmap) for p in held.base]
    assert mapped == [spilled] * len(held.base)


def test_it_ranks_and_scores_exactly_as_fts5(owner, spill):
    rng = random.Random(7)
    for text in some_texts(rng, 80):
        fact(owner, text)
    s = session(owner)
    for text in some_texts(rng, 30):  # turns also fill the context column
        turn(s, text)
    for _ in range(5):
        fact(owner, "杭州 咖啡 running")  # equal scores: newest document first in both
    for query in queries(rng):
        assert index_ranking(query) == fts_ranking(query), query
    assert_held_as(spill)


def test_it_stays_exact_through_edits_removals_and_merges(owner, monkeypatch, spill):
    monkeypatch.setattr(keywords, "_PENDING_MIN", 20)  # merge after a few documents
    rng = random.Random(11)
    facts = [fact(owner, text) for text in some_texts(rng, 40)]
    index_ranking("杭州")  # loaded now; everything below arrives through the log
    for step in range(60):
        item = rng.choice(facts)
        if step % 3 == 0:
            remove_item("fact", item.pk)
        else:
            Fact.objects.filter(pk=item.pk).update(content=" ".join(rng.choices(WORDS, k=6)))
            index_items("fact", [Fact.objects.get(pk=item.pk)])
        facts.append(fact(owner, " ".join(rng.choices(WORDS, k=4))))
        if step % 10 == 9:
            for query in queries(rng)[:10]:
                assert index_ranking(query) == fts_ranking(query), query
    held = keywords.current(backends.KEYWORD_FIELDS, backends.BM25_WEIGHTS)
    with connection.cursor() as cur:
        cur.execute("SELECT rowid FROM search_fts")
        assert set(held.rows) == {row[0] for row in cur.fetchall()}
    assert held.live == len(held.rows)
    assert_held_as(spill)


def test_a_document_changed_twice_between_merges_counts_once(owner):
    item = fact(owner, "杭州 西湖")
    fact(owner, "杭州 龙井")
    index_ranking("杭州")  # loaded; the edits below wait in the pending set
    for content in ("杭州 咖啡", "杭州 咖啡 咖啡"):
        Fact.objects.filter(pk=item.pk).update(content=content)
        index_items("fact", [Fact.objects.get(pk=item.pk)])
        index_ranking("杭州")  # each version read in turn
    held = keywords.current(backends.KEYWORD_FIELDS, backends.BM25_WEIGHTS)
    assert held.dead == 2 and held.live == 2
    for query in ("杭州", "咖啡", "西湖"):
        assert index_ranking(query) == fts_ranking(query), query


def test_many_changes_at_once_reload_everything(owner, monkeypatch):
    monkeypatch.setattr(keywords, "_RELOAD_MIN", 1)  # a reload above one changed document
    fact(owner, "杭州 西湖")
    held = keywords.current(backends.KEYWORD_FIELDS, backends.BM25_WEIGHTS)
    tokenizer = held.tokenizer
    fact(owner, "杭州 龙井")
    assert held.tokenizer is tokenizer and index_ranking("龙井") == fts_ranking("龙井")
    for text in ("杭州 咖啡", "西湖 咖啡"):
        fact(owner, text)
    assert index_ranking("咖啡") == fts_ranking("咖啡") and held.tokenizer is not tokenizer


def test_a_row_written_by_another_connection_is_seen(owner):
    fact(owner, "杭州 西湖")
    assert len(index_ranking("龙井")) == 0
    doc_id = index_ranking("西湖")[0][0]
    with connection.cursor() as cur:  # any writer: the triggers on search_fts_content log it
        cur.execute("UPDATE search_fts SET tokens = '龙井' WHERE rowid = %s", [doc_id])
    assert index_ranking("龙井") == fts_ranking("龙井") and len(fts_ranking("龙井")) == 1


def test_a_pruned_or_restarted_log_reloads_everything(owner):
    fact(owner, "杭州")
    held = keywords.current(backends.KEYWORD_FIELDS, backends.BM25_WEIGHTS)
    fact(owner, "西湖")
    assert keywords.prune_log(keep=1) > 0
    assert len(keywords.current(backends.KEYWORD_FIELDS, backends.BM25_WEIGHTS).rows) == 2
    with connection.cursor() as cur:  # what rolling migration 0008 back and forth does
        cur.execute("DELETE FROM search_fts")
        cur.execute("DELETE FROM search_fts_log")
        cur.execute("UPDATE search_fts_epoch SET token = 'another log'")
        for _ in range(held.seq + 5):  # the new log's numbers overtake the old ones
            cur.execute("INSERT INTO search_fts_log(doc_id) VALUES (0)")
    assert keywords.current(backends.KEYWORD_FIELDS, backends.BM25_WEIGHTS).rows == {}


def test_a_term_fts5_splits_in_two_is_left_to_fts5(owner):
    item = fact(owner, "pi is about 3.14")
    fact(owner, "14 days, 3 times")
    assert seg.tokens("3.14") == ["3.14"]  # one jieba token, two FTS5 terms: a phrase
    assert index_ranking("3.14") is None  # positions are not held here
    assert [h.object_id for h in keyword_hits("3.14", owner.pk)] == [item.pk]


def test_search_uses_it_and_returns_what_the_sql_returns(owner, monkeypatch):
    other = Owner.objects.create(key="someone-else")
    rng = random.Random(3)
    for i, text in enumerate(some_texts(rng, 40)):
        status = FactStatus.ARCHIVED if i % 5 == 0 else FactStatus.ACTIVE
        fact(owner if i % 4 else other, text, status=status)
    with_index = keyword_hits("杭州 咖啡 running", owner.pk, 5)
    monkeypatch.setattr(keywords, "current", lambda *a: pytest.fail("index used"))
    monkeypatch.setattr(backends.settings, "SEARCH_KEYWORD_INDEX", False)
    assert with_index == keyword_hits("杭州 咖啡 running", owner.pk, 5) and with_index


def test_a_scoped_search_filters_the_ranking_like_the_joined_query(owner, monkeypatch):
    old, new = session(owner, "old"), session(owner, "new")
    last_month = timezone.now() - timedelta(days=30)
    for i in range(12):  # the best matches, but outside the scope
        turn(new, f"杭州 西湖 龙井 {i}")
    turn(old, "杭州 西湖 龙井 上个月", when=last_month)
    for i in range(30):  # enough documents without 龙井 for it to count
        fact(owner, f"杭州 西湖 {'咖啡 ' * (i % 4)}")
    day = timedelta(days=1)
    scoped = Filters(owner.pk, time_from=last_month - day, time_to=last_month + day)
    ranked = keyword_hits("杭州 西湖 龙井", owner.pk, 3, filters=scoped)
    assert backends._keyword_hits_unjoined(backends._terms("杭州 西湖 龙井"), scoped, 3) == ranked
    monkeypatch.setattr(backends, "_keyword_hits_unjoined", lambda *a: None)
    assert keyword_hits("杭州 西湖 龙井", owner.pk, 3, filters=scoped) == ranked
    assert len(ranked) == 3 and ranked[0].kind == "turn"  # the one turn in scope ranks first


def test_transactional_or_switched_off_searches_ask_fts5(owner, monkeypatch, settings):
    fact(owner, "杭州 西湖")
    monkeypatch.setattr(keywords, "current", lambda *a: pytest.fail("index used"))
    with transaction.atomic():
        assert keyword_hits("西湖", owner.pk)
    settings.SEARCH_KEYWORD_INDEX = False
    assert keyword_hits("西湖", owner.pk)
    scoped = Filters(owner.pk, time_from=timezone.now())
    assert keyword_hits("西湖", owner.pk, filters=scoped)  # facts are timeless


def test_frequencies_add_column_weights_instance_by_instance():
    counts = __import__("numpy").array([[1, 3], [0, 0], [2, 1]])
    got = keywords.frequencies(counts, (1.0, 0.6))
    total = 1.0
    for _ in range(3):
        total += 0.6  # not 1.0 + 3 * 0.6: the sum FTS5 makes, rounding included
    assert list(got) == [total, 0.0, 2.0 + 0.6]


def test_warming_up_loads_it_before_the_first_search(owner):
    from retrieval.search import warm_up

    fact(owner, "杭州 西湖")
    keywords._indexes.clear()
    warm_up()
    (held,) = keywords._indexes.values()
    assert len(held.rows) == 1 and held.seq is not None
    gc.unfreeze()


def test_the_current_ddl_is_what_the_migrations_created():
    from retrieval import schema

    with connection.cursor() as cur:
        cur.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'search_%'")
        created = {row[0] for row in cur.fetchall()}
    assert set(schema.FTS_TRIGGERS) | set(schema.VECF_TRIGGERS) == created


def test_query_terms_are_the_quoted_ones():
    terms = ["杭州", "西湖", "杭州", *[f"w{i}" for i in range(300)]]
    assert seg.query_terms(terms)[:3] == ["杭州", "西湖", "w0"]
    assert len(seg.query_terms(terms)) == seg.MAX_QUERY_TERMS
