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
- streaming: a chat request with `"stream": true` is answered as server-sent events, the
  reply cut into `chunk_chars`-character chunks: the first after `ttft` seconds, the next
  every `chunk_interval` seconds, then `data: [DONE]`
- a reply may be a dict: {"content": ..., "tool_calls": [...]} answers with tool calls
- GET /v1/models lists `models`

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
        self.ttft = 0.0
        self.chunk_interval = 0.0
        self.chunk_chars = 4
        self.models = ["fake-model"]
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

    def _reply(self, body: dict) -> dict:
        """The next reply as a message: {"role", "content", "tool_calls"?}."""
        with self._lock:
            reply = self.chat_replies.pop(0) if self.chat_replies else "{}"
        if callable(reply):
            reply = reply(body)
        if isinstance(reply, dict):
            return {"role": "assistant", "content": reply.get("content"), **reply}
        return {"role": "assistant", "content": reply}

    def _chat(self, body: dict) -> dict:
        message = self._reply(body)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def stream_chunks(self, body: dict) -> list[dict]:
        """The chat.completion.chunk objects of a streamed answer."""
        message = self._reply(body)
        text = message.get("content") or ""
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0}
        base["model"] = body.get("model", "fake")
        pieces = [text[i : i + self.chunk_chars] for i in range(0, len(text), self.chunk_chars)]
        deltas = [{"role": "assistant", "content": ""}] + [{"content": p} for p in pieces]
        for i, call in enumerate(message.get("tool_calls") or []):
            deltas.append({"tool_calls": [{"index": i, **call}]})
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        chunks = [{**base, "choices": [{"index": 0, "delta": d}]} for d in deltas]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        return chunks

    def _stream(self, handler, body: dict) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        time.sleep(self.ttft)
        try:
            for i, chunk in enumerate(self.stream_chunks(body)):
                if i and self.chunk_interval:
                    time.sleep(self.chunk_interval)
                handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                handler.wfile.flush()
            handler.wfile.write(b"data: [DONE]\n\n")
            handler.wfile.flush()
        except OSError:  # the reader went away (a cut stream): nothing more to send
            pass
        handler.close_connection = True

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    fake.requests.append({"path": self.path, "body": None, "headers": headers})
                if not self.path.endswith("/models"):
                    return self._send(404, {"error": {"message": "no route", "type": "x"}})
                data = [{"id": m, "object": "model", "owned_by": "fake"} for m in fake.models]
                self._send(200, {"object": "list", "data": data})

            def do_POST(self):  # noqa: N802 (the stdlib's name)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                if body.get("stream") and self.path.endswith("/chat/completions"):
                    with fake._lock:
                        fake.requests.append({"path": self.path, "body": body, "headers": headers})
                        failure = fake._failures.pop(0) if fake._failures else None
                    if failure is None:
                        return fake._stream(self, body)
                    status = failure[0]
                    payload = failure[1] or {
                        "error": {"message": "simulated failure", "type": "server_error"}
                    }
                    return self._send(status, payload)
                status, payload = fake._answer(self.path, body, headers)
                self._send(status, payload)

            def _send(self, status: int, payload: dict) -> None:
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
