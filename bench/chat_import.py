"""Importing chat history: turns per second to stored, indexed and extracted, and peak memory.

    python bench/chat_import.py [--turns 10000] [--per-session 20] [--format jsonl|chatgpt]
                                [--batches yes|no] [--workers 2] [--floor 2000]

In a throwaway data dir with Huey not immediate (as in production): a generated export of
--turns turns (Chinese and English, a user turn then an answer, some turns stating what the
rules extractor keeps, some with tool calls; every text carries its own numbers, so no two are
alike) is prepared (read, checked, previewed), then imported by `chat_import.run` as the
page's task does. That stores every turn and queues its indexing and extraction in batches
(`index_turns`, lifecycle/turnbatch.py; `--batches no`: one task per turn and per job, as
live turns get), and an episode per conversation. Then the queue is drained in this process
by `--workers` threads (what `manage.py serve`'s consumer runs: two, with the bundled
embedder): the times at which every turn is stored, keyword- and vector-indexed, and every
user turn extracted are printed, cumulative and for the phase alone, with the peak RSS after
each phase. The guardrails' default detectors are on. Meanwhile another process searches
(hybrid, recorded, as the API does), and again once the queue is idle: search p95 during the
import against idle (`--search no` leaves it out).

Where the drain's CPU goes: the time of the thread doing each part (the engine runs in the
calling thread: one OpenMP thread), a part's own time without the parts it calls, in CPU ms
a turn. With E ms a turn in the engine (which releases the interpreter lock) and P ms in
Python (which holds it, bar SQLite's own calls), two cores index and extract at most about
min(2000 / (E + P), 1000 / P) turns/s: the bound printed beside the measured rate.

The floor: the engine alone embeds `--floor` of the same turns' texts, on one thread and on
two, in the same run (what indexing could reach if nothing but the embedding cost).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval_kit import peak_rss_mb, percentile, setup_django, table  # noqa: E402

ZH = [
    "我住在杭州，最近在做搜索相关的工作。",
    "帮我看看这个报错：ModuleNotFoundError: No module named 'jieba'",
    "以后回答都用中文。",
    "周末想去西湖边跑步，有什么路线推荐？",
    "我更喜欢用 pytest 写测试。",
    "这段 SQL 为什么这么慢？SELECT * FROM orders WHERE created_at > now() - interval '7 days'",
]
EN = [
    "I prefer dark mode in every editor.",
    "Can you summarise this article about vector databases?",
    "My daughter starts school in September.",
    "Why does my Docker build take ten minutes?",
    "Remember that I am allergic to peanuts.",
    "Write a haiku about autumn in Kyoto.",
]
ANSWERS = ["好的，我记下了。", "Here is a short answer with a few details.", "可以试试下面的方法。"]


def generate(path: Path, turns: int, per_session: int, fmt: str) -> None:
    rng = random.Random(7)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    sessions = max(1, turns // per_session)
    lines, conversations = [], []
    for s in range(sessions):
        pool = ZH if s % 2 else EN
        when = start + timedelta(hours=7 * s)
        messages = []
        for t in range(per_session):
            role = "user" if t % 2 == 0 else "assistant"
            text = rng.choice(pool) if role == "user" else rng.choice(ANSWERS)
            record = {
                "session_id": f"bench-{s}",
                "role": role,
                "content": f"{text} ({s}.{t})",
                "timestamp": (when + timedelta(seconds=30 * t)).isoformat(),
            }
            if role == "assistant" and t % 10 == 3:
                record["tool_calls"] = [
                    {"id": f"c{s}.{t}", "function": {"name": "search", "arguments": "{}"}}
                ]
            lines.append(record)
            messages.append(record)
        conversations.append(messages)
    if fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in lines) + "\n")
        return
    path.write_text(json.dumps([_chatgpt(n, m) for n, m in enumerate(conversations)]))


def _chatgpt(number: int, messages: list[dict]) -> dict:
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for i, m in enumerate(messages):
        node = f"n{i}"
        seconds = datetime.fromisoformat(m["timestamp"]).timestamp()
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {
                "id": node,
                "author": {"role": m["role"]},
                "create_time": seconds,
                "content": {"content_type": "text", "parts": [m["content"]]},
                "recipient": "all",
            },
        }
        mapping[parent]["children"].append(node)
        parent = node
    return {
        "title": f"conversation {number}",
        "conversation_id": f"bench-{number}",
        "create_time": datetime.fromisoformat(messages[0]["timestamp"]).timestamp(),
        "mapping": mapping,
        "current_node": parent,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--per-session", type=int, default=20)
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "chatgpt"])
    parser.add_argument("--batches", default="yes", choices=["yes", "no"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--nice", choices=("yes", "no"), default="yes", help="drain at the consumer's niceness"
    )
    parser.add_argument("--floor", type=int, default=2000, help="texts for the engine's rate")
    parser.add_argument("--search", default="yes", choices=["yes", "no"])
    parser.add_argument("--searcher", help=argparse.SUPPRESS)  # the searching child process
    args = parser.parse_args()
    if args.searcher:
        searcher(Path(args.searcher))
        return
    setup_django("chat-import", {"HUEY_IMMEDIATE": "0"})

    from huey.contrib.djhuey import HUEY

    from curator.models import ConversationTurn, Episode, Fact
    from lifecycle import chat_import, tasks
    from memsite.core import consumer

    folder = Path(tempfile.mkdtemp(prefix="chat-import-bench-"))
    path = folder / ("turns.jsonl" if args.format == "jsonl" else "conversations.json")
    generate(path, args.turns, args.per_session, args.format)
    size_mb = path.stat().st_size / 1e6
    rss = {"start": peak_rss_mb()}

    began, cpu = time.perf_counter(), {"start": time.process_time()}
    job = chat_import.prepare(path, args.format)
    prepared = time.perf_counter() - began
    rss["prepared"] = peak_rss_mb()
    chat_import.queue(job)
    batches = tasks.queue_turn_batch if args.batches == "yes" else None
    job = chat_import.run(job.pk, finish_session=tasks.end_imported_session, batches=batches)
    stored = time.perf_counter() - began
    rss["stored"], cpu["stored"] = peak_rss_mb(), time.process_time()
    total = ConversationTurn.objects.count()
    users = ConversationTurn.objects.filter(role="user").count()
    assert total == job.turns_added == args.turns - args.turns % args.per_session, job.error
    queued = HUEY.pending_count()

    busy = Searcher(folder / "during.json") if args.search == "yes" else None
    if args.nice == "yes":
        consumer.yield_to_requests()  # as `manage.py consumer` does before its workers start
    stages = Stages()
    marks = drain(HUEY, args.workers, total, began, stages)
    stages.stop()
    drained = time.perf_counter() - began
    during = busy.stop() if busy else []
    rss["drained"], cpu["drained"] = peak_rss_mb(), time.process_time()
    indexed, cpu["indexed"] = marks.get("indexed") or (drained, cpu["drained"])
    extracted, cpu["extracted"] = marks.get("extracted") or (drained, cpu["drained"])
    both, cpu["both"] = max((indexed, cpu["indexed"]), (extracted, cpu["extracted"]))

    print(
        f"{total} turns ({users} from the person) in {job.conversations} conversations, "
        f"{args.format}, {size_mb:.1f} MB; {queued} queued tasks "
        f"({'batches of turns' if batches else 'one per turn and job'}) run by "
        f"{args.workers} worker thread(s) in this process"
    )

    def row(name: str, seconds: float, mb: float, since: float | None = None, used=None) -> list:
        phase = "" if since is None else round(total / max(seconds - since, 1e-9))
        ms = "" if used is None else round(1000 * used / total, 2)
        return [name, round(seconds, 1), round(total / seconds), phase, ms, round(mb)]

    drain_cpu = {k: cpu[k] - cpu["stored"] for k in ("indexed", "extracted", "both", "drained")}
    rows = [
        row("read, checked, previewed", prepared, rss["prepared"]),
        row("stored (turns, guardrails, JSONL backup)", stored, rss["stored"], prepared),
        row("indexed (keywords + vectors)", indexed, rss["drained"], stored, drain_cpu["indexed"]),
        row(
            "extracted (rules + learned model)",
            extracted,
            rss["drained"],
            stored,
            drain_cpu["extracted"],
        ),  # fmt: skip
        row("indexed and extracted", both, rss["drained"], stored, drain_cpu["both"]),
        row("queue drained (episodes too)", drained, rss["drained"], stored, drain_cpu["drained"]),
    ]
    headers = ["phase (cumulative)", "seconds", "turns/s", "turns/s of the phase",
               "CPU ms a turn, from the drain's start", "peak RSS MB"]  # fmt: skip
    print(table(headers, rows))
    print(f"facts written: {Fact.objects.count()}, episodes: {Episode.objects.count()}")
    both_rate = total / max(both - stored, 1e-9)
    print(stages.report(total, both_rate))
    if busy:
        idle = Searcher(folder / "idle.json", count=max(60, len(during) // 2)).wait()
        p95 = [percentile(during, 95), percentile(idle, 95)]
        print(
            f"search p95 in another process (hybrid, recorded, a new query each time): "
            f"{p95[0]:.1f} ms while the queue drains ({len(during)} searches) against "
            f"{p95[1]:.1f} idle ({len(idle)}), x{p95[0] / p95[1]:.2f}; p50 "
            f"{percentile(during, 50):.1f} / {percentile(idle, 50):.1f} ms"
        )
    if args.floor:
        texts = list(
            ConversationTurn.objects.order_by("pk").values_list("content", flat=True)[: args.floor]
        )
        one, two, ms = engine_rates(texts)
        print(
            f"floor: the engine alone embeds these turns' texts at {one:.0f} items/s on one "
            f"thread ({ms:.2f} CPU ms a text), {two:.0f} on two ({len(texts)} texts, "
            "batches of 64)"
        )
        print(f"load average after the run: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        from search import corpus, embedding_rates  # bench/search.py's items and its measure

        from retrieval.embedders import LocalEmbedder

        one, two = embedding_rates(LocalEmbedder(), corpus(512))
        print(
            f"embedding rate on bench/search.py's items: {one:.0f} items/s on one thread, "
            f"{two:.0f} on two (512 items, batches of 32)"
        )


class Stages:
    """CPU time of the drain by part: the thread's CPU time inside each wrapped function,
    less the wrapped functions it calls (so each second is counted once)."""

    PARTS = [  # (module, attribute, part); a class's method as "Class.method"
        ("retrieval.embedders", "LocalEmbedder.passages", "embedding (the engine)"),
        ("retrieval.indexing", "index_items", "keyword rows and search documents: {kind}s"),
        ("retrieval.indexing", "_refresh_next_turn", "keyword rows and search documents: turns"),
        ("retrieval.indexing", "_embed", "vector rows (writing the engine's vectors)"),
        ("lifecycle.extraction.extract", "rule_candidates", "the rules"),
        ("lifecycle.extraction.learned", "batch_candidates", "the learned model (batch)"),
        ("lifecycle.extraction.learned", "candidates", "the learned model (one turn)"),
        ("lifecycle.extraction.extract", "_commit", "the write path (proposals, marking)"),
        ("lifecycle.extraction.extract", "_mark_extracted", "the write path (proposals, marking)"),
        ("lifecycle.sessions", "run_end", "episodes (session ends)"),
    ]
    ENGINE = "embedding (the engine)"

    def __init__(self):
        import importlib

        self.local, self.lock, self.used = threading.local(), threading.Lock(), {}
        self.restore = []
        for module_name, attribute, part in self.PARTS:
            owner = importlib.import_module(module_name)
            *path, name = attribute.split(".")
            for step in path:
                owner = getattr(owner, step)
            real = getattr(owner, name)
            self.restore.append((owner, name, real))
            setattr(owner, name, self.wrap(real, part))
        self.started = time.process_time()

    def wrap(self, real, part: str):
        def timed(*args, **kwargs):
            stack = self.local.__dict__.setdefault("stack", [])
            stack.append(0.0)  # the CPU time of wrapped calls inside this one
            began = time.thread_time()
            try:
                return real(*args, **kwargs)
            finally:
                spent = time.thread_time() - began
                inner = stack.pop()
                if stack:
                    stack[-1] += spent
                name = part.format(kind=args[0] if args else "?")  # index_items(kind, ...)
                with self.lock:
                    self.used[name] = self.used.get(name, 0.0) + spent - inner

        return timed

    def mark(self, watcher: float = 0.0) -> None:
        """Every turn indexed and extracted: what the rate counts (the episodes, queued
        behind the batches, mostly come after). `watcher`: the CPU time of the bench's own
        watcher thread, not the product's, left out."""
        with self.lock:
            if not hasattr(self, "at_mark"):
                used = time.process_time() - self.started - watcher
                self.at_mark, self.watcher = (dict(self.used), used), watcher

    def stop(self) -> None:
        self.total = time.process_time() - self.started
        if not hasattr(self, "at_mark"):
            self.at_mark, self.watcher = (dict(self.used), self.total), 0.0
        for owner, name, real in self.restore:
            setattr(owner, name, real)

    def report(self, turns: int, rate: float) -> str:
        """Up to the moment every turn was indexed and extracted; the episodes after it."""
        used, total = self.at_mark
        ms = {part: 1000 * seconds / turns for part, seconds in used.items()}
        ms["the rest (tasks, loading turns, the queue)"] = max(
            0.0, 1000 * total / turns - sum(ms.values())
        )
        rows = [[part, round(value, 2)] for part, value in ms.items()]
        engine = ms.get(self.ENGINE, 0.0)
        python = sum(ms.values()) - engine
        bound = min(2000 / max(engine + python, 1e-9), 1000 / max(python, 1e-9))
        return (
            table(["where the CPU went until all was indexed and extracted", "CPU ms a turn"], rows)
            + f"\nE = {engine:.2f} ms a turn in the engine, P = {python:.2f} ms in Python: two "
            f"cores allow at most min(2000 / (E + P), 1000 / P) = {bound:.0f} turns/s; measured "
            f"{rate:.0f} turns/s indexed and extracted of the drain ({rate / bound:.0%} of it); "
            f"after it, {1000 * (self.total - total - self.watcher) / turns:.2f} CPU ms a turn "
            "until the queue was drained (the episodes)"
        )


