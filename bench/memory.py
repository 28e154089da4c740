"""Memory of what `make run` starts, on a database grown through the API:
`python bench/memory.py [--items 100000] [--api-items 5000] [--keep DIR | --reuse DIR]`.

bench/search.py measures `serve` on its own build (facts bulk-inserted, then reindexed). A
person's database grows otherwise: turns arrive through POST /api/v1/turns, the consumer
indexes and extracts them, agents add memories through POST /api/v1/memories, sessions end
into episodes. So this bench:

1. grows a throwaway database to --items searchable items (rows of search_docs): the last
   --api-items of them (default 5,000: turns in sessions that are then ended, memories
   proposed, the facts extracted from the turns, the episodes) through the API's real views,
   in this process with Django's test client and Huey immediate, so every request's jobs
   (keyword and vector indexing, extraction, the episode of an ended session) run as the
   consumer would run them; the rest first, as bench/search.py builds them (facts inserted,
   then indexed). The write path stores 3-13 items a second on this machine, through HTTP
   no faster: 100k items all through it would take hours (5,000 took 19 minutes at load 8).
   The vectors come from a stand-in for the bundled engine under its own name (a hash of
   the text, normalised): the real engine embeds about 170 texts a second on a quiet core,
   and memory does not depend on what the vectors say, only on how many there are (the
   shared vector file) and how many of their pages a query reads;
2. starts `manage.py serve` on it (what `make run` starts: gunicorn's arbiter, one worker
   per core, the consumer), makes --searches searches and --turns turns over HTTP with the
   real engine, waits for the queue to drain and for the delayed contradiction scan those
   writes set off (60 s later) to end, and prints the PSS (/proc/PID/smaps_rollup: a page
   shared by several processes is counted once in total) of each process and their total.

--reuse DIR skips the growth and measures an existing data dir (one grown with --keep; each
run adds its turns, so measure a fresh copy to compare); --checkout DIR serves another
checkout's code on it (before / after).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from retrieval_kit import children, is_consumer, pss_mb, serving, setup_django, table  # noqa: E402
from search import SEED, fact_text, queries  # noqa: E402

# This folder last: its mcp.py (a bench) must not hide the mcp package the app imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH] + [str(BENCH)]

ROOT = Path(__file__).resolve().parents[1]
TURNS_PER_SESSION = 10
MEMORY_EVERY = 4  # one POST /memories after every few turns

# What people tell an assistant, so the extractor has something to keep.
STATEMENTS = [
    "我住在{place}，最近在做{thing}相关的工作。",
    "以后回答都用中文，我更喜欢{thing}。",
    "周末想去{place}跑步，有什么路线推荐？",
    "I prefer {thing_en} over {other_en} for {domain}.",
    "Remember that my manager is {person_en} and we meet on Mondays.",
    "My daughter starts school in {month}; I moved to {place_en} last year.",
]
ANSWERS = [
    "好的，我记下了：{fact}",
    "Here is a short answer with a few details about {thing_en}.",
    "可以试试下面的方法：先看{thing}，再看日志。",
    "Noted. {fact}",
]


def stand_in_embedder():
    """The bundled engine's name and dimension, vectors from a hash of the text."""
    import numpy as np

    from retrieval.embedders import LocalEmbedder

    class HashedEngine(LocalEmbedder):
        def _encode(self, texts, is_query):
            rows = np.empty((len(texts), self.dimension), np.float32)
            for i, text in enumerate(texts):
                seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest())
                rows[i] = np.random.default_rng(seed).standard_normal(self.dimension)
            return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    return HashedEngine()


def turn_text(rng: random.Random, n: int, role: str) -> str:
    from search import PEOPLE_EN, PLACES_EN, PLACES_ZH, THINGS_EN, THINGS_ZH

    words = {
        "place": rng.choice(PLACES_ZH), "thing": rng.choice(THINGS_ZH),
        "thing_en": rng.choice(THINGS_EN), "other_en": rng.choice(THINGS_EN),
        "domain": rng.choice(["backend", "billing", "search", "infra"]),
        "person_en": rng.choice(PEOPLE_EN), "place_en": rng.choice(PLACES_EN),
        "month": rng.choice(["March", "May", "September"]), "fact": fact_text(rng, n),
    }  # fmt: skip
    if role == "user":
        if rng.random() < 0.5:
            return fact_text(rng, n)
        return rng.choice(STATEMENTS).format(**words) + f" ({n})"
    return rng.choice(ANSWERS).format(**words)


