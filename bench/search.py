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
5. the vector step is the shared vector file (retrieval/matrix.py): its top 10 and top 50
   against exact KNN (numpy, float32, every stored vector), and its time alone; with
   MEMSITE_SEARCH_VECTOR_MATRIX=0, above SEARCH_EXACT_MAX vectors, sqlite-vec's approximate
   step (sign bits + rescoring), whose recall against exact KNN is measured the same way;
6. memory: the searching process's PSS (/proc/PID/smaps_rollup: shared pages counted once
   in total) and peak RSS; then `manage.py serve` (web process and task consumer, what
   `make run` starts) on the same database after 100 searches and 20 turns over HTTP: each
   process's PSS and their sum;
7. search p95 while another process indexes new items (as the consumer does during an
   import) against idle, and the embedding rate with one and two threads (the consumer's two
   workers) on the bench's items and on LoCoMo's real turns.

Above 100,000 items the vectors are synthetic: the first 100k items' real vectors, each
perturbed (`--n 1000000` needs no embedding, only keyword indexing: about 15-30 minutes).
BENCH_REAL_VECTORS=10000 moves that edge to 10k: a 100k build in minutes instead of 25-40,
for timing only (its KNN overlap with exact is not the real collection's).
The default run is --n 10000 (a few minutes the first time); --n 10000,100000 adds 100k.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval_kit import (  # noqa: E402
    DiskCachedEmbedder,
    children,
    is_consumer,
    peak_rss_mb,
    percentile,
    pss_mb,
    serving,
    setup_django,
    shared_data,
    table,
)

# Above this many items, vectors are perturbed copies of real ones. BENCH_REAL_VECTORS lowers
# it (e.g. 10000: a 100k build in minutes, for timing only, when 90k embeddings cannot be made).
REAL_VECTORS = int(os.environ.get("BENCH_REAL_VECTORS", 100_000))

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
    out = {**out, **json.loads(line[7:])}
    from django.db import connections

    connections.close_all()
    out["serve"] = serve_memory(data)
    return out


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

    cached = DiskCachedEmbedder(real)
    use_embedder(cached if n <= REAL_VECTORS else SyntheticEmbedder(cached, texts))
    started = time.monotonic()
    reindex(batch=256)
    out["vector_fill_s"] = time.monotonic() - started
    use_embedder(None)
    out["embed_rate"] = embedding_rates(real, texts[:256])
    out["embed_rate_locomo"] = embedding_rates(real, locomo_turns(256))
    return out


def embedding_rates(embedder, texts: list[str]) -> tuple[float, float]:
    """Passages per second embedded by one thread, and by two (the task consumer's two
    workers each embed what they index; the engine releases the GIL)."""
    fresh = [f"{t} / fresh {time.time_ns()}" for t in texts]
    started = time.monotonic()
    for start in range(0, len(fresh), 32):
        embedder.passages(fresh[start : start + 32])
    one = len(fresh) / (time.monotonic() - started)
    fresh = [f"{t} / fresh {time.time_ns()}" for t in texts]
    halves = [fresh[::2], fresh[1::2]]
    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda part: [embedder.passages(part[i : i + 32])
                                    for i in range(0, len(part), 32)], halves))  # fmt: skip
    return one, len(fresh) / (time.monotonic() - started)


def locomo_turns(count: int) -> list[str]:
    """Real conversation turns (LoCoMo, in ../shared/data): what an imported history holds."""
    path = shared_data() / "locomo" / "locomo10.json"
    conversation = json.loads(path.read_text())[0]["conversation"]
    turns, n = [], 1
    while f"session_{n}" in conversation and len(turns) < count:
        turns += [f"{t['speaker']}: {t['text']}" for t in conversation[f"session_{n}"]]
        n += 1
    return turns[:count]


class SyntheticEmbedder:
    """Above REAL_VECTORS items: item i's vector is item (i mod 100k)'s real one, perturbed
    (gaussian noise of a third of its norm, renormalised), so a million vectors keep a
    sentence model's structure without days of embedding."""

    def __init__(self, cached: DiskCachedEmbedder, texts: list[str]):
        self.cached, self.name, self.dimension = cached, cached.name, cached.dimension
        self.position = {t: i for i, t in enumerate(texts)}
        self.texts = texts

    def passages(self, texts: list[str]):
        import numpy as np

        rows = []
        for text in texts:
            i = self.position[text]
            base = self.cached.passages([self.texts[i % REAL_VECTORS]])[0]
            if i >= REAL_VECTORS:
                noise = np.random.default_rng(i).standard_normal(len(base)).astype(np.float32)
                base = base + noise * (0.33 / np.sqrt(len(base)))
                base = base / np.linalg.norm(base)
            rows.append(base)
        return np.vstack(rows).astype(np.float32)

    def query(self, text: str):
        return self.cached.query(text)