QUERIES = [
    "where does the person live",
    "peanut allergy",
    "西湖边跑步路线",
    "用什么写测试",
    "dark mode editor",
    "Docker build slow",
    "女儿什么时候上学",
    "SQL 查询很慢",
    "haiku about Kyoto",
    "回答用什么语言",
]


class Searcher:
    """Searches in a process of their own (as the web process searches while the consumer
    indexes), until stopped or `count` are done; their latencies in ms."""

    def __init__(self, out: Path, count: int = 0):
        self.out, self.stopfile = out, out.with_suffix(".stop")
        command = [sys.executable, __file__, "--searcher", str(out)]
        self.process = subprocess.Popen(command, env={**os.environ, "SEARCH_COUNT": str(count)})

    def stop(self) -> list[float]:
        self.stopfile.touch()
        return self.wait()

    def wait(self) -> list[float]:
        self.process.wait()
        return json.loads(self.out.read_text())


def searcher(out: Path) -> None:
    import django

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    django.setup()
    from curator.models import Owner
    from retrieval.embedders import query_cache
    from retrieval.search import search

    owner, count, times, n = Owner.default(), int(os.environ["SEARCH_COUNT"]), [], 0
    stop = out.with_suffix(".stop")
    for warm in QUERIES[:3]:  # the dictionary, the engine, the indexes: not what is measured
        search(warm, owner=owner, caller="bench")
    while not stop.exists() and (not count or len(times) < count):
        query_cache.clear()
        started = time.perf_counter()
        search(f"{QUERIES[n % len(QUERIES)]} {n}", owner=owner, caller="bench")
        times.append((time.perf_counter() - started) * 1000)
        n += 1
        time.sleep(0.05)
    out.write_text(json.dumps(times))


