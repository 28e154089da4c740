"""Search latency and index rates: `python bench/search.py [--n 10000,100000]`.

For each collection size N (each in its own process and throwaway database):
1. N synthetic facts, mixed Chinese / English / both, 15-150 characters, generated from a
   fixed seed (the first 10k of the 100k corpus are the 10k corpus, so vectors are shared);
2. the keyword index is built and timed (FTS items/s: jieba + both FTS columns);
3. vectors come from bench/.cache (the first run embeds them: ~25-40 minutes for 100k on two
   cores; later runs seconds); the real embedding rate is measured on fresh texts;
4. latency of keyword-only, vector-only and hybrid search through `retrieval.search.search`
   (the function the API calls, recall log and access counters included), in a fresh process
   on the built database after the warm-up `serve` runs at start (what a server is; measured
   in the process that built the collection, searches took 20-40% longer), each call with a
   distinct short query embedded on the spot (the in-memory query cache is cleared);
5. the vector step is the in-memory matrix (retrieval/matrix.py): with the engine built, its
   int8 scan with float rescoring, whose recall against the exact float scan, and the time of
   both, are measured on the same queries in the same process; with
   MEMSITE_SEARCH_VECTOR_MATRIX=0, above SEARCH_EXACT_MAX vectors, sqlite-vec's approximate
   step (sign bits + rescoring), whose recall against exact KNN is measured the same way;
6. peak RSS of the measuring process (the server's share: the index build is not in it).

The default run is --n 10000 (a few minutes the first time); --n 10000,100000 adds 100k.
Targets (2 cores): hybrid p95 <= 20 ms at 10k, <= 40 ms at 100k.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval_kit import (  # noqa: E402
    DiskCachedEmbedder,
    peak_rss_mb,
    percentile,
    setup_django,
    table,
)

SEED = 20261122
PEOPLE_ZH = [
    "李雷",
    "韩梅梅",
    "王芳",
    "张伟",
    "老刘",
    "妈妈",
    "爸爸",
    "同事小陈",
    "客户赵总",
    "房东",
]
PEOPLE_EN = ["Li Lei", "Anna", "Marco", "the manager", "Priya", "Tom", "the landlord", "Dr. Chen"]
PLACES_ZH = [
    "杭州",
    "上海",
    "北京",
    "深圳",
    "成都",
    "西湖边",
    "公司楼下",
    "家附近的咖啡馆",
    "滨江",
    "苏州",
]
PLACES_EN = ["Berlin", "Hangzhou", "the office", "Lisbon", "home", "the co-working space"]
THINGS_ZH = [
    "乌龙茶",
    "跑步",
    "登山",
    "钢琴",
    "摄影",
    "游泳",
    "读书",
    "单元测试",
    "周报",
    "面试",
    "向量检索",
    "内存泄漏",
    "数据库迁移",
    "代码评审",
    "值班",
    "咖啡",
    "羽毛球",
    "做饭",
    "日语",
    "骑行",
]
THINGS_EN = [
    "Python",
    "Rust",
    "SQLite",
    "Neovim",
    "Postgres",
    "Kubernetes",
    "pytest",
    "Go",
    "TypeScript",
    "Docker",
    "tea",
    "jazz",
    "bouldering",
    "chess",
    "sourdough",
    "Django",
]
VERBS_ZH = [
    "喜欢",
    "不喜欢",
    "正在学",
    "每周练",
    "负责",
    "研究",
    "最近在用",
    "打算尝试",
    "擅长",
    "不再用",
]
TIMES_ZH = ["周一", "周末", "早上", "晚上", "每天", "上个月", "明年", "最近", "三年来", "下周三"]
PROJECTS = ["orchard", "memory-curator", "ledger", "atlas", "nightjar", "kite", "harbor", "quill"]
REASONS_ZH = [
    "比较省时间",
    "团队都在用",
    "对身体好",
    "文档更清楚",
    "上次踩过坑",
    "客户要求",
    "更便宜",
]
DOMAINS = ["backend", "billing", "search", "the mobile app", "infra", "the data pipeline"]


def fact_text(rng: random.Random, n: int) -> str:
    """One realistic memory, 15-150 characters; `n` keeps every text distinct."""
    pick = rng.choice
    kind = rng.random()
    if kind < 0.45:
        text = (
            f"{pick(PEOPLE_ZH)}{pick(TIMES_ZH)}在{pick(PLACES_ZH)}{pick(VERBS_ZH)}{pick(THINGS_ZH)}"
        )
        if rng.random() < 0.6:
            text += f"，因为{pick(REASONS_ZH)}"
        if rng.random() < 0.4:
            text += f"，顺便{pick(VERBS_ZH)}{pick(THINGS_ZH)}和{pick(THINGS_ZH)}"
        text += f"（第{n}条）"
    elif kind < 0.8:
        who, this, that = pick(PEOPLE_EN), pick(THINGS_EN), pick(THINGS_EN)
        text = f"{who} prefers {this} over {that} for {pick(DOMAINS)}"
        if rng.random() < 0.5:
            text += f", and meets {pick(PEOPLE_EN)} in {pick(PLACES_EN)} every other week"
        if rng.random() < 0.3:
            project, day = pick(PROJECTS), rng.randint(1, 28)
            text += f"; the {project} deadline is {day} {pick(['March', 'May', 'July', 'October'])}"
        text += f" (note {n})."
    else:
        project, domain, owner, tech = (
            pick(PROJECTS),
            pick(DOMAINS),
            pick(PEOPLE_ZH),
            pick(THINGS_EN),
        )
        text = (
            f"{project} 项目的 {domain} 由{owner}负责，用 {tech} "
            f"重写，{rng.randint(1, 12)}月{rng.randint(1, 28)}日前上线"
        )
        if rng.random() < 0.5:
            text += f"，记得提醒 {pick(PEOPLE_EN)} 看 PR #{n}"
        else:
            text += f"（#{n}）"
    return text


def corpus(size: int) -> list[str]:
    rng = random.Random(SEED)
    return [fact_text(rng, n) for n in range(size)]


def queries(count: int = 200) -> list[str]:
    """Short queries of the kinds people type: a word or two, or a short question."""
    rng = random.Random(SEED + 1)
    forms = [
        lambda: f"{rng.choice(PEOPLE_ZH)} {rng.choice(THINGS_ZH)}",
        lambda: f"谁在{rng.choice(PLACES_ZH)}{rng.choice(VERBS_ZH)}{rng.choice(THINGS_ZH)}",
        lambda: f"{rng.choice(PROJECTS)} {rng.choice(DOMAINS)} owner",
        lambda: f"does {rng.choice(PEOPLE_EN)} like {rng.choice(THINGS_EN)}?",
        lambda: f"{rng.choice(THINGS_EN)} vs {rng.choice(THINGS_EN)}",
        lambda: f"{rng.choice(PROJECTS)} 什么时候上线",
    ]
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen[rng.choice(forms)()] = None
    return list(seen)


def run_one(n: int, overrides: list[str]) -> dict:
    """Build the collection here, then measure in a fresh process, as `serve` would be."""
    data = setup_django(f"search-{n}")
    out = {"n": n, **build(n)}
    cmd = [sys.executable, __file__, "--measure", str(data), *[f"--set={s}" for s in overrides]]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return {**out, **json.loads(line[7:])}


def build(n: int) -> dict:
    """N facts, keyword-indexed (timed), then vectors from the disk cache; the embedding rate
    on fresh texts."""
    from curator.models import Fact, Owner
    from retrieval.embedders import get_embedder, use_embedder
    from retrieval.reindex import reindex

    real = get_embedder()
    owner = Owner.default()
    texts = corpus(n)
    base = datetime(2026, 11, 1, tzinfo=UTC)
    rng = random.Random(SEED + 2)
    for start in range(0, n, 5000):
        Fact.objects.bulk_create(
            Fact(
                owner=owner,
                content=t,
                importance=round(rng.random(), 2),
                created_at=base - timedelta(days=rng.randint(0, 400)),
            )
            for t in texts[start : start + 5000]
        )
    out: dict = {}
    started = time.monotonic()
    reindex(embed=False, batch=500)
    out["fts_rate"] = n / (time.monotonic() - started)

    use_embedder(DiskCachedEmbedder(real))
    started = time.monotonic()
    reindex(batch=256)
    out["vector_fill_s"] = time.monotonic() - started

    fresh = [f"{t} / fresh {time.time_ns()}" for t in texts[:128]]
    started = time.monotonic()
    real.passages(fresh)
    out["embed_rate"] = len(fresh) / (time.monotonic() - started)
    return out


def measure(data: Path) -> dict:
    """Latency of the three modes on a built collection, after what `serve` runs at start."""
    os.environ["MEMSITE_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memsite.settings")
    import django

    django.setup()
    from django.conf import settings

    from curator.models import Owner
    from retrieval import backends, engine
    from retrieval.embedders import get_embedder, query_cache
    from retrieval.search import search, warm_up

    owner = Owner.default()
    qs = queries()
    exact = backends.owner_vector_count(owner.pk) <= settings.SEARCH_EXACT_MAX
    bits = f"bits x{settings.SEARCH_OVERSAMPLE:g} + rescoring"
    out: dict = {}
    if settings.SEARCH_VECTOR_MATRIX:
        int8 = engine.kernels() is not None
        exact = not int8
        out["vector_path"] = "matrix, int8 scan + float rescoring" if int8 else "matrix, exact"
    else:
        out["vector_path"] = "exact" if exact else bits
    warm_up()  # what `serve` runs at start (it also moves what is loaded out of the GC's way)
    for q in qs[:20]:  # warm-up: jieba, the model, SQLite pages
        search(q, owner=owner)
    for mode in ("keyword", "semantic", "hybrid"):
        times, stages = [], {}
        for q in qs:
            query_cache.clear()
            started = time.perf_counter()
            result = search(q, owner=owner, mode=mode, caller="bench")
            times.append((time.perf_counter() - started) * 1000)
            result.timings_ms["after total"] = times[-1] - result.timings_ms["total"]  # bookkeeping
            for stage, ms in result.timings_ms.items():
                stages.setdefault(stage, []).append(ms)
        out[mode] = (percentile(times, 50), percentile(times, 95))
    out["stages"] = {stage: percentile(ms, 50) for stage, ms in stages.items()}
    if not exact:
        check = matrix_scan_check if settings.SEARCH_VECTOR_MATRIX else approximate_recall
        out["approx_recall"] = check(qs, owner.pk, get_embedder())
    if settings.SEARCH_KEYWORD_INDEX:
        out["keyword_index"] = keyword_index_check(qs)
    out["rss_mb"] = peak_rss_mb()
    return out


def matrix_scan_check(qs: list[str], owner_id: int, embedder) -> dict:
    """The int8 scan against the exact float32 scan of the same matrix, same process: how much
    of the exact top k it returns, and the time of each (median ms, KNN alone)."""
    from retrieval import engine, matrix
    from retrieval.backends import ALL_KINDS

    m = matrix.current(embedder.dimension)
    vectors = [embedder.query(q) for q in qs]
    kernels = engine.kernels

    def scan(use_int8: bool) -> tuple[list, float]:
        engine.kernels = kernels if use_int8 else (lambda: None)
        try:
            times, found = [], []
            for v in vectors:
                started = time.perf_counter()
                found.append([d for d, _ in m.nearest(v, 50, owner_id, ALL_KINDS)])
                times.append((time.perf_counter() - started) * 1000)
            return found, percentile(times, 50)
        finally:
            engine.kernels = kernels

    exact, exact_ms = scan(False)
    fast, fast_ms = scan(True)
    hits10 = sum(len(set(e[:10]) & set(f[:10])) for e, f in zip(exact, fast, strict=True))
    hits50 = sum(len(set(e) & set(f)) for e, f in zip(exact, fast, strict=True))
    return {
        "recall@10": hits10 / (10 * len(qs)),
        "recall@50": hits50 / (50 * len(qs)),
        "ms": (fast_ms, exact_ms),
    }


def keyword_index_check(qs: list[str]) -> dict:
    """The in-memory keyword ranking against FTS5's own, same queries, same process: how many
    of the top 101 lists are identical (ids and scores), the time of each (p50 / p95 ms,
    ranking alone) and of loading the index."""
    from retrieval import backends, keywords

    keywords._indexes.clear()
    started = time.perf_counter()
    keywords.current(backends.KEYWORD_FIELDS, backends.BM25_WEIGHTS)
    load_s = time.perf_counter() - started
    same, ours, theirs = 0, [], []
    for q in qs:
        terms = backends._terms(q)
        if not backends.seg.match_terms(*terms):
            continue
        started = time.perf_counter()
        mine = backends._keyword_index_ranking(*terms, 101)
        ours.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        sql = [tuple(row) for row in backends._fts_ranking(backends.seg.match_terms(*terms), 101)]
        theirs.append((time.perf_counter() - started) * 1000)
        same += mine == sql
    return {
        "same": (same, len(ours)),
        "ms": [percentile(t, p) for t in (ours, theirs) for p in (50, 95)],
        "load_s": load_s,
    }


def approximate_recall(qs: list[str], owner_id: int, embedder) -> dict:
    """Overlap of the approximate vector step's top k with exact KNN's (k = 10 and 50)."""
    from retrieval import backends

    filters = backends.Filters(owner_id)
    hits10 = hits50 = 0
    for q in qs:
        vector = embedder.query(q)
        exact = [h.doc_id for h in backends.vector_hits_for(vector, filters, 50, exact=True)]
        approx = [h.doc_id for h in backends.vector_hits_for(vector, filters, 50, exact=False)]
        hits10 += len(set(exact[:10]) & set(approx[:10]))
        hits50 += len(set(exact) & set(approx))
    return {"recall@10": hits10 / (10 * len(qs)), "recall@50": hits50 / (50 * len(qs))}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--n", default="10000", help="comma list of collection sizes")
    parser.add_argument("--single", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a MEMSITE_ setting, e.g. --set SEARCH_EXACT_MAX=0",
    )
    args = parser.parse_args()
    for item in args.set if args.single or args.measure else []:
        key, value = item.split("=", 1)
        os.environ[f"MEMSITE_{key}"] = value
    if args.single:
        print("RESULT " + json.dumps(run_one(args.single, args.set)))
        return
    if args.measure:
        print("RESULT " + json.dumps(measure(Path(args.measure))))
        return
    rows, extra = [], []
    for n in (int(x) for x in args.n.split(",")):
        print(f"N = {n}", file=sys.stderr)
        cmd = [sys.executable, __file__, "--single", str(n), *[f"--set={s}" for s in args.set]]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
        r = json.loads(line[7:])
        rows.append(
            [
                f"{r['n']:,}",
                *(f"{r[m][0]:.1f} / {r[m][1]:.1f}" for m in ("keyword", "semantic", "hybrid")),
                f"{r['fts_rate']:.0f}",
                f"{r['embed_rate']:.0f}",
                f"{r['rss_mb']:.0f}",
                r["vector_path"],
            ]
        )
        extra.append(
            f"- {r['n']:,}: hybrid stages, median ms: "
            + ", ".join(f"{stage} {ms:.1f}" for stage, ms in r["stages"].items())
        )
        if "approx_recall" in r:
            rec = r["approx_recall"]
            extra.append(
                f"- {r['n']:,}: approximate vector step vs exact KNN: recall@10 "
                f"{rec['recall@10']:.3f}, recall@50 {rec['recall@50']:.3f}"
            )
            if "ms" in rec:
                fast, slow = rec["ms"]
                extra.append(
                    f"- {r['n']:,}: KNN alone, median: int8 scan {fast:.2f} ms, exact float32 "
                    f"scan {slow:.2f} ms (x{slow / fast:.1f})"
                )
        if "keyword_index" in r:
            k = r["keyword_index"]
            p50, p95, fts50, fts95 = k["ms"]
            extra.append(
                f"- {r['n']:,}: keyword ranking alone (top 101), p50 / p95: in-memory postings "
                f"{p50:.2f} / {p95:.2f} ms, FTS5 bm25() {fts50:.2f} / {fts95:.2f} ms "
                f"(x{fts95 / p95:.1f} at p95); identical lists (ids and scores) "
                f"{k['same'][0]} of {k['same'][1]}; index loaded in {k['load_s']:.1f} s"
            )
    print(
        "\nSearch latency through retrieval.search.search, ms p50 / p95 (200 distinct short "
        "queries, query embedding included)\n"
    )
    print(
        table(
            [
                "items",
                "keyword",
                "vector",
                "hybrid",
                "FTS items/s",
                "embed items/s",
                "peak RSS MB",
                "vector step",
            ],
            rows,
        )
    )
    if extra:
        print("\n" + "\n".join(extra))


if __name__ == "__main__":
    main()