def use_this_checkout() -> None:
    """This checkout's code, whatever the virtualenv's editable install points at."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(data: Path) -> dict:
    """Latency of the three modes on a built collection, after what `serve` runs at start."""
    use_this_checkout()
    os.environ["MEMSITE_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memsite.settings")
    import django

    django.setup()
    from django.conf import settings

    from curator.models import Owner
    from retrieval import backends
    from retrieval.embedders import get_embedder
    from retrieval.search import search, warm_up

    owner = Owner.default()
    qs = queries()
    exact = backends.owner_vector_count(owner.pk) <= settings.SEARCH_EXACT_MAX
    bits = f"bits x{settings.SEARCH_OVERSAMPLE:g} + rescoring"
    out: dict = {}
    if settings.SEARCH_VECTOR_MATRIX:
        out["vector_path"] = "shared file: sign bits > int8 > float32"
    else:
        out["vector_path"] = "exact" if exact else bits
    started = time.perf_counter()
    warm_up()  # what `serve` runs at start (it also moves what is loaded out of the GC's way)
    out["warm_up_s"] = time.perf_counter() - started
    for q in qs[:20]:  # warm-up: jieba, the model, SQLite pages
        search(q, owner=owner)
    out["recorded"] = recorded_vs_not(queries(400)[200:], owner)
    stages: dict = {}
    for mode in ("keyword", "semantic", "hybrid"):
        times, stages = timed_searches(qs, owner, mode)
        out[mode] = tuple(percentile(times, p) for p in (50, 95, 99))
    out["stages"] = {stage: percentile(ms, 50) for stage, ms in stages.items()}
    out["signals"] = paired_signals(qs, owner)
    out["pss_mb"] = pss_mb()
    out["rss_mb"] = peak_rss_mb()
    out["busy"] = search_while_indexing(data, qs, owner, out["hybrid"][1])
    if settings.SEARCH_VECTOR_MATRIX:
        out["approx_recall"] = matrix_scan_check(qs, owner.pk, get_embedder())
    elif not exact:
        out["approx_recall"] = approximate_recall(qs, owner.pk, get_embedder())
    if settings.SEARCH_KEYWORD_INDEX:
        out["keyword_index"] = keyword_index_check(qs)
    return out


def timed_searches(
    qs: list[str], owner, mode: str, record: bool = True
) -> tuple[list[float], dict]:
    from retrieval.embedders import query_cache
    from retrieval.search import search

    times, stages = [], {}
    for q in qs:
        query_cache.clear()
        started = time.perf_counter()
        result = search(q, owner=owner, mode=mode, caller="bench", record=record)
        times.append((time.perf_counter() - started) * 1000)
        result.timings_ms["after total"] = times[-1] - result.timings_ms["total"]  # bookkeeping
        for stage, ms in result.timings_ms.items():
            stages.setdefault(stage, []).append(ms)
    return times, stages


def recorded_vs_not(qs: list[str], owner, block: int = 50) -> dict:
    """Hybrid search recorded (access counters and recall log, what every API search does)
    against unrecorded, on queries no search asked before: each block of 50 first
    unrecorded, then recorded (the first recorded recall of what it finds), alternated so
    both meet the same machine load. p50 / p95 / p99 of each."""
    from retrieval.search import flush_recalls

    times: dict[bool, list[float]] = {False: [], True: []}
    for start in range(0, len(qs), block):
        for record in (False, True):
            times[record] += timed_searches(qs[start : start + block], owner, "hybrid", record)[0]
        flush_recalls()
    return {
        name: [percentile(times[record], p) for p in (50, 95, 99)]
        for name, record in (("unrecorded", False), ("recorded", True))
    }


def paired_signals(qs: list[str], owner) -> dict:
    """Hybrid search with and without the question's signals (retrieval/signals.py: names,
    time, memory keys...), alternating query by query so a busy machine slows both alike."""
    from retrieval.embedders import query_cache
    from retrieval.search import search

    times: dict[bool, list[float]] = {True: [], False: []}
    for n, q in enumerate(qs * 2):
        for use in (True, False) if n % 2 else (False, True):
            query_cache.clear()
            started = time.perf_counter()
            search(q, owner=owner, caller="bench", use_signals=use)
            times[use].append((time.perf_counter() - started) * 1000)
    return {
        "with": (percentile(times[True], 50), percentile(times[True], 95)),
        "without": (percentile(times[False], 50), percentile(times[False], 95)),
    }


def search_while_indexing(data: Path, qs: list[str], owner, idle_p95: float) -> dict:
    """Hybrid search p95 while another process indexes new items (keywords and vectors, as
    the task consumer does during an import), against the idle figure just measured."""
    cmd = [sys.executable, __file__, "--index-load", str(data)]
    loader = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert loader.stdout.readline().strip() == "STARTED"
    times: dict[bool, list[float]] = {False: [], True: []}
    while loader.poll() is None and len(times[True]) < len(qs):
        for record in (True, False):  # alternated: the import's pace changes as it goes
            times[record] += timed_searches(qs[: min(len(qs), 50)], owner, "hybrid", record)[0]
    loader.kill()
    loader.wait()
    return {
        "idle_p95": idle_p95,
        "busy_p95": percentile(times[True], 95),
        "busy_p99": percentile(times[True], 99),
        "busy_unrecorded": [percentile(times[False], p) for p in (95, 99)],
        "searches": len(times[True]) + len(times[False]),
    }


def index_load(data: Path) -> None:
    """The other process of search_while_indexing: new facts indexed in batches of 32, with
    their vectors, until killed."""
    use_this_checkout()
    os.environ["MEMSITE_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memsite.settings")
    import django

    django.setup()
    from curator.models import Fact, Owner
    from retrieval.indexing import index_items

    rng, owner = random.Random(SEED + 9), Owner.default()
    get_ready = True
    for batch in range(10_000):
        made = Fact.objects.bulk_create(
            Fact(owner=owner, content=fact_text(rng, 10_000_000 + batch * 32 + i))
            for i in range(32)
        )
        if get_ready:
            print("STARTED", flush=True)
            get_ready = False
        index_items("fact", made)


def matrix_scan_check(qs: list[str], owner_id: int, embedder) -> dict:
    """The vector file's KNN against exact KNN (numpy over every stored float32 vector), on
    the same query vectors: how much of the exact top 10 and top 50 it returns, and its
    median time alone."""
    import numpy as np
    from django.db import connection

    from retrieval import matrix
    from retrieval.backends import ALL_KINDS

    m = matrix.current(embedder.dimension)
    vectors = np.vstack([embedder.query(q) for q in qs])
    times, found = [], []
    for v in vectors:
        started = time.perf_counter()
        found.append([hit[0] for hit in m.nearest(v, 50, owner_id, ALL_KINDS)[0]])
        times.append((time.perf_counter() - started) * 1000)
    best = np.full((len(qs), 50), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(qs), 50), dtype=np.int64)
    with connection.cursor() as cur:  # exact, a chunk at a time (1M vectors are 1.5 GB)
        cur.execute("SELECT doc_id, embedding FROM search_vecf ORDER BY doc_id")
        while rows := cur.fetchmany(50_000):
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            block = np.frombuffer(b"".join(bytes(r[1]) for r in rows), np.float32)
            sims = vectors @ block.reshape(len(rows), -1).T
            sims = np.concatenate([best, sims], axis=1)
            every = np.concatenate([best_ids, np.broadcast_to(ids, (len(qs), len(ids)))], axis=1)
            top = np.argsort(-sims, axis=1, kind="stable")[:, :50]
            best = np.take_along_axis(sims, top, axis=1)
            best_ids = np.take_along_axis(every, top, axis=1)
    hits10 = sum(
        len(set(e[:10]) & set(f[:10])) for e, f in zip(best_ids.tolist(), found, strict=True)
    )
    hits50 = sum(len(set(e) & set(f)) for e, f in zip(best_ids.tolist(), found, strict=True))
    return {
        "recall@10": hits10 / (10 * len(qs)),
        "recall@50": hits50 / (50 * len(qs)),
        "ms": (percentile(times, 50), percentile(times, 95)),
    }


def serve_memory(data: Path, searches: int = 100, turns: int = 20) -> dict:
    """PSS of what `make run` starts (`manage.py serve`: its web processes, one per core,
    and the task consumer) on this database, after warming up, searches and turns over
    HTTP: the web processes together (gunicorn's arbiter included), the largest of them, and
    the consumer."""
    with serving(data) as (server, call):
        for q in queries()[:searches]:
            call("POST", "/api/v1/search", {"query": q})
        rng = random.Random(SEED + 7)
        for i in range(turns):
            content = fact_text(rng, 20_000_000 + i)
            body = {
                "session_id": "bench-memory",
                "turn_index": i,
                "role": "user",
                "content": content,
            }
            call("POST", "/api/v1/turns", body)
        deadline = time.time() + 300
        while call("GET", "/api/v1/health")["queue"]["pending"] and time.time() < deadline:
            time.sleep(0.5)
        time.sleep(1)
        processes = [server.pid, *children(server.pid)]
        consumer = [p for p in processes if is_consumer(p)]
        web = [pss_mb(p) for p in processes if p not in consumer]
        return {"web": sum(web), "web_max": max(web), "others": sum(pss_mb(p) for p in consumer),
                "processes": len(web)}  # fmt: skip


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
    parser.add_argument("--index-load", help=argparse.SUPPRESS)
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
    if args.index_load:
        return index_load(Path(args.index_load))
    rows, extra = [], []
    for n in (int(x) for x in args.n.split(",")):
        print(f"N = {n}", file=sys.stderr)
        cmd = [sys.executable, __file__, "--single", str(n), *[f"--set={s}" for s in args.set]]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
        r = json.loads(line[7:])
        serve = r["serve"]
        rows.append(
            [
                f"{r['n']:,}",
                *(
                    "{:.1f} / {:.1f} / {:.1f}".format(*r[m])
                    for m in ("keyword", "semantic", "hybrid")
                ),
                f"{r['fts_rate']:.0f}",
                "{:.0f} / {:.0f}".format(*r["embed_rate"]),
                f"{r['pss_mb']:.0f} ({r['rss_mb']:.0f})",
                "{:.0f} ({} processes, largest {:.0f}) + {:.0f} = {:.0f}".format(
                    serve["web"],
                    serve["processes"],
                    serve["web_max"],
                    serve["others"],
                    serve["web"] + serve["others"],
                ),
            ]
        )
        busy, sig = r["busy"], r["signals"]
        extra.append(
            f"- {r['n']:,}: hybrid p50 / p95 with the question's signals "
            f"{sig['with'][0]:.1f} / {sig['with'][1]:.1f} ms, without "
            f"{sig['without'][0]:.1f} / {sig['without'][1]:.1f} ms (alternating, "
            f"{(sig['with'][1] / sig['without'][1] - 1) * 100:+.0f}% at p95)"
        )
        extra.append(
            f"- {r['n']:,}: hybrid p95 while another process indexes new items: "
            f"{busy['busy_p95']:.1f} ms ({busy['searches']} searches) against "
            f"{busy['idle_p95']:.1f} idle; embedding rate on LoCoMo turns, 1 / 2 threads: "
            "{:.0f} / {:.0f} items/s".format(*r["embed_rate_locomo"])
        )
        rec, unrec = r["recorded"]["recorded"], r["recorded"]["unrecorded"]
        extra.append(
            f"- {r['n']:,}: hybrid recorded / unrecorded (the API records), first recall of "
            "200 new queries, p50 / p95 / p99: {:.1f} / {:.1f} / {:.1f} against ".format(*rec)
            + "{:.1f} / {:.1f} / {:.1f} ms (x{:.2f} at p95, x{:.2f} at p99); ".format(
                *unrec, rec[1] / unrec[1], rec[2] / unrec[2]
            )
            + "during the indexing, p95 / p99 recorded {:.1f} / {:.1f}, unrecorded "
            "{:.1f} / {:.1f} ms".format(
                busy["busy_p95"], busy["busy_p99"], *busy["busy_unrecorded"]
            )
        )
        extra.append(
            f"- {r['n']:,}: vector step: {r['vector_path']}; warm-up {r['warm_up_s']:.1f} s"
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
                extra.append(
                    f"- {r['n']:,}: KNN alone (top 50), p50 / p95: {{:.2f}} / {{:.2f}} ms".format(
                        *rec["ms"]
                    )
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
        "\nSearch latency through retrieval.search.search, ms p50 / p95 / p99 (200 distinct "
        "short queries, query embedding included, recorded as the API does)\n"
    )
    print(
        table(
            [
                "items",
                "keyword",
                "vector",
                "hybrid",
                "FTS items/s",
                "embed items/s, 1 / 2 threads",
                "search PSS MB (peak RSS)",
                "make run PSS MB: web + consumer",
            ],
            rows,
        )
    )
    if extra:
        print("\n" + "\n".join(extra))


if __name__ == "__main__":
    main()
