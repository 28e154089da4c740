"""Every stored vector in one float32 matrix per process, for exact KNN in numpy.

sqlite-vec reads its own pages on every query: 6 ms for 10k vectors, 25 ms for 100k even with
the sign-bit prefilter (which also misses a fifth of the true top 50). The same vectors held
in memory are scanned exactly in about 1.3 and 15 ms (1.5 KB a vector: 150 MB at 100k).
Reading them is the cost, so with the engine built (retrieval/engine) the scan reads int8
copies instead (a quarter of the bytes: 16 -> 2.5 ms at 100k) and rescores the best
RESCORE x k rows in float32. Not exact by construction, but on the bench queries it returned
the exact top 10 and top 50 every time (bench/search.py checks it; docs/performance.md).

The matrix follows the database through search_vec_log, which triggers on search_vecf fill
whichever process writes a vector (retrieval/changelog.py).
"""

import numpy as np
from django.db import connection

from retrieval import changelog, engine
from retrieval.changelog import LogFollower
from retrieval.models import Kind

_GROWTH = 4096  # rows added at a time when the matrix is full
RESCORE = 4  # rows rescored in float32 per row asked for, after the int8 scan
KIND_CODES = {kind.value: code for code, kind in enumerate(Kind)}
# A vector with its document's owner and kind (neither ever changes), so a search for one
# owner's facts ranks only those instead of falling back to SQL when turns fill the top.
_ROWS = (
    "SELECT v.doc_id, v.embedding, d.owner_id, d.kind FROM search_vecf v "
    "JOIN retrieval_searchdoc d ON d.id = v.doc_id"
)


class VectorMatrix(LogFollower):
    log_table, epoch_table = "search_vec_log", "search_vec_epoch"

    def __init__(self, dimension: int):
        super().__init__()
        self.dimension = dimension
        self._reset()

    def _reset(self) -> None:
        self.vectors = np.zeros((0, self.dimension), dtype=np.float32)
        self.codes = np.zeros((0, self.dimension), dtype=np.int8)  # see quantise()
        self.scales = np.zeros(0, dtype=np.float32)
        self.ids = np.zeros(0, dtype=np.int64)  # doc id per row; -1 for a removed vector
        self.owners = np.zeros(0, dtype=np.int64)
        self.kinds = np.zeros(0, dtype=np.int8)
        self.rows: dict[int, int] = {}  # doc id -> row
        self.size = 0

    # ---- following the database (retrieval/changelog.py) ---------------------------------

    def _reload(self) -> None:
        self._reset()
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM search_vecf")
            self._grow(cur.fetchone()[0] + _GROWTH)  # at once: growing copies the matrix
            cur.execute(_ROWS)
            while batch := cur.fetchmany(4096):
                self._put(batch)

    def _apply(self, doc_ids: list[int]) -> None:
        found: set[int] = set()
        for batch in changelog.rows_of(_ROWS + " WHERE v.doc_id IN ({})", doc_ids):
            self._put(batch)
            found.update(row[0] for row in batch)
        for doc_id in set(doc_ids) - found:  # gone from the table: removed
            if (row := self.rows.pop(doc_id, None)) is not None:
                self.ids[row], self.vectors[row], self.codes[row] = -1, 0.0, 0

    def _put(self, batch: list[tuple[int, bytes, int, str]]) -> None:
        rows, vectors = [], []
        for doc_id, blob, owner_id, kind in batch:
            vector = np.frombuffer(bytes(blob), dtype=np.float32)
            if vector.shape[0] != self.dimension:
                continue  # a vector of another model: never mixed in
            row = self.rows.get(doc_id)
            if row is None:
                row = self._append_row(doc_id)
            self.owners[row], self.kinds[row] = owner_id, KIND_CODES[kind]
            rows.append(row)
            vectors.append(vector)
        if rows:  # at once: quantising row by row would double a reload's time
            block = np.vstack(vectors)
            self.vectors[rows] = block
            self.codes[rows], self.scales[rows] = quantise(block)

    def _grow(self, extra: int) -> None:
        self.vectors = np.vstack([self.vectors, np.zeros((extra, self.dimension), np.float32)])
        self.codes = np.vstack([self.codes, np.zeros((extra, self.dimension), np.int8)])
        self.scales = np.concatenate([self.scales, np.ones(extra, dtype=np.float32)])
        self.ids = np.concatenate([self.ids, np.full(extra, -1, dtype=np.int64)])
        self.owners = np.concatenate([self.owners, np.zeros(extra, dtype=np.int64)])
        self.kinds = np.concatenate([self.kinds, np.zeros(extra, dtype=np.int8)])

    def _append_row(self, doc_id: int) -> int:
        if self.size == len(self.ids):
            self._grow(max(_GROWTH, self.size // 4))
        row, self.size = self.size, self.size + 1
        self.ids[row], self.rows[doc_id] = doc_id, row
        return row

    # ---- searching -----------------------------------------------------------------------

    def nearest(
        self, query: np.ndarray, count: int, owner_id: int, kinds: tuple[str, ...]
    ) -> list[tuple[int, float]]:
        """The `count` vectors of this owner and these kinds most similar to the query:
        (doc id, cosine similarity), best first; equal similarities newest doc first."""
        with self.lock:  # a snapshot: growing replaces the arrays, it never resizes them
            n = self.size
            vectors, codes, scales = self.vectors[:n], self.codes[:n], self.scales[:n]
            ids, owners, kind_codes = self.ids[:n], self.owners[:n], self.kinds[:n]
        wanted = (ids >= 0) & (owners == owner_id)
        if len(kinds) < len(KIND_CODES):
            wanted &= np.isin(kind_codes, [KIND_CODES[k] for k in kinds])
        count = min(count, int(wanted.sum()))
        if count <= 0:
            return []
        scan = engine.kernels()
        if scan is None:  # no built engine: the exact scan in numpy
            rows, sims = np.arange(n), vectors @ query
        else:
            rows, sims = _rescored(vectors, codes, scales, query, wanted, RESCORE * count, scan)
        sims = np.where(wanted[rows], sims, -np.inf)
        top = np.argpartition(sims, -count)[-count:]
        top = top[np.lexsort((-ids[rows[top]], -sims[top]))]
        return [(int(ids[rows[i]]), float(sims[i])) for i in top]

    def similarities(self, query: np.ndarray, doc_ids) -> dict[int, float]:
        with self.lock:
            rows = [(d, self.rows[d]) for d in doc_ids if d in self.rows]
            return {d: float(self.vectors[row] @ query) for d, row in rows}


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 codes of each row and its scale: row ~= codes * scale."""
    peak = np.abs(vectors).max(axis=-1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scale[..., None]).astype(np.int8)
    return codes, scale


def _rescored(vectors, codes, scales, query, wanted, shortlist: int, scan):
    """(rows, exact similarities) of the `shortlist` rows the int8 scan ranks best."""
    query_codes, _scale = quantise(query)  # one scale for every row: no effect on order
    rough = scan.dot_i8(codes, query_codes).astype(np.float32) * scales
    rough[~wanted] = -np.inf
    if shortlist < len(rough):
        rows = np.argpartition(rough, -shortlist)[-shortlist:]
    else:
        rows = np.arange(len(rough))
    return rows, vectors[rows] @ query


_matrices: dict[tuple[str, int], VectorMatrix] = {}


def current(dimension: int) -> VectorMatrix:
    """This process's matrix for the database in use, brought up to date."""
    return changelog.held(_matrices, VectorMatrix, dimension)


def prune_log(keep: int = 100_000) -> int:
    return changelog.prune("search_vec_log", keep)
