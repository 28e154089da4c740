"""Reading the assistant's answer out of the server-sent events it streams, on the side:
the events themselves go to the client unchanged, as they arrive."""

from __future__ import annotations

import json


class StreamCollector:
    """Feed it the stream's bytes in any pieces; `message()` is the answer so far (content
    and tool calls, merged from their deltas), `done` whether the stream ended properly."""

    def __init__(self):
        self._buffer = b""
        self.content: list[str] = []
        self.tool_calls: dict[int, dict] = {}
        self.done = False

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return  # blank separators, comments, event: and id: lines
        payload = line[5:].strip()
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            return
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._delta(choice.get("delta") or {})
                if choice.get("finish_reason"):
                    self.done = True

    def _delta(self, delta: dict) -> None:
        if isinstance(delta.get("content"), str):
            self.content.append(delta["content"])
        for call in delta.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            slot = self.tool_calls.setdefault(
                call.get("index", len(self.tool_calls)),
                {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
            )
            if call.get("id"):
                slot["id"] = call["id"]
            if call.get("type"):
                slot["type"] = call["type"]
            function = call.get("function") or {}
            slot["function"]["name"] += function.get("name") or ""
            slot["function"]["arguments"] += function.get("arguments") or ""

    def message(self) -> dict:
        message = {"role": "assistant", "content": "".join(self.content)}
        if self.tool_calls:
            message["tool_calls"] = [self.tool_calls[i] for i in sorted(self.tool_calls)]
        return message
