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
import http.client
import json
import os
import re
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
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


def setup_django(
    name: str, overrides: dict[str, str] | None = None, copy_of: Path | None = None
) -> Path:
    """Configure Django on a fresh data dir (a copy of `copy_of`, a data dir an earlier run
    kept) and migrate; returns the data dir."""
    CACHE.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix=f"memsite-bench-{name}-"))
    if copy_of is not None:
        import shutil

        shutil.copytree(copy_of, data, dirs_exist_ok=True)
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


@contextmanager
def serving(data: Path, root: Path = ROOT, env: dict | None = None, timeout: float = 120):
    """`manage.py serve` on this data dir, as `make run` starts it (web processes and the task
    consumer), with a fresh token and no rate limit; yields (the server's process, `call`:
    method, path, JSON body -> the JSON reply). SIGTERM (then SIGKILL) when the block ends."""
    env = {**os.environ, "MEMSITE_DATA_DIR": str(data), "MEMSITE_API_RATE_LIMIT": "0",
           "MEMSITE_LOG_LEVEL": "WARNING", "MEMSITE_HUEY_IMMEDIATE": "false",
           **(env or {})}  # fmt: skip
    manage = [sys.executable, str(root / "manage.py")]
    token = subprocess.run(
        [*manage, "api_token", "create", "--name", f"bench-{time.time_ns()}"],
        env=env, capture_output=True, text=True, check=True, cwd=root,
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    server = subprocess.Popen(
        [*manage, "serve", "--host", "127.0.0.1", "--port", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=root,
    )  # fmt: skip
    try:
        for line in server.stdout:  # the line announcing where it listens
            if match := re.search(r"http://127\.0\.0\.1:(\d+)/", line):
                port = int(match.group(1))
                break
        else:
            raise RuntimeError("manage.py serve did not start")
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        def call(method: str, path: str, body: dict | None = None) -> dict:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            conn.request(method, path, json.dumps(body).encode() if body else None, headers)
            reply = json.loads(conn.getresponse().read() or b"{}")
            conn.close()
            return reply

        yield server, call
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()


def children(pid: int) -> list[int]:
    """Every descendant of the process (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found += [int(entry.name), *children(int(entry.name))]
    return found


def is_consumer(pid: int) -> bool:
    """serve's task consumer: forked under gunicorn (named huey-consumer), else its own
    `python -m memsite consumer` (run_huey). Whole arguments: a checkout's path may contain
    "consumer"."""
    if Path(f"/proc/{pid}/comm").read_text().strip() == "huey-consumer":
        return True
    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return b"run_huey" in arguments or b"consumer" in arguments
