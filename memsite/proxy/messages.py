"""The client's chat messages as conversation turns, the conversation's session id, and the
context put into the messages sent upstream.

A client resends the whole conversation with every request, so the same message must always
become the same turn (its text, tool calls and results): that is what lets the proxy record
each turn once (curator.conversations.record_turn answers a repeat with the stored turn).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from memsite.models import ContextPlacement

# Instructions, not conversation: never recorded as turns.
INSTRUCTION_ROLES = ("system", "developer")
ROLES = {"user": "user", "assistant": "assistant", "tool": "tool", "function": "tool"}
SESSION_PREFIX = "llm"
MAX_HEADER_KEY = 100


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    tool_calls: list | None = None
    tool_results: list | None = None
    partial: bool = False


def text_of(content) -> str:
    """A message's content as text: a string, or the text parts of a list of parts (an image
    or audio part becomes "[image_url]", "[input_audio]": the file itself is not kept)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'part')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


def as_turn(message: dict) -> Turn | None:
    """One client message as a turn; None for instructions (system, developer)."""
    role = ROLES.get(message.get("role"))
    if role is None:
        return None
    # Clients differ in trailing whitespace when they send an answer back; stripping it keeps
    # their copy equal to the recorded one.
    content = text_of(message.get("content")).strip()
    if role == "assistant":
        calls = message.get("tool_calls") or None
        if calls is None and message.get("function_call"):
            calls = [{"type": "function", "function": message["function_call"]}]
        return Turn("assistant", content, calls)
    if role == "tool":
        result = {"tool_call_id": message.get("tool_call_id") or message.get("name") or ""}
        return Turn("tool", content, None, [result])
    return Turn("user", content)


def conversation(messages: list[dict]) -> list[Turn]:
    return [turn for m in messages if (turn := as_turn(m)) is not None]


def query_of(messages: list[dict]) -> str:
    """The newest user message: what the context is looked up for."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return text_of(message.get("content")).strip()
    return ""


def _digest(*parts: str, size: int = 16) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:size]


def session_key(agent_id: int, turns: list[Turn], header: str = "") -> str:
    """X-Memory-Session when the client sends one, else a key from the conversation's first
    turn: the same conversation resent gives the same key. Prefixed with the agent, so two
    agents never share a conversation."""
    header = header.strip()
    if header:
        name = header if len(header) <= MAX_HEADER_KEY else _digest(header, size=32)
        return f"{SESSION_PREFIX}:{agent_id}:{name}"
    first = turns[0] if turns else Turn("user", "")
    return f"{SESSION_PREFIX}:{agent_id}:{_digest(first.role, first.content)}"


def fork_key(key: str, turns: list[Turn]) -> str:
    """Where a conversation goes when it parts from the recorded one (the person edited a
    message, regenerated an answer, or another chat began with the same words): the same
    divergence always gives the same key, so later requests find the fork again."""
    seen = json.dumps([[t.role, t.content, t.tool_calls, t.tool_results] for t in turns])
    return f"{key}~{_digest(key, seen, size=12)}"


def inject(messages: list[dict], text: str, placement: str, heading: str) -> list[dict]:
    """The messages with the context as a system message: its own, first (BEFORE), or
    prepended to the client's first system message (MERGED; its own when there is none).
    The client's messages are never changed in place."""
    if not text.strip():
        return list(messages)
    block = f"{heading}\n\n{text}"
    if placement == ContextPlacement.MERGED:
        for i, message in enumerate(messages):
            if message.get("role") in INSTRUCTION_ROLES and isinstance(message.get("content"), str):
                merged = {**message, "content": f"{block}\n\n{message['content']}"}
                return [*messages[:i], merged, *messages[i + 1 :]]
    return [{"role": "system", "content": block}, *messages]
