"""The shared vector file: exact where promised, filtered like SQL, in step with the database
whatever process writes, one file for every process, and safe from a writer's crash."""

import gc
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from curator.models import FactStatus, Owner
from retrieval import backends, engine, matrix
from retrieval.backends import Filters, embed_query, vector_hits_for
from retrieval.indexing import remove_item, reset_vectors
from retrieval.models import SearchDoc
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
    matrix.current(384)
    with connection.cursor() as cur:  # any writer, any connection: the triggers log it
        cur.execute(
            "UPDATE search_vecf SET embedding = %s WHERE doc_id = %s", [(-query).tobytes(), doc_id]
        )
    (found, similarity, *_), *_ = nearest(matrix.current(384), -query, 1, owner)
    assert found == doc_id and similarity > 0.99


def nearest(held: matrix.VectorMatrix, query, count: int, owner) -> list[tuple]:
    return held.nearest(query, count, owner.pk, ("fact",))[0]


def live_ids(held: matrix.VectorMatrix) -> list[int]:
    f = held.file
    return sorted(int(i) for i in f.ids[: f.size] if i >= 0)


def test_a_pruned_log_or_a_new_model_reloads_everything(owner):
    fact(owner, TEXTS[2])
    assert len(live_ids(matrix.current(384))) == 1
    fact(owner, TEXTS[3])
    assert matrix.prune_log(keep=1) > 0
    assert len(live_ids(matrix.current(384))) == 2
    reset_vectors(384)
    assert live_ids(matrix.current(384)) == []


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
        for _ in range(held.file.seq + 5):  # the new log's numbers overtake the old ones
            cur.execute("INSERT INTO search_vec_log(doc_id) VALUES (0)")
    assert live_ids(matrix.current(384)) == []


def test_warming_up_loads_the_matrix_before_the_first_search(owner):
    from retrieval.search import warm_up

    fact(owner, TEXTS[7])
    matrix._matrices.clear()
    warm_up()
    (held,) = matrix._matrices.values()
    assert len(live_ids(held)) == 1 and held.file.seq is not None
    # What it loaded is out of the garbage collector's way (no full-collection pauses).
    assert gc.get_freeze_count() > 0
    gc.unfreeze()


# ---- the scan itself, on many vectors written straight into the tables -----------------------


def store_vectors(owner, vectors: np.ndarray, other=None) -> list[int]:
    """Doc ids of these vectors, stored as facts' vectors (every fifth another owner's)."""
    now = timezone.now()
    docs = SearchDoc.objects.bulk_create(
        SearchDoc(
            kind="fact",
            object_id=i + 1,
            owner_id=(other.pk if other and i % 5 == 0 else owner.pk),
            content_hash="",
            ts=now,
        )
        for i in range(len(vectors))
    )
    with connection.cursor() as cur:
        cur.executemany(
            "INSERT INTO search_vecf(doc_id, embedding) VALUES (%s, %s)",
            [(d.id, v.astype(np.float32).tobytes()) for d, v in zip(docs, vectors, strict=True)],
        )
    return [d.id for d in docs]