def grow(items: int, api_items: int) -> Path:
    """A data dir with `items` rows of search_docs: the bench's bulk build for all but the
    last `api_items`, which come through the API's views."""
    data = setup_django("memory", {"API_RATE_LIMIT": "0"})  # the growth outruns a token's limit
    from django.db import connection

    from retrieval.embedders import use_embedder

    use_embedder(stand_in_embedder())
    if items > api_items:
        bulk(items - api_items)
    through_api(items)
    use_embedder(None)
    connection.close()
    return data


def bulk(n: int) -> None:
    """bench/search.py's build: n facts inserted, keyword-indexed and embedded."""
    from search import corpus

    from curator.models import Fact, Owner
    from retrieval.reindex import reindex

    owner, texts = Owner.default(), corpus(n)
    base, rng = datetime(2025, 11, 1, tzinfo=UTC), random.Random(SEED + 2)
    for start in range(0, n, 5000):
        Fact.objects.bulk_create(
            Fact(owner=owner, content=t, importance=round(rng.random(), 2),
                 created_at=base - timedelta(days=rng.randint(0, 400)))
            for t in texts[start : start + 5000]
        )  # fmt: skip
    started = time.monotonic()
    reindex(batch=500)
    print(f"  {n:,} facts built in {time.monotonic() - started:.0f} s", file=sys.stderr)


def search_docs() -> int:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM retrieval_searchdoc")
        return cur.fetchone()[0]


def through_api(items: int) -> None:
    """Sessions of turns, some memories and every session ended, through the API's views,
    until search_docs holds `items` rows."""
    from django.test import Client

    from memsite.core.tokens import TokenScope, create_token

    _token, raw = create_token("bench-memory", TokenScope.READ_WRITE, None)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}", SERVER_NAME="127.0.0.1")
    rng = random.Random(SEED + 11)
    started, n, session, base = time.monotonic(), 0, 0, datetime(2025, 11, 1, tzinfo=UTC)
    first = done = search_docs()

    def post(path: str, body: dict) -> None:
        reply = client.post(path, json.dumps(body), content_type="application/json")
        if reply.status_code >= 300:
            raise RuntimeError(f"{path}: {reply.status_code} {reply.content[:300]!r}")

    while done < items:
        session += 1
        when = base + timedelta(hours=3 * session)
        for t in range(TURNS_PER_SESSION):
            role = "user" if t % 2 == 0 else "assistant"
            n += 1
            post("/api/v1/turns", {
                "session_id": f"grown-{session}", "turn_index": t, "role": role,
                "content": turn_text(rng, n, role),
                "timestamp": (when + timedelta(seconds=40 * t)).isoformat(),
            })  # fmt: skip
            if n % MEMORY_EVERY == 0:
                post("/api/v1/memories", {"content": fact_text(rng, 10_000_000 + n),
                                          "importance": round(rng.random(), 2)})  # fmt: skip
        post(f"/api/v1/sessions/grown-{session}/end", {})
        if session % 5 == 0:
            done = search_docs()
            rate = (done - first) / (time.monotonic() - started)
            print(f"\r  {done:,} items ({rate:.0f}/s through the API)", end="",
                  file=sys.stderr, flush=True)  # fmt: skip
    print(f"\n  {done - first:,} items through the API: {n:,} turns in {session:,} sessions",
          file=sys.stderr)  # fmt: skip


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def settle(consumers: list[int], last_write: float, limit: float = 600) -> dict[str, float]:
    """Until the writes' delayed contradiction scan (CONTRADICTIONS_DELAY, 60 s, after the
    first write; it reads every active fact) has run and the consumer is idle, its job child
    processes (lifecycle/largejobs.py) included: what it holds for the rest of its life, not
    a moment before its largest regular job. Returns the largest PSS seen meanwhile (every
    5 s) of the consumer and of its job children."""
    delay = int(os.environ.get("MEMSITE_CONTRADICTIONS_DELAY", 60))
    peaks = {"consumer": 0.0, "job child": 0.0}

    def family() -> list[int]:
        found = [*consumers, *(c for p in consumers for c in children(p))]
        for pid in found:
            name = "consumer" if pid in consumers else "job child"
            peaks[name] = max(peaks[name], pss_mb(pid) if Path(f"/proc/{pid}").exists() else 0)
        return found

    while time.monotonic() < last_write + delay + 5:
        family()
        time.sleep(5)
    started = time.monotonic()
    while consumers and time.monotonic() - started < limit:
        before = sum(cpu_ticks(p) for p in family())
        time.sleep(5)
        alive = [p for p in family() if Path(f"/proc/{p}").exists()]
        if sum(cpu_ticks(p) for p in alive) - before <= 5 and alive == consumers:
            return peaks  # under 1% of a core, no job child left
    return peaks


