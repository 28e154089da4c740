"""Importing chat history: turns per second to stored, indexed and extracted, and peak memory.

    python bench/chat_import.py [--turns 10000] [--per-session 20] [--format jsonl|chatgpt]

In a throwaway data dir with Huey not immediate (as in production): a generated export of
--turns turns (Chinese and English, a user turn then an answer, some turns stating what the
rules extractor keeps, some with tool calls) is prepared (read, checked, previewed), then
imported by `chat_import.run` as the page's task does. That stores every turn and queues
its indexing and extraction, and an episode per conversation. Then the queue is drained in
this process (one worker, what `manage.py serve` runs with the bundled embedder): the times
at which every turn is stored, keyword- and vector-indexed, and every user turn extracted
are printed, with the peak RSS after each phase. The guardrails' default detectors are on.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval_kit import peak_rss_mb, setup_django, table  # noqa: E402

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
    args = parser.parse_args()
    setup_django("chat-import", {"HUEY_IMMEDIATE": "0"})

    from huey.contrib.djhuey import HUEY

    from curator.models import ConversationTurn, Episode, Fact
    from lifecycle import chat_import, tasks
    from retrieval.models import SearchDoc

    folder = Path(tempfile.mkdtemp(prefix="chat-import-bench-"))
    path = folder / ("turns.jsonl" if args.format == "jsonl" else "conversations.json")
    generate(path, args.turns, args.per_session, args.format)
    size_mb = path.stat().st_size / 1e6
    rss = {"start": peak_rss_mb()}

    began = time.perf_counter()
    job = chat_import.prepare(path, args.format)
    prepared = time.perf_counter() - began
    rss["prepared"] = peak_rss_mb()
    chat_import.queue(job)
    job = chat_import.run(job.pk, finish_session=tasks.end_imported_session)
    stored = time.perf_counter() - began
    rss["stored"] = peak_rss_mb()
    total = ConversationTurn.objects.count()
    users = ConversationTurn.objects.filter(role="user").count()
    assert total == job.turns_added == args.turns - args.turns % args.per_session, job.error

    indexed = extracted = None
    executed = 0
    while True:
        task = HUEY.dequeue()
        if task is None:
            break
        HUEY.execute(task)
        executed += 1
        if executed % 250 and HUEY.pending_count():
            continue
        now = time.perf_counter() - began
        docs = SearchDoc.objects.filter(kind="turn", embedded_at__isnull=False).count()
        if indexed is None and docs >= total:
            indexed = now
        left = ConversationTurn.objects.filter(role="user", extracted=False).count()
        if extracted is None and left == 0:
            extracted = now
    drained = time.perf_counter() - began
    rss["drained"] = peak_rss_mb()
    indexed = indexed or drained
    extracted = extracted or drained

    print(
        f"{total} turns ({users} from the person) in {job.conversations} conversations, "
        f"{args.format}, {size_mb:.1f} MB; {executed} queued tasks run in this process"
    )

    def row(name: str, seconds: float, mb: float) -> list:
        return [name, round(seconds, 1), round(total / seconds), round(mb)]

    rows = [
        row("read, checked, previewed", prepared, rss["prepared"]),
        row("stored (turns, guardrails, JSONL backup)", stored, rss["stored"]),
        row("indexed (keywords + vectors)", indexed, rss["drained"]),
        row("extracted (rules extractor)", extracted, rss["drained"]),
        row("queue drained (episodes too)", drained, rss["drained"]),
    ]
    print(table(["phase (cumulative)", "seconds", "turns/s", "peak RSS MB"], rows))
    print(f"facts written: {Fact.objects.count()}, episodes: {Episode.objects.count()}")


if __name__ == "__main__":
    main()