def clustered(rows: int, seed: int = 3) -> np.ndarray:
    """Unit vectors like a sentence model's: all around one direction, in topics of 20."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((rows // 20 + 1, 384)) + rng.standard_normal(384)
    vectors = np.repeat(topics, 20, axis=0)[:rows] + rng.standard_normal((rows, 384)) * 0.8
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def near(vectors: np.ndarray, count: int, seed: int = 4) -> np.ndarray:
    noise = np.random.default_rng(seed).normal(0, 0.03, (count, 384))
    queries = vectors[:count] + noise
    return (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)


def exact_top(vectors, ids, query, k, allowed) -> list[int]:
    sims = vectors @ query
    order = sorted((i for i in range(len(ids)) if allowed[i]), key=lambda i: (-sims[i], -ids[i]))[
        :k
    ]
    return [ids[i] for i in order]


@pytest.fixture
def many(owner):
    other = Owner.objects.create(key="someone-else")
    vectors = clustered(3000)
    ids = store_vectors(owner, vectors, other)
    allowed = [i % 5 != 0 for i in range(len(ids))]
    return owner, vectors, ids, allowed


def test_below_the_sign_bit_size_the_scan_returns_the_exact_top_k(many):
    if not scan_built():
        pytest.skip("the engine is not built here")
    owner, vectors, ids, allowed = many
    held = matrix.current(384)
    for query in near(vectors, 20):
        found = nearest(held, query, 10, owner)
        assert [d for d, *_ in found] == exact_top(vectors, ids, query, 10, allowed)
        row = {d: i for i, d in enumerate(ids)}
        assert np.allclose([s for _, s, *_ in found], [vectors[row[d]] @ query for d, *_ in found])


def test_the_sign_bit_pass_keeps_the_exact_top_10(many, monkeypatch):
    owner, vectors, ids, allowed = many
    monkeypatch.setattr(matrix, "BITS_MIN", 1000)  # the sign-bit pass runs from here
    held = matrix.current(384)
    assert held.file.has_center
    queries = near(vectors, 20)
    overlap = sum(
        len({d for d, *_ in nearest(held, q, 10, owner)}
            & set(exact_top(vectors, ids, q, 10, allowed)))
        for q in queries
    )  # fmt: skip
    assert overlap / 200 >= 0.97
    monkeypatch.setattr(matrix, "SHORTLIST_SHARE", 1)  # a shortlist of every row: exact
    for q in queries:
        found = [d for d, *_ in nearest(held, q, 10, owner)]
        assert found == exact_top(vectors, ids, q, 10, allowed)


def scan_built() -> bool:
    return (k := engine.kernels()) is not None and k.has_scan


def test_without_the_engine_numpy_shortlists_the_same_rows():
    if not scan_built():
        pytest.skip("the engine is not built here")
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**63, size=(5000, 6), dtype=np.uint64)
    owners = rng.integers(1, 3, size=5000).astype(np.int32)
    kinds = rng.integers(0, 4, size=5000).astype(np.int8)
    for want in (1, 37, 400, 6000):
        query = bits[want % 5000] ^ np.uint64(12345)
        ours = engine.kernels().hamming_top(bits, query, owners, kinds, 2, 0b0101, want)
        numpy = matrix._hamming_top_numpy(bits, query, owners, kinds, 2, 0b0101, want)
        assert ours.tolist() == numpy.tolist()
        assert all(owners[ours] == 2) and set(kinds[ours].tolist()) <= {0, 2}


def test_int8_codes_stay_within_half_a_step_of_the_vector():
    vectors = clustered(50)
    codes, scales = matrix.quantise(vectors)
    rebuilt = codes.astype(np.float32) * scales[:, None]
    assert (np.abs(rebuilt - vectors) <= scales[:, None] / 2 + 1e-7).all()


def test_a_full_file_grows_into_a_new_one_that_every_process_maps(owner, monkeypatch):
    monkeypatch.setattr(matrix, "MIN_CAPACITY", 8)
    first = fact(owner, TEXTS[0])
    held = matrix.current(384)
    elsewhere = matrix.VectorMatrix(384)  # another process's view of the same file
    elsewhere.refresh()
    before = held.file
    for text in TEXTS[1:] * 2:
        fact(owner, text + " 2")
    held = matrix.current(384)
    assert held.file is not before and before.replaced
    assert len(live_ids(held)) == 1 + 2 * (len(TEXTS) - 1)
    elsewhere.refresh()  # sees the old file marked replaced: maps the new one
    assert elsewhere.file is not before and elsewhere.file.size == held.file.size
    hits = nearest(elsewhere, embed_query("杭州"), 1, owner)
    assert hits[0][0] == vector_hits_for(embed_query("杭州"), Filters(owner.pk), 1)[0].doc_id
    assert vector_hits_for(embed_query("杭州"), Filters(owner.pk), 1)[0].object_id == first.pk


# ---- one file for every process, safe from a writer's crash -----------------------------------

CHILD = """
import json, os, sys
import numpy as np
os.environ["DJANGO_SETTINGS_MODULE"] = "memsite.settings"
import django
django.setup()
from curator.models import Fact, Owner
from retrieval import matrix
from retrieval.indexing import index_items
held = matrix.current(384)
query = np.load(sys.argv[1])
found, _complete = held.nearest(query, 3, Owner.default().pk, ("fact",))
made = Fact.objects.create(owner=Owner.default(), content=sys.argv[2])
index_items("fact", [made])
print(json.dumps({"inode": os.stat(held.path).st_ino, "path": str(held.path),
                  "found": [hit[0] for hit in found], "made": made.pk}))