def by_mapping(pid: int) -> dict[str, float]:
    """PSS in MB by what is mapped (/proc/PID/smaps): a file by its name, [heap], and the
    anonymous mappings together (numpy arrays, Python's arenas, the engine's weights)."""
    found: dict[str, float] = {}
    name = "?"
    try:
        lines = Path(f"/proc/{pid}/smaps").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        head = line.split(maxsplit=5)
        if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:
            name = Path(head[5]).name if len(head) == 6 and head[5].startswith("/") else (
                head[5] if len(head) == 6 else "[anonymous]")  # fmt: skip
        elif line.startswith("Pss:"):
            found[name] = found.get(name, 0.0) + int(line.split()[1]) / 1024
    return found


def role(pid: int, server: int) -> str:
    if pid == server:
        return "arbiter"
    if b"run_job" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
        return "job child"  # still running: counted, it is part of `make run` meanwhile
    return "consumer" if is_consumer(pid) else "web worker"


def serve_pss(
    data: Path, searches: int = 100, turns: int = 20, root: Path = ROOT, env: dict | None = None
) -> dict:
    """`manage.py serve` on this data dir; PSS of each of its processes after warming up,
    `searches` searches and `turns` turns over HTTP with the queue drained."""
    with serving(data, root, env, timeout=300) as (server, call):
        started = time.monotonic()
        for q in queries()[:searches]:
            call("POST", "/api/v1/search", {"query": q})
        search_s = time.monotonic() - started
        rng = random.Random(SEED + 7)
        for i in range(turns):
            role_name = "user" if i % 2 == 0 else "assistant"
            content = turn_text(rng, 20_000_000 + i, role_name)
            call("POST", "/api/v1/turns", {"session_id": "bench-memory", "turn_index": i,
                                           "role": role_name, "content": content})  # fmt: skip
        last_write = time.monotonic()
        deadline = time.time() + 600
        while call("GET", "/api/v1/health")["queue"]["pending"] and time.time() < deadline:
            time.sleep(0.5)
        processes = [server.pid, *children(server.pid)]
        peaks = settle([p for p in processes if role(p, server.pid) == "consumer"], last_write)
        processes = [server.pid, *children(server.pid)]
        rows = [(role(p, server.pid), p, pss_mb(p)) for p in processes]
        return {
            "peaks": peaks,
            "processes": rows,
            "search_s": search_s,
            "mappings": {p: by_mapping(p) for p in processes},
        }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument(
        "--api-items", type=int, default=5000,
        help="how many of the items come through the API (the rest: the bench's bulk build)",
    )  # fmt: skip
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--keep", help="keep the grown data dir here (moved when done)")
    parser.add_argument("--reuse", help="measure this data dir instead of growing one")
    parser.add_argument(
        "--checkout", default=str(ROOT), help="serve this checkout's code (A/B against another)"
    )
    parser.add_argument(
        "--mappings", type=int, default=0, metavar="N",
        help="also print each process's N largest mappings by PSS (/proc/PID/smaps)",
    )  # fmt: skip
    parser.add_argument("--grow-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reuse:
        data = Path(args.reuse)
    else:
        started = time.monotonic()
        data = grow(args.items, args.api_items)
        print(f"grown in {time.monotonic() - started:.0f} s", file=sys.stderr)
        if args.keep:
            shutil.move(str(data), args.keep)
            data = Path(args.keep)
    if args.grow_only:
        print(data)
        return
    result = serve_pss(data, args.searches, args.turns, Path(args.checkout))
    rows = [[name, pid, f"{mb:.0f}"] for name, pid, mb in sorted(result["processes"])]
    total = sum(mb for _, _, mb in result["processes"])
    web = [mb for name, _, mb in result["processes"] if name == "web worker"]
    with os.popen("uptime") as up:
        load = up.read().strip().split("load average:")[-1].strip()
    print(f"\n`manage.py serve` of {args.checkout} on {data} ({args.searches} searches in "
          f"{result['search_s']:.1f} s, {args.turns} turns; load {load})\n")  # fmt: skip
    print(table(["process", "pid", "PSS MB"], rows))
    print(f"\nlargest web worker {max(web):.0f} MB; whole `make run` {total:.0f} MB")
    peaks = result["peaks"]
    print(f"largest PSS seen after the turns: consumer {peaks['consumer']:.0f} MB, "
          f"a job child process {peaks['job child']:.0f} MB")  # fmt: skip
    if args.mappings:
        for name, pid, _mb in sorted(result["processes"]):
            largest = sorted(result["mappings"][pid].items(), key=lambda kv: -kv[1])
            shown = ", ".join(f"{k} {v:.1f}" for k, v in largest[: args.mappings])
            print(f"\n{name} {pid}: {shown}")
    if not args.reuse and not args.keep:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
