"""Near-duplicate pairs among L2-normalised vectors: each vector's k nearest neighbours.

Pure numpy (no Django). Every vector gets one KNN query, never a comparison with all
others: up to EXACT_MAX vectors the queries are exact (block matrix products); above, an
inverted-file index (spherical k-means with about sqrt(n) lists) answers each query from
the few lists nearest to its own, so the work grows about as n * sqrt(n) * probes instead of n^2.
The approximate path can miss a pair whose two vectors fell into far-apart lists; the
nightly run uses a fresh random start each time, so a missed pair gets another chance.
"""

from __future__ import annotations

import numpy as np

EXACT_MAX = 4096
BLOCK = 1024
PROBES = 4
KMEANS_ITERS = 8
SAMPLE_PER_LIST = 40


def pairs(
    vectors: np.ndarray,
    threshold: float,
    k: int = 5,
    seed: int | None = None,
    queries: np.ndarray | None = None,
) -> dict[tuple[int, int], float]:
    """{(i, j): similarity} with i < j for each queried vector's top-k neighbours above
    threshold; `queries` (row indexes) limits which vectors ask (default: all of them)."""
    n = len(vectors)
    if n < 2:
        return {}
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    ask = np.ones(n, dtype=bool) if queries is None else np.isin(np.arange(n), queries)
    if not ask.any():
        return {}
    if n <= EXACT_MAX:
        ids, q = np.arange(n), np.flatnonzero(ask)
        return _exact(vectors[q], q, vectors, ids, q, threshold, k)
    return _ivf(vectors, ask, threshold, k, np.random.default_rng(seed))


def _exact(queries, q_ids, base, b_ids, self_cols, threshold: float, k: int) -> dict:
    """Top-k of each query row among the base rows above threshold.

    q_ids / b_ids map rows to global indexes; self_cols is each query's own column in base.
    """
    found: dict[tuple[int, int], float] = {}
    for start in range(0, len(queries), BLOCK):
        sims = queries[start : start + BLOCK] @ base.T
        rows = q_ids[start : start + BLOCK]
        own = self_cols[start : start + BLOCK]
        sims[np.arange(len(own)), own] = -2.0  # never pair a vector with itself
        # Thresholding first keeps this sparse; only rows with many hits need ranking.
        r, c = np.nonzero(sims > threshold)
        if len(r) == 0:
            continue
        vals = sims[r, c]
        order = np.lexsort((-vals, r))
        r, c, vals = r[order], c[order], vals[order]
        starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
        rank = np.arange(len(r)) - np.repeat(starts, np.diff(np.r_[starts, len(r)]))
        keep = rank < k
        i, j = rows[r[keep]], b_ids[c[keep]]
        low, high = np.minimum(i, j).tolist(), np.maximum(i, j).tolist()
        for x, y, v in zip(low, high, vals[keep].tolist(), strict=True):
            found[(x, y)] = v
    return found


def _kmeans(vectors: np.ndarray, lists: int, rng) -> np.ndarray:
    """Spherical k-means on a sample: centroids are unit vectors (cosine geometry)."""
    size = min(len(vectors), lists * SAMPLE_PER_LIST)
    sample = vectors[rng.choice(len(vectors), size, replace=False)]
    centroids = sample[rng.choice(size, lists, replace=False)].copy()
    for _ in range(KMEANS_ITERS):
        assign = _nearest(sample, centroids, 1)[:, 0]
        order = np.argsort(assign, kind="stable")
        counts = np.bincount(assign, minlength=lists)
        sums = np.zeros_like(centroids)
        filled = np.flatnonzero(counts)
        starts = np.r_[0, np.cumsum(counts[filled])[:-1]]
        sums[filled] = np.add.reduceat(sample[order], starts, axis=0)
        empty = counts == 0
        sums[empty] = sample[rng.choice(size, int(empty.sum()))]  # reseed empty lists
        centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True).clip(1e-12)
    return centroids


def _nearest(vectors: np.ndarray, centroids: np.ndarray, probes: int) -> np.ndarray:
    out = np.empty((len(vectors), probes), dtype=np.int64)
    for start in range(0, len(vectors), 8192):
        sims = vectors[start : start + 8192] @ centroids.T
        if probes == 1:
            out[start : start + 8192, 0] = sims.argmax(axis=1)
        else:
            top = np.argpartition(-sims, probes - 1, axis=1)[:, :probes]
            order = np.take_along_axis(sims, top, axis=1).argsort(axis=1)[:, ::-1]
            out[start : start + 8192] = np.take_along_axis(top, order, axis=1)
    return out


def _ivf(vectors: np.ndarray, ask: np.ndarray, threshold: float, k: int, rng) -> dict:
    n = len(vectors)
    lists = max(8, int(np.sqrt(n)))
    centroids = _kmeans(vectors, lists, rng)
    home = _nearest(vectors, centroids, 1)[:, 0]
    members = [np.flatnonzero(home == c) for c in range(lists)]
    # The vectors of one list are queried together against that list and its nearest lists:
    # one matrix product per list instead of one per vector.
    near = _nearest(centroids, centroids, min(PROBES + 1, lists))
    found: dict[tuple[int, int], float] = {}
    for c in range(lists):
        own = np.flatnonzero(ask[members[c]])  # positions of the asking vectors in the list
        if len(own) == 0:
            continue
        others = [o for o in near[c] if o != c][: PROBES - 1]
        base_ids = np.concatenate([members[c], *[members[o] for o in others]])
        if len(base_ids) < 2:
            continue
        q = members[c][own]
        found.update(_exact(vectors[q], q, vectors[base_ids], base_ids, own, threshold, k))
    return found