"""


def run_child(tmp_path, query, text) -> dict:
    """Another process on the same database (its data dir links to the test database)."""
    data = tmp_path / "child"
    data.mkdir(exist_ok=True)
    link = data / "memory.sqlite3"
    if not link.exists():
        link.symlink_to(Path(settings.DATABASES["default"]["NAME"]))
    np.save(tmp_path / "query.npy", query)
    env = {**os.environ, "MEMSITE_DATA_DIR": str(data), "PYTHONPATH": str(settings.BASE_DIR)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "query.npy"), text],
        env=env, capture_output=True, text=True, cwd=settings.BASE_DIR, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_processes_share_one_file_and_follow_each_others_changes(owner, tmp_path):
    for text in TEXTS:
        fact(owner, text)
    held = matrix.current(384)
    query = embed_query("每天早上喝什么")
    mine = [d for d, *_ in nearest(held, query, 3, owner)]
    child = run_child(tmp_path, query, "每天晚上喝一杯热牛奶")
    # the same file, which the other process mapped as it was (no rebuild, no copy of its own)
    assert Path(child["path"]) == held.path and child["inode"] == os.stat(held.path).st_ino
    assert not held.file.replaced and child["found"] == mine
    # what the other process wrote is found here
    milk = embed_query("热牛奶")
    top = backends.vector_hits_for(milk, Filters(owner.pk), 1)
    assert top[0].object_id == child["made"]


def test_a_writer_killed_before_recording_its_log_position_is_repaired(owner):
    for text in TEXTS[:4]:
        fact(owner, text)
    held = matrix.current(384)
    f = held.file
    seq = f.seq
    # what a writer killed mid-way leaves: rows appended and counted, the log position not
    for text in TEXTS[4:]:
        fact(owner, text)
    with connection.cursor() as cur:
        cur.execute(matrix._ROWS + " WHERE v.doc_id > (SELECT max(doc_id) - 4 FROM search_vecf)")
        matrix._append(f, cur.fetchall())
    assert f.seq == seq
    held = matrix.current(384)  # the next search applies those entries again
    assert len(live_ids(held)) == len(TEXTS)  # each document once
    hits = backends.vector_hits_for(embed_query("咖啡"), Filters(owner.pk), len(TEXTS))
    assert len({h.doc_id for h in hits}) == len(hits) == len(TEXTS)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "another boot"])
def test_a_damaged_or_stale_file_is_rebuilt_from_sqlite(owner, damage, monkeypatch):
    for text in TEXTS:
        fact(owner, text)
    expected = [
        h.doc_id for h in vector_hits_for(embed_query("咖啡"), Filters(owner.pk), 5, exact=True)
    ]
    path = matrix.current(384).path
    matrix._matrices.clear()  # a process starting after the damage
    if damage == "garbage":
        path.write_bytes(b"\x00garbage" * 100)
    elif damage == "truncated":
        with open(path, "r+b") as f:
            f.truncate(5000)
    else:
        monkeypatch.setattr(matrix, "boot_id", lambda: "a later boot")
    hits = vector_hits_for(embed_query("咖啡"), Filters(owner.pk), 5)
    assert [h.doc_id for h in hits] == expected
    assert len(live_ids(matrix.current(384))) == len(TEXTS)


def spy(function, calls: list):
    def wrapper(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)

    return wrapper


def test_a_vector_file_that_cannot_be_written_leaves_the_search_to_sqlite_vec(owner, monkeypatch):
    for text in TEXTS:
        fact(owner, text)
    matrix.current(384).path.unlink()
    matrix._matrices.clear()  # a process starting now: no file to map, none can be written

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(matrix, "create", disk_full)
    monkeypatch.setattr(backends, "_knn_exact", spy(backends._knn_exact, called := []))
    hits = vector_hits_for(embed_query("咖啡"), Filters(owner.pk), 3)
    assert called  # sqlite-vec answered
    expected = vector_hits_for(embed_query("咖啡"), Filters(owner.pk), 3, exact=True)
    assert [h.doc_id for h in hits] == [h.doc_id for h in expected]
