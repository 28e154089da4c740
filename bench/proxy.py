"""What the chat proxy adds to a streamed chat: `python bench/proxy.py [--rounds 12]`.

1. A throwaway data directory with the demo memory (`manage.py load_demo`: facts, cards,
   sessions, indexed) and an agent token.
2. The fake OpenAI-compatible upstream (tests/fake_openai.py) on 127.0.0.1 with a fixed time
   to first token (--ttft, 200 ms) and a fixed chunk rate (--interval, 20 ms; --chunks 40).
3. `manage.py serve` (waitress and the Huey consumer, as `make run`) with that upstream as
   MEMSITE_PROXY_UPSTREAM_URL.
4. With 1 and then 8 concurrent conversations (each a growing chat of --rounds messages),
   every message is sent directly to the upstream and through the proxy, alternately, and
   timed on the client: time to the first content chunk and to the last one. Printed: the
   direct and proxied p50 / p95 and what the proxy adds, the mean gap between chunks in each
   case, and the time of POST /api/v1/context for the same messages under the same
   concurrency (the goal: the proxy adds no more than /context's time plus 10 ms to the first
   token, and nothing per chunk).

Recording (the turns after each answer) runs after the stream, in the server; extraction runs
in its consumer during the measurement, as it would in use.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_openai import FakeOpenAI  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import api as api_bench  # noqa: E402  (its server start, shared)

MESSAGES = [
    "我对花生过敏，推荐一道菜",
    "What should I cook tonight?",
    "帮我想想周末去哪里玩",
    "Remind me what I said about my job",
    "最近睡得不好，有什么建议",
    "Plan a short trip for next month",
    "我想学一门新的编程语言",
    "What gift would suit my mother?",
]


def manage(data_dir: Path, *args: str, env: dict | None = None) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env={**os.environ, "MEMSITE_DATA_DIR": str(data_dir), **(env or {})},
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return done.stdout


def start_server(data_dir: Path, upstream: str) -> tuple[subprocess.Popen, int]:
    extra = {"MEMSITE_PROXY_UPSTREAM_URL": upstream, "MEMSITE_PROXY_UPSTREAM_KEY": "sk-bench"}
    return api_bench.start_server(data_dir, extra)


def stream_once(url: str, token: str, messages: list[dict]) -> tuple:
    """(seconds to the first content chunk, to the last, gaps between chunks, the answer, the
    proxy's own context time in seconds from its Server-Timing header, or None)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    body = json.dumps({"model": "fake-model", "stream": True, "messages": messages}).encode()
    started = time.perf_counter()
    conn.request(
        "POST",
        parts.path + "/chat/completions",
        body,
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    if response.status != 200:
        raise SystemExit(f"{url}: {response.status} {response.read()[:300]!r}")
    timing = dict(
        part.split(";dur=")
        for part in (response.getheader("Server-Timing") or "").split(", ")
        if ";dur=" in part
    )
    own_context = float(timing["context"]) / 1000 if "context" in timing else None
    first = last = None
    stamps, text, buffer = [], [], b""
    while data := response.read1(65536):
        buffer += data
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            payload = event.strip()[5:].strip()
            if payload == b"[DONE]" or not payload:
                continue
            delta = json.loads(payload)["choices"][0].get("delta", {})
            if delta.get("content"):
                now = time.perf_counter() - started
                first = now if first is None else first
                last = now
                stamps.append(now)
                text.append(delta["content"])
    conn.close()
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    return first, last, gaps, "".join(text), own_context


def context_once(port: int, token: str, query: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = json.dumps({"query": query}).encode()
    started = time.perf_counter()
    conn.request(
        "POST",
        "/api/v1/context",
        body,
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    conn.getresponse().read()
    conn.close()
    return time.perf_counter() - started


def conversation(n: int, args, direct: str, proxy: str, port: int, token: str, out: list):
    """One client: a growing chat, each message sent directly and through the proxy; one
    record per message (appended whole, so concurrent clients never mix their pairs)."""
    history: list[dict] = []
    for r in range(args.rounds):
        text = f"{MESSAGES[(n + r) % len(MESSAGES)]} (client {n}, message {r})"
        history.append({"role": "user", "content": text})
        order = [("direct", direct, "sk-bench"), ("proxy", proxy, token)]
        if r % 2:
            order.reverse()  # neither side always goes first
        record, answer = {}, ""
        for name, url, key in order:
            first, last, gaps, answer, own_context = stream_once(url, key, history)
            record[name] = {"first": first, "last": last, "gaps": gaps}
            if name == "proxy":
                record["own_context"] = own_context
        record["context"] = context_once(port, token, text)
        out.append(record)
        history.append({"role": "assistant", "content": answer})


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def row(label: str, values: list[float]) -> None:
    p50, p95 = percentile(values, 0.5) * 1000, percentile(values, 0.95) * 1000
    print(f"  {label:<26} {p50:7.1f}  {p95:7.1f}")


def report(clients: int, out: list) -> None:
    print(f"\n{clients} concurrent conversation(s), {len(out)} answers each way")
    print("                              p50 ms   p95 ms")
    for what, label in (("first", "first chunk"), ("last", "last chunk")):
        row(f"direct {label}", [r["direct"][what] for r in out])
        row(f"proxy {label}", [r["proxy"][what] for r in out])
        row(f"added to {label}", [r["proxy"][what] - r["direct"][what] for r in out])
    row("POST /context", [r["context"] for r in out])
    row("context in the proxy", [r["own_context"] for r in out])
    row(
        "added beyond its context",
        [r["proxy"]["first"] - r["direct"]["first"] - r["own_context"] for r in out],
    )
    for name in ("direct", "proxy"):
        gaps = [g for r in out for g in r[name]["gaps"]]
        print(f"  mean gap between chunks, {name}: {statistics.mean(gaps) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12, help="messages per conversation")
    parser.add_argument("--ttft", type=float, default=0.2, help="upstream's first-token delay")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between chunks")
    parser.add_argument("--chunks", type=int, default=40, help="content chunks per answer")
    parser.add_argument("--clients", default="1,8")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memsite-bench-proxy-"))
    manage(data_dir, "migrate", "--noinput")
    manage(data_dir, "load_demo")
    token = manage(data_dir, "api_token", "create", "--name", "bench").strip().splitlines()[-1]
    fake = FakeOpenAI()
    fake.ttft, fake.chunk_interval, fake.chunk_chars = args.ttft, args.interval, 4
    fake.chat_replies = []
    fake.server.request_queue_size = 64
    answer = "好" * (4 * args.chunks)
    fake_reply = lambda body: answer  # noqa: E731 (every answer the same length)
    fake.chat_replies = _Endless(fake_reply)
    fake.start()
    proc, port = start_server(data_dir, fake.base_url)
    proxy = f"http://127.0.0.1:{port}/llm/v1"
    try:
        stream_once(proxy, token, [{"role": "user", "content": "warm up"}])  # jieba, the model
        context_once(port, token, "warm up")
        for clients in (int(c) for c in args.clients.split(",")):
            out: list[dict] = []
            threads = [
                threading.Thread(
                    target=conversation, args=(n, args, fake.base_url, proxy, port, token, out)
                )
                for n in range(clients)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            report(clients, out)
        print(
            f"\nupstream: TTFT {args.ttft * 1000:.0f} ms, a chunk every "
            f"{args.interval * 1000:.0f} ms, {args.chunks} chunks; load: {os.getloadavg()}"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        fake.stop()


class _Endless(list):
    """chat_replies that never run out: the same reply for every request."""

    def __init__(self, reply):
        super().__init__([reply])
        self.reply = reply

    def pop(self, index=-1):
        return self.reply

    def __bool__(self):
        return True


if __name__ == "__main__":
    main()