def drain(huey, workers: int, total: int, began: float, stages=None) -> dict:
    """Run the queue with `workers` threads until it is empty and every worker idle; a
    watcher notes when every turn has its vector and every user turn is extracted (and
    `stages`' figures then)."""
    from django.db import connection

    from curator.models import ConversationTurn
    from retrieval.models import SearchDoc

    lock, busy, done = threading.Lock(), [0], threading.Event()
    marks: dict[str, tuple[float, float]] = {}  # wall seconds, process CPU seconds

    def work() -> None:
        try:
            while True:
                with lock:
                    task = huey.dequeue()
                    if task is None and busy[0] == 0:
                        return
                    busy[0] += task is not None
                if task is None:
                    time.sleep(0.01)
                    continue
                try:
                    huey.execute(task)
                finally:
                    with lock:
                        busy[0] -= 1
        finally:
            connection.close()

    def watch() -> None:
        began_cpu = time.thread_time()
        try:
            while not done.is_set():
                now = time.perf_counter() - began
                if "indexed" not in marks:
                    docs = SearchDoc.objects.filter(kind="turn", embedded_at__isnull=False)
                    if docs.count() >= total:
                        marks["indexed"] = (now, time.process_time())
                if "extracted" not in marks:
                    left = ConversationTurn.objects.filter(role="user", extracted=False)
                    if not left.exists():
                        marks["extracted"] = (now, time.process_time())
                if stages and "indexed" in marks and "extracted" in marks:
                    stages.mark(watcher=time.thread_time() - began_cpu)
                done.wait(0.25)
        finally:
            connection.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda _: work(), range(workers)))
    done.set()
    watcher.join()
    return marks


def engine_rates(texts: list[str]) -> tuple[float, float, float]:
    """The bundled engine alone on these texts: items/s on one thread, and on two; CPU ms a
    text on one thread."""
    from retrieval.embedders import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.passages(texts[:8])

    def run(part: list[str]) -> None:
        for start in range(0, len(part), 64):
            embedder.passages(part[start : start + 64])

    started, used = time.perf_counter(), time.process_time()
    run(texts)
    one = len(texts) / (time.perf_counter() - started)
    used = time.process_time() - used
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(run, [texts[::2], texts[1::2]]))
    return one, len(texts) / (time.perf_counter() - started), 1000 * used / len(texts)


if __name__ == "__main__":
    main()
