"""Every stored vector's codes in one memory-mapped file beside the database, shared by
every process that searches (web processes, the task consumer), for KNN without SQL.

sqlite-vec reads its own pages on every query (6 ms for 10k vectors, 25 ms for 100k), and a
float32 copy per process cost 1.5 KB a vector in each of them (188 MB at 100k with its int8
copy, held again by every process). The file holds, per vector, only what the scan reads:
its doc id, owner and kind, its int8 codes with their scale (a quarter of the float32 bytes)
and its sign bits around the collection's mean vector (an eighth of the int8 codes): 450
bytes, mapped once by the kernel for every process (PSS counts it once in total).

A search (nearest) over more than BITS_MIN vectors:
1. ranks the owner's vectors of the wanted kinds by the Hamming distance of their sign bits
   to the query's (48 bytes a vector: 100k in about 0.4 ms in retrieval/engine) and keeps a
   shortlist of max(SHORTLIST x count, n / SHORTLIST_SHARE) rows;
2. rescores the shortlist with the int8 codes;
3. rescores the best RESCORE x count rows with their float32 vectors, read from SQLite
   (search_vecf, which holds them anyway), and returns those in exact cosine order.
Smaller collections skip step 1: every int8 code is scanned. Step 1 is approximate; on the
bench's queries the vector top 10 keeps >= 0.99 of exact KNN's (bench/search.py and
bench/peers.py print it).

The file follows the database through search_vec_log (retrieval/changelog.py's protocol):
its header holds the last log entry applied and the log's epoch token. Whichever process
sees the log ahead of the file applies the changes under an exclusive lock (flock on a
sidecar file), appending rows and marking replaced or removed ones; readers never lock.
Crash safety: a row is written before the count that makes it visible, and the count
before the log position, so a process killed mid-write leaves entries that the next one
applies again (applying is idempotent); a file from another boot (its pages may not all
have reached the disk), of another layout or another log is rebuilt from SQLite. Growing,
compacting and rebuilding write a new file and rename it over the old one, whose header then
says "replaced" so every process maps the new one.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.db import connection

from retrieval import changelog, engine
from retrieval.models import Kind

VERSION = 1
MAGIC = b"MCVF"
BITS_MIN = 20_000  # vectors: from here, the sign-bit pass shortlists before the int8 codes
SHORTLIST = 20  # rows kept by the sign-bit pass per row asked for ...
SHORTLIST_SHARE = 100  # ... and at least this share of the collection (1%)
RESCORE = 1.5  # rows rescored with float32 vectors per row asked for
GROWTH = 1.5  # a full file is replaced by one this much larger
MIN_CAPACITY = 4096
KIND_CODES = {kind.value: code for code, kind in enumerate(Kind)}
# A vector with its document's owner and kind (neither ever changes), so a search for one
# owner's facts ranks only those.
_ROWS = (
    "SELECT v.doc_id, v.embedding, d.owner_id, d.kind FROM search_vecf v "
    "JOIN retrieval_searchdoc d ON d.id = v.doc_id"
)
# magic, version, dimension, words, capacity, size, seq (-1: none), epoch, boot id,
# replaced, has centre
_FIXED = struct.Struct("<4sIIIQQq32s36sBB")
_SIZE_AT, _SEQ_AT = 24, 32  # byte offsets of size and seq in the header
_REPLACED_AT = _FIXED.size - 2


def boot_id() -> str:
    """This boot of the machine: a file written in another may have lost pages."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


