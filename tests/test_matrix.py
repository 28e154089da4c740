"""The in-memory vector matrix: exact, filtered like SQL, and in step with the database."""

import gc
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection, transaction
from django.utils import timezone

from curator.models import FactStatus, Owner
from retrieval import backends, matrix
from retrieval.backends import Filters, embed_query, vector_hits_for
from retrieval.indexing import remove_item, reset_vectors
from tests.search_helpers import fact, session, turn

pytestmark = pytest.mark.django_db(transaction=True)  # the matrix is never read in a transaction

TEXTS = [
    "用户住在杭州，周末喜欢爬山",
    "The user edits code in Neovim",
    "用户对花生过敏",
    "Prefers short answers in Chinese",
    "女儿的生日是五月二日",
    "Works as a data engineer at a logistics company",
    "每天早上喝一杯手冲咖啡",
    "Is learning to play the piano again",
]


@pytest.fixture
def owner():
    reset_vectors(384)  # vector tables are not Django's: a flush between tests leaves them
    return Owner.default()


def matrix_and_sql(query: str, f: Filters, limit: int):
    vector = embed_query(query)
    return vector_hits_for(vector, f, limit), vector_hits_for(vector, f, limit, exact=True)


def test_it_returns_what_sqlite_vec_returns(owner):
    other = Owner.objects.create(key="someone-else")
    for i, text in enumerate(TEXTS):
        status = FactStatus.ARCHIVED if i % 3 == 2 else FactStatus.ACTIVE
        fact(owner, text, status=status)
        fact(other, text + " (someone else)")
    for limit in (1, 3, 10):
        ours, sql = matrix_and_sql(
            "what does the user drink in the morning?", Filters(owner.pk), limit
        )
        assert [h.doc_id for h in ours] == [h.doc_id for h in sql]
        assert np.allclose([h.raw for h in ours], [h.raw for h in sql], atol=1e-5)


def test_a_search_for_one_kind_ranks_only_that_kind(owner, monkeypatch):
    sess = session(owner)
    for i in range(30):
        turn(sess, f"我每天早上喝咖啡 {i}")
    coffee = fact(owner, TEXTS[6])
    fact(owner, TEXTS[0])
    facts_only = Filters(owner.pk, kinds=("fact",))
    sql = vector_hits_for(embed_query("咖啡"), facts_only, 2, exact=True)
    monkeypatch.setattr(backends, "_knn_exact", lambda *a: pytest.fail("fell back to SQL"))
    monkeypatch.setattr(backends, "_knn_bits", lambda *a: pytest.fail("fell back to SQL"))
    ours = vector_hits_for(embed_query("咖啡"), facts_only, 2)
    assert [h.doc_id for h in ours] == [h.doc_id for h in sql]
    assert ours[0].object_id == coffee.pk


