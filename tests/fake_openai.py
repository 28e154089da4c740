"""A fake OpenAI-compatible server for tests: the real `openai` client talks to it.

Use the `fake_openai` fixture (registered in tests/conftest.py):

    def test_something(fake_openai):
        fake_openai.embeddings = lambda texts: [[1.0, 0.0, 0.0] for _ in texts]
        fake_openai.chat_replies = ['{"facts": []}']      # consumed in order
        client = OpenAI(base_url=fake_openai.base_url, api_key="test")
        ...
        assert fake_openai.requests[-1]["path"] == "/v1/embeddings"

- `base_url`: "http://127.0.0.1:<port>/v1"
- `embeddings`: a function texts -> vectors (default: 8-d vectors derived from the text)
- `chat_replies`: message contents returned in order by /v1/chat/completions (strings, or
  callables taking the request body); when empty, "{}" is returned
- `fail_next(status=500, times=1, body=None)`: the next requests fail with that status
- `delay`: seconds to sleep before answering (for timeout tests)
- `requests`: every request as {"path", "body", "headers"} (header names lower-cased)

Embeddings are answered as float lists whatever `encoding_format` asks for: the client
sends base64 by default and accepts floats.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def hashed_vectors(texts: list[str], dimension: int = 8) -> list[list[float]]:
    """Deterministic, text-dependent vectors (the same text always gives the same one)."""
    out = []
    for text in texts:
        digest = hashlib.sha256(text.encode()).digest()
        out.append([(digest[i] - 127.5) / 127.5 for i in range(dimension)])
    return out


class FakeOpenAI:
    def __init__(self):
        self.embeddings = hashed_vectors
        self.chat_replies: list = []
        self.requests: list[dict] = []
        self.delay = 0.0
        self._failures: list[tuple[int, dict | None]] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def fail_next(self, status: int = 500, times: int = 1, body: dict | None = None) -> None:
        with self._lock:
            self._failures.extend([(status, body)] * times)

    def paths(self) -> list[str]:
        return [r["path"] for r in self.requests]

    # ----------------------------------------------------------------------------------

    def _answer(self, path: str, body: dict, headers: dict) -> tuple[int, dict]:
        with self._lock:
            self.requests.append({"path": path, "body": body, "headers": headers})
            failure = self._failures.pop(0) if self._failures else None
        if self.delay:
            time.sleep(self.delay)
        if failure:
            status, payload = failure
            error = {"error": {"message": "simulated failure", "type": "server_error"}}
            return status, payload or error
        if path.endswith("/embeddings"):
            return 200, self._embeddings(body)
        if path.endswith("/chat/completions"):
            return 200, self._chat(body)
        return 404, {"error": {"message": f"no route {path}", "type": "not_found"}}

    def _embeddings(self, body: dict) -> dict:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        vectors = self.embeddings(texts)
        return {
            "object": "list",
            "model": body.get("model", "fake"),
            "data": [
                {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                for i, v in enumerate(vectors)
            ],
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }

    def _chat(self, body: dict) -> dict:
        with self._lock:
            reply = self.chat_replies.pop(0) if self.chat_replies else "{}"
        if callable(reply):
            reply = reply(body)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the stdlib's name)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload = fake._answer(self.path, body, headers)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # keep test output clean
                pass

        return Handler

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_openai():
    """A running fake OpenAI-compatible server (see the module docstring)."""
    server = FakeOpenAI().start()
    yield server
    server.stop()
