"""Every keyword-index row in memory per process, for FTS5's BM25 ranking in numpy.

FTS5 ranks by calling bm25() on every row that matches any query term. A common word matches
a fifth of a collection, and at 100k items those calls were 80% of a query's 20-45 ms
(counting the same matches took 7). Held as postings (term -> rows and weighted frequencies)
the same ranking is a few numpy operations per query term.

The same ranking, not an approximation of it:
- the terms are FTS5's own: every space-separated piece of a stored column is tokenized by
  SQLite itself, in an in-memory FTS5 table with the table's tokenizer (porter stemming and
  unicode61's folding are never re-implemented);
- the score is fts5_aux.c's bm25 with the same inputs (row count, tokens per row over all
  columns, matching rows per phrase within its columns, column weights added instance by
  instance) and the same floating-point operations in the same order, so scores are equal
  to the last bit and ties fall the same way. tests/test_keywords.py checks it against
  bm25() on the same database.
A query phrase that FTS5 would read as several terms ("3.14") needs positions, which are
not held here: such a query returns None and the caller asks FTS5.

The index follows the database through search_fts_log (retrieval/changelog.py). Changed
documents go to a small pending set, merged into the main postings when it grows.
"""

import math
import mmap
import os
import re
import tempfile
from array import array
from itertools import chain
from pathlib import Path

import numpy as np
import sqlean
from django.db import connection

from retrieval import changelog
from retrieval.changelog import LogFollower

K1, B = 1.2, 0.75  # fts5_aux.c
COLUMNS = ("tokens", "grams", "context")  # search_fts's columns, in order
_GROWTH = 4096
_PENDING_MIN = 50_000  # postings held apart before a merge (and at least an eighth of all)
_RELOAD_MIN = 1000  # changed documents read by reloading (and at least a quarter of all)
SPILL_MIN_BYTES = 8 << 20  # main postings larger than this live in a memory-mapped file


class Tokenizer:
    """FTS5's terms for each piece of text, from an in-memory FTS5 table with the same
    tokenizer, remembered per piece (a piece's terms never change)."""

    def __init__(self, tokenize: str):
        self.conn = sqlean.connect(":memory:", check_same_thread=False)
        quoted = "'" + tokenize.replace("'", "''") + "'"
        self.conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize={quoted})")
        self.conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self.vocab: dict[str, int] = {}  # term -> id
        self.pieces: dict[str, tuple[int, ...]] = {}  # piece -> term ids

    def forget_pieces(self) -> None:
        """After a load: the stored rows' pieces are not needed again (a query's are learnt
        as it comes; the terms' ids stay). At 1M items they were a dictionary of 1M entries."""
        self.pieces = {}

    def learn(self, pieces) -> None:
        missing = list({p for p in pieces if p not in self.pieces})
        for start in range(0, len(missing), 10_000):
            self._tokenize(missing[start : start + 10_000])

    def _tokenize(self, pieces: list[str]) -> None:
        self.conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(pieces))
        found: dict[int, list[int]] = {}
        for term, doc in self.conn.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
            term_id = self.vocab.setdefault(term, len(self.vocab))
            found.setdefault(doc, []).append(term_id)
        self.conn.execute("DELETE FROM t")
        for i, piece in enumerate(pieces):
            self.pieces[piece] = tuple(found.get(i, ()))


def _spill_directory() -> Path:
    """Beside the database (a disk, where /tmp may be memory), else the temporary folder."""
    name = str(connection.settings_dict["NAME"])
    folder = Path(os.path.realpath(name)).parent
    if name == ":memory:" or name.startswith("file:") or not os.access(folder, os.W_OK):
        return Path(tempfile.gettempdir())
    return folder


def _table_tokenizer() -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT sql FROM sqlite_master WHERE name = 'search_fts'")
        sql = cur.fetchone()[0]
    match = re.search(r"tokenize\s*=\s*'((?:[^']|'')*)'", sql)
    return match.group(1).replace("''", "'") if match else "unicode61"