def random_matrix(rows: int, seed: int = 3) -> tuple[matrix.VectorMatrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((rows, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    m = matrix.VectorMatrix(384)
    m._grow(rows)
    m._put([(i + 1, v.tobytes(), 1 if i % 5 else 2, "fact") for i, v in enumerate(vectors)])
    return m, vectors


@pytest.mark.django_db(transaction=False)
def test_the_int8_scan_with_float_rescoring_returns_the_exact_top_k(monkeypatch):
    if matrix.engine.kernels() is None:
        pytest.skip("the engine is not built here")
    m, vectors = random_matrix(3000)
    queries = vectors[:20] + np.random.default_rng(4).normal(0, 0.05, (20, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    scanned = [m.nearest(q, 10, 1, ("fact",)) for q in queries]
    monkeypatch.setattr(matrix.engine, "kernels", lambda: None)  # the exact float32 scan
    assert scanned == [m.nearest(q, 10, 1, ("fact",)) for q in queries]
    assert all(doc_id % 5 != 1 for hits in scanned for doc_id, _ in hits)  # owner 2's are out


@pytest.mark.django_db(transaction=False)
def test_int8_codes_stay_within_half_a_step_of_the_vector():
    m, vectors = random_matrix(50)
    rebuilt = m.codes[:50].astype(np.float32) * m.scales[:50, None]
    assert (np.abs(rebuilt - vectors) <= m.scales[:50, None] / 2 + 1e-7).all()


def test_it_follows_new_changed_and_removed_vectors(owner):
    first = fact(owner, TEXTS[0])
    assert [h.object_id for h in vector_hits_for(embed_query("杭州"), Filters(owner.pk), 5)] == [
        first.pk
    ]
    coffee = fact(owner, TEXTS[6])
    top = vector_hits_for(embed_query("咖啡"), Filters(owner.pk), 5)
    assert top[0].object_id == coffee.pk
    remove_item("fact", coffee.pk)
    assert coffee.pk not in [
        h.object_id for h in vector_hits_for(embed_query("咖啡"), Filters(owner.pk), 5)
    ]


def test_a_vector_written_by_another_process_is_seen(owner):
    fact(owner, TEXTS[1])
    query = embed_query("Neovim")
    doc_id = vector_hits_for(query, Filters(owner.pk), 1)[0].doc_id
    held = matrix.current(384)
    with connection.cursor() as cur:  # any writer, any connection: the triggers log it
        cur.execute(
            "UPDATE search_vecf SET embedding = %s WHERE doc_id = %s", [(-query).tobytes(), doc_id]
        )
    assert held.similarities(query, [doc_id])[doc_id] > 0.8  # as last read
    assert matrix.current(384).similarities(query, [doc_id])[doc_id] < -0.99


def test_a_pruned_log_or_a_new_model_reloads_everything(owner):
    fact(owner, TEXTS[2])
    assert len(matrix.current(384).rows) == 1
    fact(owner, TEXTS[3])
    assert matrix.prune_log(keep=1) > 0
    assert len(matrix.current(384).rows) == 2
    reset_vectors(384)
    assert matrix.current(384).rows == {}


def test_a_scoped_search_filters_the_matrix_ranking_like_sqlite_vec(owner, monkeypatch):
    old, new = session(owner, "old"), session(owner, "new")
    last_month = timezone.now() - timedelta(days=30)
    for i in range(12):  # what the query is most like, but outside the scope
        turn(new, f"我每天早上喝咖啡 {i}")
    turn(old, "那天早上喝了一杯咖啡", when=last_month)
    for text in TEXTS:
        fact(owner, text)
    day = timedelta(days=1)
    scoped = Filters(owner.pk, time_from=last_month - day, time_to=last_month + day)
    ours, sql = matrix_and_sql("早上喝咖啡", scoped, 3)
    assert [h.doc_id for h in ours] == [h.doc_id for h in sql]
    assert len(ours) == 3
    monkeypatch.setattr(backends, "_knn_exact", lambda *a: pytest.fail("fell back to SQL"))
    assert vector_hits_for(embed_query("早上喝咖啡"), scoped, 3) == ours


def test_scoped_event_or_transactional_searches_use_sqlite_vec(owner, monkeypatch):
    turn(session(owner), TEXTS[4])
    monkeypatch.setattr(matrix, "current", lambda dim: pytest.fail("matrix used"))
    events = Filters(owner.pk, kinds=("turn",), time_from=timezone.now() - timedelta(days=1))
    assert vector_hits_for(embed_query("生日"), events, 5)
    with transaction.atomic():
        assert vector_hits_for(embed_query("生日"), Filters(owner.pk), 5)


def test_a_log_that_restarted_reloads_everything(owner):
    fact(owner, TEXTS[5])
    held = matrix.current(384)
    with connection.cursor() as cur:  # what rolling migration 0006 back and forth does
        cur.execute("DELETE FROM search_vec_log")
        cur.execute("DELETE FROM sqlite_sequence WHERE name = 'search_vec_log'")
        cur.execute("DELETE FROM search_vecf")
        cur.execute("UPDATE search_vec_epoch SET token = 'another log'")
        for _ in range(held.seq + 5):  # the new log's numbers overtake the old ones
            cur.execute("INSERT INTO search_vec_log(doc_id) VALUES (0)")
    assert matrix.current(384).rows == {}


def test_warming_up_loads_the_matrix_before_the_first_search(owner):
    from retrieval.search import warm_up

    fact(owner, TEXTS[7])
    matrix._matrices.clear()
    warm_up()
    (held,) = matrix._matrices.values()
    assert len(held.rows) == 1 and held.seq is not None
    # What it loaded is out of the garbage collector's way (no full-collection pauses).
    assert gc.get_freeze_count() > 0
    gc.unfreeze()
