"""GET /api/v1/health tells a client whether memory is usable and whether indexing caught up."""

from huey.contrib.djhuey import HUEY

from retrieval.embedders import LocalEmbedder


def test_it_reports_every_part(client, db):
    body = client.get("/api/v1/health").json()
    assert body == {
        "status": "ok",
        "db": "ok",
        "fts": "ok",
        "vector": "ok",
        "embedding_model": LocalEmbedder().name,  # the model and its version
        "queue": {"pending": 0},
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
