"""A small Python client for Memory Curator's agent API, shipped with the app.

Standard library only (it imports nothing else from the project), so an agent can use it
from any environment where `memory-curator` is installed:

    from memsite.client import MemoryClient

    memory = MemoryClient("http://127.0.0.1:8000", token="mc_...")
    memory.record_turn("chat-1", 0, "user", "I prefer short answers.")
    print(memory.context("How should you answer me?", session_id="chat-1")["text"])

Every method is one request of /api/v1/ (see /api/v1/docs); answers are the API's JSON as
dicts. An error answer raises `MemoryCuratorError` with the API's `status`, `code` and
`detail`.
Busy (503) and rate-limited (429) answers are retried after their Retry-After, a few
times: turns are retry-safe, and `remember` is when given an `operation_id`.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any, Literal, TypedDict

Role = Literal["user", "assistant", "system", "tool"]
RETRY_STATUSES = (429, 503)
MAX_RETRY_WAIT = 10.0  # seconds: a longer Retry-After is the caller's decision


class MemoryCuratorError(Exception):
    """The API refused: `status` (HTTP), `code` (stable, e.g. "agent_paused"), `detail`."""

    def __init__(self, status: int, code: str, detail: str, fields: dict | None = None):
        super().__init__(f"{status} {code}: {detail}")
        self.status, self.code, self.detail, self.fields = status, code, detail, fields or {}


class Turn(TypedDict):
    id: int
    session_id: str
    turn_index: int


class Outcome(TypedDict, total=False):
    outcome: str  # written, pending, boosted, superseded, dropped
    replayed: bool
    fact: dict[str, Any] | None
    pending: dict[str, Any] | None
    reason: str | None


class SearchResults(TypedDict, total=False):
    results: list[dict[str, Any]]
    degraded: bool
    degraded_reason: str | None
    timings_ms: dict[str, float]


class Context(TypedDict, total=False):
    text: str
    tokens: int
    sections: list[dict[str, Any]]
    budget: dict[str, int]
    triggered: bool
    degraded: bool


class MemoryClient:
    """One agent's connection: the server's base URL and the agent's API token."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, retries: int = 3):
        self.base = base_url.rstrip("/") + "/api/v1"
        self.token, self.timeout, self.retries = token, timeout, retries

    # -- conversations ---------------------------------------------------------------------------

    def record_turn(
        self,
        session_id: str,
        turn_index: int,
        role: Role,
        content: str = "",
        *,
        tool_calls: list | dict | None = None,
        tool_results: list | dict | None = None,
        timestamp: datetime | None = None,
    ) -> Turn:
        """Record one turn (turns count from 0 within a session); safe to repeat."""
        body = {
            "session_id": session_id,
            "turn_index": turn_index,
            "role": role,
            "content": content,
            "tool_calls": tool_calls,
            "tool_results": tool_results,
            "timestamp": timestamp.isoformat() if timestamp else None,
        }
        return self._request("POST", "/turns", _without_none(body))

    def end_session(self, session_id: str) -> dict[str, str]:
        """Queue the session's end (episode, scratchpad, the rest of the extraction)."""
        return self._request("POST", f"/sessions/{urllib.parse.quote(session_id, safe='')}/end")

    # -- memories --------------------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        type: str = "fact",
        scope: str = "user",
        confidence: float = 0.9,
        importance: float = 0.5,
        subject: str = "",
        predicate: str = "",
        tags: list[str] | None = None,
        expires_at: datetime | None = None,
        operation_id: str | None = None,
    ) -> Outcome:
        """Propose a memory: written, sent to the person's review, or dropped (see outcome)."""
        body = {
            "content": content,
            "type": type,
            "scope": scope,
            "confidence": confidence,
            "importance": importance,
            "subject": subject,
            "predicate": predicate,
            "tags": tags or [],
            "expires_at": expires_at.isoformat() if expires_at else None,
            "operation_id": operation_id,
        }
        return self._request("POST", "/memories", _without_none(body))

    def forget(self, memory_id: int, reason: str = "", *, confidence: float = 0.9) -> Outcome:
        """Ask the person to remove a memory (a review item; nothing is deleted)."""
        body = {"reason": reason, "confidence": confidence}
        return self._request("POST", f"/memories/{int(memory_id)}/forget", body)

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        kinds: list[str] | None = None,
        session_id: str | None = None,
        time_from: datetime | None = None,
        time_to: datetime | None = None,
    ) -> SearchResults:
        body = {
            "query": query,
            "limit": limit,
            "kinds": kinds,
            "session_id": session_id,
            "time_from": time_from.isoformat() if time_from else None,
            "time_to": time_to.isoformat() if time_to else None,
        }
        return self._request("POST", "/search", _without_none(body))

    def context(
        self,
        query: str,
        *,
        session_id: str | None = None,
        max_tokens: int | None = None,
        evidence: Literal["auto", "always", "never"] = "auto",
    ) -> Context:
        """The text to put in the prompt for this message (cards, recent turns, evidence)."""
        body = {
            "query": query,
            "session_id": session_id,
            "max_tokens": max_tokens,
            "evidence": evidence,
        }
        return self._request("POST", "/context", _without_none(body))

    # -- the person's review queue ---------------------------------------------------------------

    def pending(self, status: str = "due", *, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        query = urllib.parse.urlencode({"status": status, "limit": limit, "offset": offset})
        return self._request("GET", f"/pending?{query}")

    def confirm(self, item_id: int, edits: dict[str, Any] | None = None) -> dict[str, Any]:
        """Confirm a pending item (e.g. after asking the person in chat)."""
        body = {"edits": edits} if edits else {}
        return self._request("POST", f"/pending/{int(item_id)}/confirm", body)

    # -- transport -------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: dict | None = None) -> Any:
        data = json.dumps(body if body is not None else {}).encode() if method != "GET" else None
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(
                self.base + path, data=data, method=method, headers=headers
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                    return json.loads(raw) if raw else {}
            except urllib.error.HTTPError as exc:
                error = _error(exc)
                wait = _retry_after(exc)
                if error.status not in RETRY_STATUSES or attempt == self.retries or wait is None:
                    raise error from None
                time.sleep(wait)
        raise AssertionError("unreachable")  # the loop either returns or raises


def _without_none(body: dict) -> dict:
    return {k: v for k, v in body.items() if v is not None}


def _error(exc: urllib.error.HTTPError) -> MemoryCuratorError:
    try:
        payload = json.loads(exc.read() or b"{}")
    except ValueError:
        payload = {}
    return MemoryCuratorError(
        exc.code,
        str(payload.get("code") or f"http_{exc.code}"),
        str(payload.get("detail") or exc.reason),
        payload.get("fields"),
    )


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    try:
        wait = float(exc.headers.get("Retry-After", "1"))
    except ValueError:
        return None
    return wait if wait <= MAX_RETRY_WAIT else None
