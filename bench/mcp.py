"""What an MCP call costs over the JSON API: `python bench/mcp.py [--requests 300]`.

On a real `manage.py serve` (a throwaway data directory, one read-write token, the rate limit
off), one client sends the same work both ways, one request after another on a keep-alive
connection, and prints p50 / p95 per request:

- the profile: GET /api/v1/profile against the MCP tool get_profile (tools/call on /mcp);
- a memory: POST /api/v1/memories against the MCP tool remember (each a new sentence);
- tools/list, the cheapest MCP message.

The difference is the price of the stateless HTTP transport: each POST to /mcp runs the SDK's
session manager on an event loop of its own (memsite/api/mcp.py).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"running at http://([\d.]+):(\d+)/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as data:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "memsite.settings",
            "MEMSITE_DATA_DIR": data,
            "MEMSITE_API_RATE_LIMIT": "0",
        }
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True)
        created = subprocess.run(
            [*manage, "api_token", "create", "--name", "bench"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        token = created.stdout.strip().splitlines()[-1]
        server = subprocess.Popen(
            [*manage, "serve", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            host, port = _ready(server)
            _measure(host, port, token, args.requests)
        finally:
            server.send_signal(2)
            server.wait(30)


def _ready(server) -> tuple[str, int]:
    for line in server.stdout:
        if match := READY.search(line):
            return match.group(1), int(match.group(2))
    raise SystemExit("serve did not start")


class Client:
    def __init__(self, host: str, port: int, token: str):
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.ids = 0

    def call(self, method: str, path: str, body=None) -> float:
        started = time.perf_counter()
        payload = json.dumps(body).encode() if body is not None else None
        headers = {**self.auth, "Accept": "application/json, text/event-stream"}
        self.conn.request(method, path, payload, headers)
        response = self.conn.getresponse()
        data = response.read()
        took = (time.perf_counter() - started) * 1000
        if response.status >= 400 or b'"isError":true' in data or b'"error"' in data[:80]:
            raise SystemExit(f"{method} {path}: {response.status} {data[:300]!r}")
        return took

    def mcp(self, method: str, params: dict | None = None) -> float:
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params or {}}
        return self.call("POST", "/mcp", body)


def _measure(host: str, port: int, token: str, n: int) -> None:
    client = Client(host, port, token)
    for _ in range(20):  # warm up: imports, the first connection, the search state
        client.call("GET", "/api/v1/profile")
        client.mcp("tools/list")
    rows = [
        ("GET /api/v1/profile", lambda i: client.call("GET", "/api/v1/profile")),
        (
            "MCP get_profile",
            lambda i: client.mcp("tools/call", {"name": "get_profile", "arguments": {}}),
        ),
        (
            "POST /api/v1/memories",
            lambda i: client.call(
                "POST",
                "/api/v1/memories",
                {"content": f"API 记住的第 {i} 件事", "confidence": 0.95},
            ),
        ),
        (
            "MCP remember",
            lambda i: client.mcp(
                "tools/call",
                {"name": "remember", "arguments": {"content": f"MCP 记住的第 {i} 件事"}},
            ),
        ),
        ("MCP tools/list", lambda i: client.mcp("tools/list")),
    ]
    print(f"{n} sequential requests each, one keep-alive connection, 127.0.0.1")
    print(f"{'what':<24} {'p50 ms':>8} {'p95 ms':>8}")
    for name, send in rows:
        times = sorted(send(i) for i in range(n))
        p95 = times[int(len(times) * 0.95) - 1]
        print(f"{name:<24} {statistics.median(times):>8.2f} {p95:>8.2f}")


if __name__ == "__main__":
    main()