@dataclass
class Layout:
    dimension: int
    capacity: int

    @property
    def words(self) -> int:
        return (self.dimension + 63) // 64

    @property
    def header(self) -> int:
        """Bytes before the arrays: the fixed fields and the mean vector, whole pages."""
        return -(-(_FIXED.size + 2 + 4 * self.dimension) // 4096) * 4096

    def sections(self) -> dict[str, tuple[int, np.dtype, tuple]]:
        """name -> (offset, dtype, shape): each section 64-byte aligned."""
        out, at = {}, self.header
        cap = self.capacity
        for name, dtype, shape in (
            ("ids", np.int64, (cap,)),
            ("owners", np.int32, (cap,)),
            ("kinds", np.int8, (cap,)),
            ("scales", np.float32, (cap,)),
            ("bits", np.uint64, (cap, self.words)),
            ("codes", np.int8, (cap, self.dimension)),
        ):
            out[name] = (at, np.dtype(dtype), shape)
            at += -(-int(np.prod(shape)) * np.dtype(dtype).itemsize // 64) * 64
        out["_end"] = (at, None, ())
        return out

    @property
    def size_bytes(self) -> int:
        return self.sections()["_end"][0]


class VectorFile:
    """One mapping of the file: the header's fields and numpy views of its arrays."""

    def __init__(self, path: Path):
        self.path = path
        with open(path, "r+b") as f:
            self.inode = os.fstat(f.fileno()).st_ino
            self.map = mmap.mmap(f.fileno(), 0)
        head = _FIXED.unpack_from(self.map, 0)
        magic, version, dimension, words, capacity = head[:5]
        if magic != MAGIC or version != VERSION:
            raise ValueError("not a vector file of this version")
        self.layout = Layout(dimension, capacity)
        if self.layout.size_bytes > len(self.map) or words != self.layout.words:
            raise ValueError("a truncated vector file")
        self.epoch = head[7].rstrip(b"\0").decode()
        self.boot = head[8].rstrip(b"\0").decode()
        self.center = np.frombuffer(self.map, np.float32, dimension, _FIXED.size + 2)
        self.arrays = {
            name: np.frombuffer(self.map, dtype, int(np.prod(shape)), offset).reshape(shape)
            for name, (offset, dtype, shape) in self.layout.sections().items()
            if dtype is not None
        }
        self.ids, self.owners, self.kinds = (self.arrays[n] for n in ("ids", "owners", "kinds"))
        self.scales, self.bits, self.codes = (self.arrays[n] for n in ("scales", "bits", "codes"))
        self._size = np.frombuffer(self.map, np.uint64, 1, _SIZE_AT)
        self._seq = np.frombuffer(self.map, np.int64, 1, _SEQ_AT)

    @property
    def size(self) -> int:
        return int(self._size[0])

    @property
    def seq(self) -> int | None:
        value = int(self._seq[0])
        return None if value < 0 else value

    @property
    def replaced(self) -> bool:
        return self.map[_REPLACED_AT] == 1

    def set_size(self, size: int) -> None:
        self._size[0] = size

    def set_seq(self, seq: int | None) -> None:
        self._seq[0] = -1 if seq is None else seq

    def mark_replaced(self) -> None:
        self.map[_REPLACED_AT] = 1

    @property
    def has_center(self) -> bool:
        return self.map[_FIXED.size - 1] == 1


def create(path: Path, layout: Layout, epoch: str, center: np.ndarray | None) -> None:
    """An empty file of this layout (size 0, no log entry applied), written whole."""
    with open(path, "wb") as f:
        f.truncate(layout.size_bytes)
        head = _FIXED.pack(
            MAGIC,
            VERSION,
            layout.dimension,
            layout.words,
            layout.capacity,
            0,
            -1,
            epoch.encode()[:32],
            boot_id().encode()[:36],
            0,
            int(center is not None),
        )
        f.write(head)
        f.write(b"\0\0")
        if center is not None:
            f.write(np.asarray(center, np.float32).tobytes())


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 codes of each row and its scale: row ~= codes * scale."""
    peak = np.abs(vectors).max(axis=-1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scale[..., None]).astype(np.int8)
    return codes, scale


def sign_bits(vectors: np.ndarray, center: np.ndarray) -> np.ndarray:
    """Each row's signs around the centre, packed in uint64 words."""
    vectors = np.atleast_2d(vectors)
    packed = np.packbits(vectors - center > 0, axis=-1)
    words = -(-vectors.shape[1] // 64)
    padded = np.zeros((len(vectors), words * 8), np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view(np.uint64)


def file_path() -> Path:
    """Beside the database file; a private temporary file for an in-memory database."""
    name = str(connection.settings_dict["NAME"])
    if name == ":memory:" or name.startswith("file:"):
        safe = "".join(c if c.isalnum() else "-" for c in name)[:60]
        return Path(tempfile.gettempdir()) / f"memsite-{os.getpid()}-{safe}.vectors"
    return Path(os.path.realpath(name) + ".vectors")  # one file whatever path led there


class VectorMatrix:
    """This process's view of the shared vector file, brought up to date before searches."""

    def __init__(self, dimension: int, path: Path | None = None):
        self.dimension = dimension
        self.path = path or file_path()
        self.lock = threading.Lock()
        self.file: VectorFile | None = None

    # ---- following the database ----------------------------------------------------------

    def refresh(self) -> None:
        with self.lock:
            self._map_current()
            with connection.cursor() as cur:
                cur.execute(
                    "SELECT (SELECT token FROM search_vec_epoch), "
                    "(SELECT min(seq) FROM search_vec_log), (SELECT max(seq) FROM search_vec_log)"
                )
                epoch, first, last = cur.fetchone()
            epoch = epoch or ""
            if self._in_step(epoch, last):
                return
            with _writer_lock(self.path):
                self._map_current()  # another process may have replaced it meanwhile
                if self._in_step(epoch, last):
                    return
                self._catch_up(epoch, first, last)

    def _in_step(self, epoch: str, last: int | None) -> bool:
        """The file is of this log and has applied its entries up to `last` (or beyond: a
        process that read the log later may have applied more meanwhile)."""
        f = self.file
        if f is None or f.epoch != epoch:
            return False
        return f.seq == last or (f.seq is not None and last is not None and f.seq > last)

    def _map_current(self) -> None:
        """Map the file at the path if this process has none, or it was replaced."""
        f = self.file
        if f is not None and not f.replaced:
            return
        try:
            fresh = VectorFile(self.path)
        except (OSError, ValueError):
            fresh = None
        if fresh is not None and (
            fresh.layout.dimension != self.dimension or fresh.boot != boot_id()
        ):
            fresh = None
        # A replaced mapping is not closed: a search in another thread may still read it;
        # it is unmapped when the last view of it goes.
        self.file = fresh

    def _catch_up(self, epoch: str, first: int | None, last: int | None) -> None:
        """Under the writer lock: apply the log entries the file lacks, or rebuild it."""
        f = self.file
        changed = None
        if f is not None and f.epoch == epoch:
            changed = _changes_since(f.seq, first, last)
        if changed is None:
            self._rebuild(epoch, last)
            return
        rows = _vector_rows(changed)
        _remove(f, changed)
        if f.size + len(rows) > f.layout.capacity:
            f = self._grown(f, len(rows))
        _append(f, rows)
        f.set_seq(last)

    def _rebuild(self, epoch: str, last: int | None) -> None:
        """A new file from SQLite (every vector), renamed over the old one."""
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM search_vecf")
            count = cur.fetchone()[0]
        layout = Layout(self.dimension, max(MIN_CAPACITY, int(count * GROWTH)))
        fresh = self._new_file(layout, epoch, _mean_vector() if count else None)
        with connection.cursor() as cur:
            cur.execute(_ROWS)
            while batch := cur.fetchmany(4096):
                _append(fresh, batch)
        fresh.set_seq(last)
        self._install(fresh)

    def _grown(self, f: VectorFile, extra: int) -> VectorFile:
        """A larger file with f's live rows (removed ones left out), at f's log position.
        A file that had too few vectors for a mean gets one now, and its rows' sign bits."""
        live = np.flatnonzero(f.ids[: f.size] >= 0)
        layout = Layout(self.dimension, max(MIN_CAPACITY, int((len(live) + extra) * GROWTH)))
        center = f.center if f.has_center else None
        vectors = f.codes[live].astype(np.float32) * f.scales[live, None]
        if center is None and len(live):
            center = vectors.mean(axis=0)
        fresh = self._new_file(layout, f.epoch, center)
        n = len(live)
        for name in ("codes", "scales", "kinds", "ids", "owners"):
            fresh.arrays[name][:n] = f.arrays[name][live]
        fresh.bits[:n] = f.bits[live] if f.has_center else sign_bits(vectors, fresh.center)
        fresh.set_size(n)
        fresh.set_seq(f.seq)
        self._install(fresh)
        return self.file

    def _new_file(self, layout: Layout, epoch: str, center) -> VectorFile:
        tmp = self.path.with_name(self.path.name + ".new")
        create(tmp, layout, epoch, center)
        return VectorFile(tmp)

    def _install(self, fresh: VectorFile) -> None:
        """The new file in place of the old (a rename), and every process told."""
        fresh.map.flush()
        os.replace(fresh.path, self.path)
        fresh.path = self.path
        old, self.file = self.file, fresh
        if old is not None:
            old.mark_replaced()  # every other process maps the new file at its next search

    # ---- searching -----------------------------------------------------------------------

    def nearest(
        self,
        query: np.ndarray,
        count: int,
        owner_id: int,
        kinds: tuple[str, ...],
        passing: tuple[str, list] | None = None,
    ) -> tuple[list[tuple], bool]:
        """The vectors of this owner and these kinds most similar to the query, best first,
        equal similarities newest doc first: ([(doc id, cosine similarity, kind, object id)],
        whether every such vector was ranked). RESCORE x count candidates are rescored
        exactly and returned (at most count, fewer when `passing`, a WHERE over
        retrieval_searchdoc d and its parameters, leaves some out)."""
        f = self.file
        if f is None or count <= 0:
            return [], True
        n = f.size  # rows beyond it may be half written: never read
        owners, kind_codes = f.owners[:n], f.kinds[:n]
        kindmask = sum(1 << KIND_CODES[k] for k in kinds)
        query = np.asarray(query, dtype=np.float32)
        query_codes, _scale = quantise(query)  # one scale for every row: no effect on order
        scan = engine.kernels()
        keep = int(RESCORE * count)
        if n > BITS_MIN and f.has_center:  # the sign-bit pass
            want = max(SHORTLIST * count, n // SHORTLIST_SHARE)
            query_bits = sign_bits(query, f.center)[0]
            if scan is not None and scan.has_scan:
                rows = scan.hamming_top(
                    f.bits[:n], query_bits, owners, kind_codes, owner_id, kindmask, want
                )
            else:
                rows = _hamming_top_numpy(f.bits[:n], query_bits, owners, kind_codes, owner_id,
                                          kindmask, want)  # fmt: skip
            complete = len(rows) < want
        else:
            wanted = owners == owner_id
            if len(kinds) < len(KIND_CODES):
                wanted &= np.isin(kind_codes, [KIND_CODES[k] for k in kinds])
            rows = np.flatnonzero(wanted)
            complete = True
        if len(rows) > keep:
            rough = _dot_at(scan, f.codes[:n], rows, query_codes) * f.scales[rows]
            rows = rows[np.argpartition(rough, -keep)[-keep:]]
            complete = False
        found = _exact(f.ids[rows].tolist(), query, passing)
        found.sort(key=lambda hit: (-hit[1], -hit[0]))
        return found[:count], complete


def _dot_at(scan, codes: np.ndarray, rows: np.ndarray, query_codes: np.ndarray) -> np.ndarray:
    if scan is not None and scan.has_scan:
        return scan.dot_i8_at(codes, rows, query_codes).astype(np.float32)
    return (codes[rows].astype(np.float32) @ query_codes.astype(np.float32)).astype(np.float32)


def _hamming_top_numpy(bits, query_bits, owners, kinds, owner_id, kindmask, want) -> np.ndarray:
    """hamming_top without the engine: the same rows, in numpy (about 10x slower)."""
    passing = (owners == owner_id) & (((kindmask >> kinds.astype(np.int64)) & 1) == 1)
    rows = np.flatnonzero(passing)
    distance = np.bitwise_count(bits[rows] ^ query_bits).sum(axis=1, dtype=np.int64)
    if want >= len(rows):
        return rows
    key = distance * (len(bits) + 1) + rows  # (distance, row) order, as the engine breaks ties
    return np.sort(rows[np.argpartition(key, want - 1)[:want]])


def _exact(doc_ids: list[int], query: np.ndarray, passing=None) -> list[tuple]:
    """(doc id, exact cosine similarity, kind, object id) of these documents that pass, from
    the float32 vectors SQLite holds anyway (one statement; gone ones left out)."""
    doc_ids = [d for d in doc_ids if d >= 0]  # removed while we scanned
    if not doc_ids:
        return []
    where, params = passing or ("1", [])
    with connection.cursor() as cur:
        cur.execute(
            "SELECT v.doc_id, v.embedding, d.kind, d.object_id FROM search_vecf v "
            "JOIN retrieval_searchdoc d ON d.id = v.doc_id "
            f"WHERE v.doc_id IN (SELECT value FROM json_each(%s)) AND {where}",
            ["[" + ",".join(map(str, doc_ids)) + "]", *params],
        )
        rows = [r for r in cur.fetchall() if len(r[1]) == 4 * len(query)]
    if not rows:
        return []
    block = np.frombuffer(b"".join(bytes(r[1]) for r in rows), np.float32)
    sims = (block.reshape(len(rows), len(query)) @ query).tolist()
    return [(r[0], s, r[2], r[3]) for r, s in zip(rows, sims, strict=True)]


def _changes_since(seq: int | None, first: int | None, last: int | None) -> list[int] | None:
    """Doc ids changed in (seq, last]; None when everything must be re-read."""
    if last is None:
        return [] if seq is None else None
    if seq is None or first > seq + 1:
        return None
    with connection.cursor() as cur:
        cur.execute(
            "SELECT DISTINCT doc_id FROM search_vec_log WHERE seq > %s AND seq <= %s", [seq, last]
        )
        ids = [row[0] for row in cur.fetchall()]
    return None if None in ids else ids


def _vector_rows(doc_ids: list[int]) -> list[tuple]:
    return [row for batch in changelog.rows_of(_ROWS + " WHERE v.doc_id IN ({})", doc_ids)
            for row in batch]  # fmt: skip


def _remove(f: VectorFile, doc_ids: list[int]) -> None:
    """Every row of these documents leaves the scan (its owner first: readers filter on it)."""
    rows = np.flatnonzero(np.isin(f.ids[: f.size], np.asarray(doc_ids, dtype=np.int64)))
    f.owners[rows] = -1
    f.ids[rows] = -1


def _append(f: VectorFile, batch: list[tuple]) -> None:
    """New rows after the last, then the size that makes them visible."""
    dimension, start = f.layout.dimension, f.size
    kept = [(d, bytes(b), o, k) for d, b, o, k in batch if len(b) == 4 * dimension]
    if not kept:  # a vector of another model is never mixed in
        return
    vectors = np.frombuffer(b"".join(b for _, b, _, _ in kept), np.float32).reshape(-1, dimension)
    end = start + len(kept)
    codes, scales = quantise(vectors)
    f.codes[start:end], f.scales[start:end] = codes, scales
    f.bits[start:end] = sign_bits(vectors, f.center)
    f.kinds[start:end] = [KIND_CODES[k] for _, _, _, k in kept]
    f.ids[start:end] = [d for d, _, _, _ in kept]
    f.owners[start:end] = [o for _, _, o, _ in kept]
    f.set_size(end)


def _mean_vector() -> np.ndarray:
    """The collection's mean vector (sign bits are taken around it), from up to 20k rows."""
    total, count = None, 0
    with connection.cursor() as cur:
        cur.execute("SELECT embedding FROM search_vecf LIMIT 20000")
        while rows := cur.fetchmany(4096):
            block = np.frombuffer(b"".join(bytes(r[0]) for r in rows), np.float32)
            block = block.reshape(len(rows), -1)
            total = block.sum(axis=0) if total is None else total + block.sum(axis=0)
            count += len(rows)
    return (total / count).astype(np.float32)


class _writer_lock:
    """One process at a time changes the file (an flock on a sidecar file; the kernel lets
    go of it when the holder dies)."""

    def __init__(self, path: Path):
        self.path = path.with_name(path.name + ".lock")

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


_matrices: dict[tuple[str, int], VectorMatrix] = {}
_held_lock = threading.Lock()


def current(dimension: int) -> VectorMatrix:
    """This process's view of the database's vector file, brought up to date."""
    key = (str(connection.settings_dict["NAME"]), dimension)
    with _held_lock:
        held = _matrices.get(key)
        if held is None:
            held = _matrices[key] = VectorMatrix(dimension)
    held.refresh()
    return held


def prune_log(keep: int = 100_000) -> int:
    return changelog.prune("search_vec_log", keep)