class Postings:
    """(row, frequency) per term id of one field: rows int32 and float64 frequencies (12 bytes
    a posting; 46 MB at 100k items), found by term through offsets."""

    def __init__(self, offsets: np.ndarray, rows: np.ndarray, freqs: np.ndarray):
        self.offsets, self.rows, self.freqs = offsets, rows, freqs

    @staticmethod
    def build(parts: list[tuple], vocab: int) -> "Postings":
        if not parts:
            return Postings(np.zeros(vocab + 1, np.int64), np.zeros(0, np.int32), np.zeros(0))
        terms, rows, freqs = (np.concatenate(p) for p in zip(*parts, strict=True))
        order = np.argsort(terms, kind="stable")
        offsets = np.searchsorted(terms[order], np.arange(vocab + 1))
        return Postings(offsets, rows[order], freqs[order])

    def spilled(self, directory: Path) -> "Postings":
        """The same postings in a file of this process's own, memory-mapped: the pages a
        query reads stay in memory while it needs them, the rest is the system's to drop
        (PSS counts only the pages touched: at 1M items the postings are about 480 MB, a
        query reads a few of them). The file has no name (removed once opened) and goes
        with the process."""
        arrays = (self.offsets, self.rows, self.freqs)
        if sum(a.nbytes for a in arrays) < SPILL_MIN_BYTES:
            return self
        with tempfile.TemporaryFile(dir=directory, prefix="memsite-postings-") as f:
            for a in arrays:
                np.ascontiguousarray(a).tofile(f)
            f.flush()
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        views, at = [], 0
        for a in arrays:
            views.append(np.frombuffer(mapped, a.dtype, len(a), at))
            at += a.nbytes
        return Postings(*views)

    def get(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        if term + 1 >= len(self.offsets):
            return self.rows[:0], self.freqs[:0]
        lo, hi = self.offsets[term], self.offsets[term + 1]
        return self.rows[lo:hi], self.freqs[lo:hi]

    def triples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every posting as (term, row, frequency) arrays."""
        terms = np.repeat(np.arange(len(self.offsets) - 1, dtype=np.int32), np.diff(self.offsets))
        return terms, self.rows, self.freqs


def _live(triple: tuple[np.ndarray, ...], docs: np.ndarray) -> tuple[np.ndarray, ...]:
    """The postings of rows not removed since."""
    live = docs[triple[1]] >= 0
    return tuple(a[live] for a in triple)


def frequencies(counts: np.ndarray, weights: tuple[float, ...]) -> np.ndarray:
    """A phrase's frequency in a row as FTS5's bm25 adds it up: each instance's column weight,
    instance by instance in column order. counts is (rows, columns); computed once per
    distinct row of counts (few), since floating-point sums depend on the order."""
    radix = int(counts.max(initial=0)) + 1
    codes = counts @ (radix ** np.arange(counts.shape[1], dtype=np.int64))
    distinct, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    sums = np.zeros(len(distinct))
    for i, row in enumerate(counts[first]):
        total = 0.0
        for count, weight in zip(row, weights, strict=True):
            for _ in range(int(count)):
                total += weight
        sums[i] = total
    return sums[inverse.reshape(-1)]


class KeywordIndex(LogFollower):
    log_table, epoch_table = "search_fts_log", "search_fts_epoch"

    def __init__(self, fields: tuple[tuple[int, ...], ...], weights: tuple[float, ...]):
        """fields: the column sets query phrases search (indexes into COLUMNS); weights: the
        bm25() weight of each column."""
        super().__init__()
        self.fields, self.weights = fields, weights
        self.tokenizer: Tokenizer | None = None
        self._reset()

    def _reset(self) -> None:
        self.docs = np.zeros(0, dtype=np.int64)  # doc id per row; -1 for a removed row
        self.lengths = np.zeros(0)  # tokens per row, all columns
        self.rows: dict[int, int] = {}  # doc id -> row
        self.size = self.live = self.total = self.dead = 0
        self.base: list[Postings] = []
        # (term, row, frequency) arrays per field of rows added since the last merge
        self.pending_parts = self._no_parts()
        self.pending: list[Postings] = []

    # ---- following the database ---------------------------------------------------------

    def _reload(self) -> None:
        self._reset()
        self.tokenizer = Tokenizer(_table_tokenizer())
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM search_fts")
            self._grow(cur.fetchone()[0] + _GROWTH)
            cur.execute(f"SELECT rowid, {', '.join(COLUMNS)} FROM search_fts")
            parts = self._no_parts()
            while batch := cur.fetchmany(4096):
                self._add(batch, parts)
        self.base = self._spilled(self._postings(parts))
        self.pending = self._postings(self.pending_parts)
        self.tokenizer.forget_pieces()

    def _apply(self, doc_ids: list[int]) -> None:
        if len(doc_ids) > max(_RELOAD_MIN, self.live // 4):  # e.g. after a reindex
            return self._reload()  # reading everything costs less than a merge per batch
        for doc_id in doc_ids:
            if (row := self.rows.pop(doc_id, None)) is not None:
                self.docs[row] = -1
                self.live, self.dead = self.live - 1, self.dead + 1
                self.total -= int(self.lengths[row])
        select = f"SELECT rowid, {', '.join(COLUMNS)} FROM search_fts WHERE rowid IN ({{}})"
        for batch in changelog.rows_of(select, doc_ids):
            self._add(batch, self.pending_parts)
        held = sum(len(p.rows) for p in self.base)
        if sum(len(t[0]) for part in self.pending_parts for t in part) > max(
            _PENDING_MIN, held // 8
        ):
            self._merge()
        else:
            self.pending = self._postings(self.pending_parts)

    def _merge(self) -> None:
        """Pending rows into the main postings, leaving out the removed rows' postings."""
        parts = [
            [_live(triple, self.docs) for triple in [*part, base.triples()]]
            for base, part in zip(self.base, self.pending_parts, strict=True)
        ]
        self.base = self._spilled(self._postings(parts))
        self.pending_parts = self._no_parts()
        self.pending = self._postings(self.pending_parts)
        self.dead = 0  # removed rows are no longer in any posting

    def _spilled(self, postings: list[Postings]) -> list[Postings]:
        directory = _spill_directory()
        try:
            return [p.spilled(directory) for p in postings]
        except OSError:  # no room for the file: they stay in memory
            return postings

    def _no_parts(self) -> list[list[tuple]]:
        return [[] for _ in self.fields]

    def _postings(self, parts: list[list[tuple]]) -> list[Postings]:
        return [Postings.build(part, len(self.tokenizer.vocab)) for part in parts]

    def _add(self, batch: list[tuple], parts: list[list[tuple]]) -> None:
        """New rows for these FTS rows, their (term, row, frequency) appended to parts."""
        words: set[str] = set()
        for row in batch:
            for text in row[1:]:
                words.update((text or "").split())
        self.tokenizer.learn(words)
        lookup = self.tokenizer.pieces.__getitem__
        terms, sizes, rows = array("q"), [], []
        for doc_id, *texts in batch:
            rows.append(self._append_row(doc_id))
            for text in texts:
                before = len(terms)
                terms.extend(chain.from_iterable(map(lookup, (text or "").split())))
                sizes.append(len(terms) - before)
        sizes = np.array(sizes, dtype=np.int64).reshape(len(batch), len(COLUMNS))
        self.lengths[rows] = sizes.sum(axis=1)
        self.live, self.total = self.live + len(batch), self.total + int(sizes.sum())
        cells = sizes.reshape(-1)
        flat = (
            np.frombuffer(terms, np.int64),
            np.repeat(np.repeat(np.array(rows, dtype=np.int64), len(COLUMNS)), cells),
            np.repeat(np.tile(np.arange(len(COLUMNS), dtype=np.int8), len(batch)), cells),
        )
        for part, field_columns in zip(parts, self.fields, strict=True):
            part.append(self._field(*flat, field_columns))

    def _field(self, terms, rows, columns, field_columns: tuple[int, ...]) -> tuple:
        """(term, row, frequency) of each term in each row, counting these columns only."""
        inside = np.isin(columns, field_columns)
        terms, rows, columns = terms[inside], rows[inside], columns[inside]
        span = max(self.size, 1)
        keys, inverse = np.unique(terms * span + rows, return_inverse=True)
        counts = np.zeros((len(keys), len(field_columns)), dtype=np.int64)
        for i, column in enumerate(field_columns):
            counts[:, i] = np.bincount(inverse, weights=columns == column, minlength=len(keys))
        weights = tuple(self.weights[c] for c in field_columns)
        freqs = frequencies(counts, weights)
        return (keys // span).astype(np.int32), (keys % span).astype(np.int32), freqs

    def _grow(self, extra: int) -> None:
        self.docs = np.concatenate([self.docs, np.full(extra, -1, dtype=np.int64)])
        self.lengths = np.concatenate([self.lengths, np.zeros(extra)])

    def _append_row(self, doc_id: int) -> int:
        if self.size == len(self.docs):
            self._grow(max(_GROWTH, self.size // 4))
        row, self.size = self.size, self.size + 1
        self.docs[row], self.rows[doc_id] = doc_id, row
        return row

    # ---- ranking -------------------------------------------------------------------------

    def rank(self, phrases: list[tuple[int, str]], count: int) -> list[tuple[int, float]] | None:
        """The `count` best rows for these (field, quoted piece) phrases in FTS5's phrase
        order: (doc id, bm25 as FTS5 returns it: negative, lower is better), best first,
        equal scores newest doc id first. None when a piece is not exactly one FTS5 term."""
        with self.lock:
            self.tokenizer.learn(piece for _field, piece in phrases)
            terms = [self.tokenizer.pieces[piece] for _field, piece in phrases]
            if any(len(t) != 1 for t in terms) or self.live == 0:
                return None
            scores, matched = np.zeros(self.size), np.zeros(self.size, dtype=bool)
            avgdl = self.total / self.live
            for (field, _piece), (term,) in zip(phrases, terms, strict=True):
                rows, freqs = self._live_postings(field, term)
                if len(rows):
                    scores[rows] += self._bm25(len(rows), freqs, self.lengths[rows], avgdl)
                    matched[rows] = True
            return self._best(np.flatnonzero(matched), scores, count)

    def _live_postings(self, field: int, term: int) -> tuple[np.ndarray, np.ndarray]:
        rows, freqs = self.base[field].get(term)
        more_rows, more_freqs = self.pending[field].get(term)
        if len(more_rows):
            rows, freqs = np.concatenate([rows, more_rows]), np.concatenate([freqs, more_freqs])
        if self.dead:
            live = self.docs[rows] >= 0
            rows, freqs = rows[live], freqs[live]
        return rows, freqs

    def _bm25(self, hits: int, freqs, lengths, avgdl: float) -> np.ndarray:
        # fts5Bm25GetData and fts5Bm25Function, operation for operation.
        idf = math.log((self.live - hits + 0.5) / (hits + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        return idf * ((freqs * (K1 + 1.0)) / (freqs + K1 * (1 - B + B * lengths / avgdl)))

    def _best(self, rows: np.ndarray, scores: np.ndarray, count: int) -> list[tuple[int, float]]:
        values = scores[rows]
        if len(rows) > count:  # everything tied with the count-th best, then the exact order
            cut = np.partition(values, len(values) - count)[len(values) - count]
            rows, values = rows[values >= cut], values[values >= cut]
        docs = self.docs[rows]
        order = np.lexsort((-docs, -values))[:count]
        return [(int(docs[i]), -1.0 * float(values[i])) for i in order]


_indexes: dict[tuple, KeywordIndex] = {}


def current(fields: tuple[tuple[int, ...], ...], weights: tuple[float, ...]) -> KeywordIndex:
    """This process's keyword index for the database in use, brought up to date."""
    return changelog.held(_indexes, KeywordIndex, fields, weights)


def prune_log(keep: int = 100_000) -> int:
    return changelog.prune("search_fts_log", keep)
