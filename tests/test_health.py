"""GET /api/v1/health tells a client whether memory is usable and whether indexing caught up."""

import pytest
from django.db import connection
from django.test import override_settings
from huey.contrib.djhuey import HUEY

from retrieval.embedders import LocalEmbedder
from retrieval.probe import shadow_tables, vector_table_problem


def test_it_reports_every_part(client, db):
    body = client.get("/api/v1/health").json()
    assert body == {
        "status": "ok",
        "db": "ok",
        "fts": "ok",
        "vector": "ok",
        "embedding_model": LocalEmbedder().name,  # the model and its version
        "extractor": "learned",  # the rules and the learned model
        "queue": {"pending": 0},
        "backup": {"state": "none", "last_good_at": None},  # a new install: none made yet
        "degraded_reason": None,
    }


def test_it_counts_jobs_waiting_in_the_queue(client, db, monkeypatch):
    monkeypatch.setattr(HUEY, "pending_count", lambda: 3)
    monkeypatch.setattr(HUEY, "scheduled_count", lambda: 2)
    assert client.get("/api/v1/health").json()["queue"] == {"pending": 5}


def test_it_says_degraded_when_vectors_belong_to_another_model(client, db):
    from retrieval.models import EmbeddingSpace

    EmbeddingSpace.objects.create(model_name="text-embedding-3-small", dimension=384)
    body = client.get("/api/v1/health").json()
    assert body["status"] == "degraded" and body["vector"] == "degraded"
    assert body["fts"] == "ok"


def test_unknown_api_paths_answer_json(client, db):
    response = client.get("/api/v1/nothing-here")
    assert response.status_code == 404


# --- the vector table answers a real query (issue 18, item 8) ---------------------------


@pytest.fixture
def indexed(api, django_capture_on_commit_callbacks):
    """A memory in the vector table, so every storage table holds something."""
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/memories", {"content": "drinks oolong every morning", "confidence": 0.95})
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM search_vec")
        assert cur.fetchone()[0] == 1


def sql(statement: str) -> None:
    with connection.cursor() as cur:
        cur.execute(statement)


@pytest.mark.parametrize(
    "table",
    ["search_vec_chunks", "search_vec_rowids", "search_vec_vector_chunks00", "search_vec_info"],
)
@override_settings(SEARCH_VECTOR_MATRIX=False)
def test_it_says_degraded_when_a_vector_storage_table_is_gone(client, indexed, table):
    sql(f"DROP TABLE {table}")
    body = client.get("/api/v1/health").json()
    assert body["status"] == "degraded" and body["vector"] == "degraded"
    assert table in body["degraded_reason"] and body["degraded_reason"].startswith("vector: ")
    assert body["db"] == body["fts"] == "ok"


@override_settings(SEARCH_VECTOR_MATRIX=False)
def test_it_says_degraded_when_the_vector_table_fails_a_query(client, indexed):
    # Every storage table exists, but the vectors are gone from under the index.
    sql("DROP TABLE search_vec_vector_chunks00")
    sql("CREATE TABLE search_vec_vector_chunks00 (rowid PRIMARY KEY, vectors BLOB NOT NULL)")
    body = client.get("/api/v1/health").json()
    assert body["vector"] == "degraded"
    assert "query failed" in body["degraded_reason"]


def test_an_intact_vector_table_passes_the_probe(indexed):
    assert vector_table_problem() is None


def test_the_probe_knows_every_storage_table_sqlite_vec_made(db):
    with connection.cursor() as cur:
        cur.execute("SELECT sql FROM sqlite_master WHERE name = 'search_vec'")
        definition = cur.fetchone()[0]
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        existing = {name for (name,) in cur.fetchall()}
    made = {name for name in existing if name.startswith("search_vec_") and "_log" not in name}
    made -= {"search_vec_epoch"}
    assert set(shadow_tables(definition)) == made


@override_settings(SEARCH_VECTOR_MATRIX=False)
def test_it_says_degraded_when_the_vector_table_lost_its_rows(client, indexed):
    # The storage tables answer queries, but the vectors they index are gone: every KNN
    # query now finds nothing, which is not "ok".
    sql("DELETE FROM search_vec_rowids")
    body = client.get("/api/v1/health").json()
    assert body["vector"] == "degraded"
    assert "lost rows" in body["degraded_reason"]


@override_settings(SEARCH_VECTOR_MATRIX=False)
def test_reindex_check_counts_vectors_the_vector_table_lost(indexed):
    from retrieval import reindex

    sql("DELETE FROM search_vec_rowids")
    report = reindex.check()
    assert sum(r.missing_vectors for r in report.kinds) == 1


@override_settings(SEARCH_VECTOR_MATRIX=False)
def test_reindex_writes_the_lost_vectors_again(client, indexed):
    from retrieval import reindex

    sql("DELETE FROM search_vec_rowids")
    reindex.reindex()
    assert vector_table_problem() is None
    assert reindex.check().problems == 0
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM search_vec")
        assert cur.fetchone()[0] == 1
