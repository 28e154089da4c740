"""Near-duplicate pairs among L2-normalised vectors: each vector's k nearest neighbours.

Pure numpy (no Django). Every vector gets one KNN query, never a comparison with all
others: up to EXACT_MAX vectors the queries are exact (block matrix products); above, an
inverted-file index (spherical k-means, lists of about LIST_SIZE vectors) answers each query
from the PROBES lists whose centroids are nearest to it, so a query costs the same at any
size: the work grows linearly, plus assigning vectors to lists (n * n / LIST_SIZE, small by
the constant). The approximate path can miss a pair that fell into lists none of its probes
reach (0-1% of planted near-duplicates in the tests and benchmark); proposals help the
person, they are not a guarantee.
"""

from __future__ import annotations

import numpy as np

EXACT_MAX = 2048
LIST_SIZE = 256  # vectors per inverted list: a query's work stays the same as n grows
BLOCK = 1024
PROBES = 4
KMEANS_ITERS = 5
SAMPLE_PER_LIST = 16  # the k-means sample grows with the lists: keep it lean


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

    q_ids / b_ids map rows to global indexes; self_cols is each query's own column in base
    (-1: the query is not among the base rows).
    """
    found: dict[tuple[int, int], float] = {}
    for start in range(0, len(queries), BLOCK):
        sims = queries[start : start + BLOCK] @ base.T
        rows = q_ids[start : start + BLOCK]
        own = self_cols[start : start + BLOCK]
        mine = own >= 0
        sims[np.flatnonzero(mine), own[mine]] = -2.0  # never pair a vector with itself
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
    lists = max(8, n // LIST_SIZE)
    centroids = _kmeans(vectors, lists, rng)
    probes = _nearest(vectors, centroids, min(PROBES, lists))  # each vector's nearest lists
    home = probes[:, 0]
    members = [np.flatnonzero(home == c) for c in range(lists)]
    # Per list, every asking vector that probes it is compared with the list's members in
    # one matrix product (one product per list, not one per vector).
    askers = np.flatnonzero(ask)
    flat = probes[askers].ravel()
    order = np.argsort(flat, kind="stable")
    bounds = np.searchsorted(flat[order], np.arange(lists + 1))
    found: dict[tuple[int, int], float] = {}
    for c in range(lists):
        base = members[c]
        q = askers[order[bounds[c] : bounds[c + 1]] // probes.shape[1]]
        if len(q) == 0 or len(base) == 0:
            continue
        pos = np.searchsorted(base, q).clip(0, len(base) - 1)
        own = np.where(base[pos] == q, pos, -1)  # the asker's own column, if it lives here
        found.update(_exact(vectors[q], q, vectors[base], base, own, threshold, k))
    return found
