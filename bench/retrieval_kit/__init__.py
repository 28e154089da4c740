"""Shared pieces of the retrieval benchmarks (bench/search.py, bench/recall.py).

- `setup_django(name)`: Django on a throwaway data dir (migrated), so benchmarks never touch
  a person's data and always start from the current schema.
- `DiskCachedEmbedder`: the configured embedder with every vector kept on disk under
  bench/.cache (keyed by model, form and text), because e5 embeds ~50-100 texts/s on two
  cores: a rerun of a benchmark costs seconds instead of minutes.
- small statistics helpers and a peak-RSS reader.
"""

from __future__ import annotations

import hashlib
import os
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as memsite/__init__.py, before numpy

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "bench" / ".cache"


def shared_data() -> Path:
    """../shared/data beside the checkout (or beside the folder of worktrees it is in);
    MEMSITE_BENCH_DATA names another."""
    if named := os.environ.get("MEMSITE_BENCH_DATA"):
        return Path(named)
    candidates = [ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data"]
    return next((p for p in candidates if p.exists()), candidates[0])


def setup_django(name: str, overrides: dict[str, str] | None = None) -> Path:
    """Configure Django on a fresh data dir and migrate; returns the data dir."""
    CACHE.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix=f"memsite-bench-{name}-"))
    os.environ["MEMSITE_DATA_DIR"] = str(data)
    os.environ["MEMSITE_HUEY_IMMEDIATE"] = "1"
    os.environ.pop("MEMSITE_EMBEDDING_MODEL", None)
    for key, value in (overrides or {}).items():
        os.environ[f"MEMSITE_{key}"] = value
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memsite.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return data


class DiskCachedEmbedder:
    """Wraps an embedder; vectors persist in bench/.cache/embeddings.sqlite3."""

    def __init__(self, inner, path: Path | None = None, batch: int = 64, verbose: bool = True):
        self.inner, self.name, self.dimension = inner, inner.name, inner.dimension
        self.batch, self.verbose = batch, verbose
        self.db = sqlite3.connect(path or CACHE / "embeddings.sqlite3", check_same_thread=False)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS vec (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
        )
        self.computed = 0

    def _key(self, form: str, text: str) -> str:
        return hashlib.sha256(f"{self.name}\n{form}\n{text}".encode()).hexdigest()

    def _lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        found = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(f"SELECT key, vector FROM vec WHERE key IN ({marks})", part)
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return found

    def _store(self, items: dict[str, np.ndarray]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO vec VALUES (?, ?)",
            [(k, v.astype(np.float32).tobytes()) for k, v in items.items()],
        )
        self.db.commit()

    def passages(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        keys = [self._key("passage", t) for t in texts]
        have = self._lookup(list(dict.fromkeys(keys)))
        missing = [(k, t) for k, t in dict(zip(keys, texts, strict=True)).items() if k not in have]
        started = time.monotonic()
        for start in range(0, len(missing), self.batch):
            part = missing[start : start + self.batch]
            vectors = self.inner.passages([t for _, t in part])
            fresh = {k: v for (k, _), v in zip(part, vectors, strict=True)}
            self._store(fresh)
            have.update(fresh)
            self.computed += len(part)
            if self.verbose and len(missing) > self.batch:
                done = start + len(part)
                rate = done / max(1e-9, time.monotonic() - started)
                eta = (len(missing) - done) / rate if rate else 0
                print(
                    f"\r  embedding {done}/{len(missing)} ({rate:.0f}/s, ETA {eta:.0f}s)",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
        if self.verbose and len(missing) > self.batch:
            print(file=sys.stderr)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([have[k] for k in keys])

    def query(self, text: str) -> np.ndarray:
        key = self._key("query", text)
        if (hit := self._lookup([key]).get(key)) is not None:
            return hit.copy()
        vector = self.inner.query(text)
        self._store({key: vector})
        self.computed += 1
        return vector

    def warm_queries(self, texts: list[str]) -> None:
        """Embed (and cache) many queries up front, with progress."""
        keys = {self._key("query", t): t for t in texts}
        missing = [t for k, t in keys.items() if k not in self._lookup(list(keys))]
        started = time.monotonic()
        for n, text in enumerate(missing, 1):
            self.query(text)
            if self.verbose and (n % 25 == 0 or n == len(missing)):
                rate = n / max(1e-9, time.monotonic() - started)
                print(f"\r  queries {n}/{len(missing)} ({rate:.0f}/s)", end="", file=sys.stderr)
        if self.verbose and missing:
            print(file=sys.stderr)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pss_mb(pid: int | str = "self") -> float:
    """Proportional set size: private pages plus each shared page divided by the processes
    mapping it, so the PSS of several processes adds up to what they use together."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def table(headers: list[str], rows: list[list]) -> str:
    """A Markdown table (what the README and the notes paste)."""

    def cell(value) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
