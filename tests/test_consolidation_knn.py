"""The near-duplicate search: one KNN query per asking vector, exact or through lists."""

import numpy as np
import pytest

from lifecycle import knn


def world(n=3000, dim=64, seed=0):
    """Clustered unit vectors with 1% planted near-duplicates (row i+1 copies row i)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, dim))
    x = centres[rng.integers(0, 40, n)] + rng.normal(0, 0.6, (n, dim))
    planted = rng.choice(n - 1, n // 100, replace=False)
    x[planted + 1] = x[planted] + rng.normal(0, 0.02, (len(planted), dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32), {(int(i), int(i) + 1) for i in planted}


def brute(x, threshold):
    sims = x @ x.T
    np.fill_diagonal(sims, 0)
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(sims) > threshold), strict=True)}


def test_small_sets_are_searched_exactly():
    x, _planted = world(800)
    assert set(knn.pairs(x, 0.95, k=800)) == brute(x, 0.95)


def test_only_the_asking_vectors_query():
    x, _planted = world(800)
    asking = np.arange(0, 800, 3)
    expected = {p for p in brute(x, 0.95) if p[0] in set(asking) or p[1] in set(asking)}
    assert set(knn.pairs(x, 0.95, k=800, queries=asking)) == expected
    assert knn.pairs(x, 0.95, queries=np.array([], dtype=int)) == {}


def test_large_sets_go_through_lists_and_still_find_near_duplicates(monkeypatch):
    monkeypatch.setattr(knn, "EXACT_MAX", 500)
    monkeypatch.setattr(knn, "LIST_SIZE", 100)
    x, _planted = world(3000)
    truth, found = brute(x, 0.97), set(knn.pairs(x, 0.97, k=5, seed=1))
    assert len(truth) >= 25
    assert len(found & truth) >= 0.95 * len(truth)
    assert found <= truth  # never a pair below the threshold


@pytest.mark.parametrize("n", [0, 1])
def test_nothing_to_compare(n):
    assert knn.pairs(np.zeros((n, 8), dtype=np.float32), 0.9) == {}
