"""The MCP server: the memory as Model Context Protocol tools and resources (mcp SDK 2.x).

Every tool calls the same plain functions as the JSON API routers beside this file (the write
path through `propose_memory`, `run_search`, `run_context`, `record`, `end` ...), with the same
agent checks: a read-only token cannot write, a paused agent is refused and nothing is stored,
scope limits hold. Errors come back as tool errors carrying the API's sentence and code.

Two transports share the tools:
- stdio (`manage.py mcp`, `memory-curator mcp`): `run_stdio(token)`. Each tool call is
  authenticated like an API request (revoke, pause, rate limit apply at once).
- streamable HTTP at /mcp on the running server (`endpoint`, a Django view under waitress):
  stateless, JSON responses. The view authenticates the bearer token like the API (401, 429),
  then runs the SDK's own transport for this one request on an event loop of its own, in
  the request's thread. The tools' database work goes back to that same thread
  (`sync_to_async(thread_sensitive=True)` under `async_to_sync`), so it uses the thread's
  usual connection, as every other view does. GET (a server-sent event stream) and DELETE
  (ending a session) answer 405: a stateless server has neither.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

import anyio
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import Field, ValidationError

from curator import cards
from curator.models import FactType, Scope
from memsite.api import conversations, memories, profile, retrieval
from memsite.api.common import agent_for_token, read_limits, require_read, require_write
from memsite.api.errors import ApiError, json_error
from memsite.models import ApiToken

INSTRUCTIONS = (
    "Long-term memory of the person you work for, kept by Memory Curator. Call get_context "
    "with the person's message before answering to get who they are, the recent "
    "conversation and relevant memories. Call record_turn for every turn so the memory can "
    "learn from the conversation, and end_session when a conversation is over. Use remember "
    "for a fact worth keeping (it may be written, sent to the person's review, or dropped), "
    "recall to search, and forget to ask the person to remove something."
)
server = MCPServer("memory-curator", instructions=INSTRUCTIONS, log_level="WARNING")


# -- who is calling ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    """Set for the duration of an HTTP request (the agent, checked) or a stdio run (the
    token, checked again on every call)."""

    agent: ApiToken | None = None
    token: str = ""

    def current(self) -> ApiToken:
        return self.agent if self.agent is not None else agent_for_token(self.token)


_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("mcp_caller", default=None)


def _agent() -> ApiToken:
    caller = _caller.get()
    if caller is None:  # a tool called outside a transport of ours
        raise ApiError(401, "not_authenticated", _("Send an API token."))
    return caller.current()


def _run(work: Callable[[ApiToken], Any]) -> Callable[[], Any]:
    """The sync body of a tool: the agent, the work, errors as tool errors."""

    def body():
        try:
            return work(_agent())
        except ApiError as exc:
            raise ToolError(f"{exc.detail} ({exc.code})") from None
        except ValidationError as exc:
            fields = "; ".join(
                f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
            )
            raise ToolError(_("Invalid input (%(fields)s).") % {"fields": fields}) from None

    return body


async def _call(work: Callable[[ApiToken], Any]) -> Any:
    """Run a tool's database work in the thread that owns the request's connection."""
    return await sync_to_async(_run(work), thread_sensitive=True)()


# -- tools ---------------------------------------------------------------------------------------

TypeName = Literal[tuple(FactType.values)]
ScopeName = Literal[tuple(Scope.values)]
KindName = Literal["fact", "episode", "turn", "attachment"]
Role = Literal["user", "assistant", "system", "tool"]


def _outcome_message(outcome: dict) -> str:
    """One sentence a model can relay: what happened to the memory."""
    fact, pending = outcome.get("fact"), outcome.get("pending")
    kind = outcome["outcome"]
    if kind in ("written", "superseded") and fact:
        replaced = _(" (it replaces an older version)") if kind == "superseded" else ""
        return _("Stored as memory #%(id)s%(replaced)s.") % {"id": fact["id"], "replaced": replaced}
    if kind == "boosted" and fact:
        return _("Already known as memory #%(id)s; it is now more certain.") % {"id": fact["id"]}
    if kind == "pending" and pending:
        return _(
            "Sent to the person's review as item #%(id)s (%(why)s); it is not a memory until "
            "they confirm it."
        ) % {"id": pending["id"], "why": pending["reason"]}
    return _("Not stored (%(reason)s).") % {"reason": outcome.get("reason") or kind}


@server.tool(
    description=(
        "Store something worth remembering about the person or the work, e.g. a preference, "
        "a decision, a rule they gave you. It goes through the curator's write path: written "
        "when confidence is high, sent to the person's review when unsure, dropped when too "
        "unsure or already rejected. The answer says which. Use one short, self-contained "
        "sentence per memory."
    )
)
async def remember(
    content: Annotated[str, Field(description="The memory, one self-contained sentence.")],
    type: Annotated[TypeName, Field(description="What kind of memory it is.")] = "fact",
    scope: Annotated[
        ScopeName, Field(description="user: about the person; project: about the work.")
    ] = "user",
    confidence: Annotated[
        float, Field(ge=0, le=1, description="How sure you are it is true and lasting.")
    ] = 0.9,
    importance: Annotated[float, Field(ge=0, le=1, description="How much it matters.")] = 0.5,
    expires_at: Annotated[
        datetime | None, Field(description="When it stops being true, if it is temporary.")
    ] = None,
    subject: Annotated[str, Field(description="Who or what it is about, e.g. 'user'.")] = "",
    predicate: Annotated[
        str, Field(description="The attribute, e.g. 'lives_in'; a new value replaces the old.")
    ] = "",
    tags: Annotated[list[str] | None, Field(description="A few keywords.")] = None,
) -> dict[str, Any]:
    def work(agent):
        require_write(agent)
        payload = memories.MemoryIn(
            content=content,
            type=type,
            scope=scope,
            confidence=confidence,
            importance=importance,
            expires_at=expires_at,
            subject=subject,
            predicate=predicate,
            tags=tags or [],
        )
        _status, outcome = memories.propose_memory(agent, payload)
        return {"message": _outcome_message(outcome), **outcome}

    return await _call(work)


def _reason(item: dict) -> str:
    """Why a result came back, in one line: which channel found it and on what."""
    found = {"keyword": _("words"), "vector": _("meaning"), "both": _("words and meaning")}
    line = _("matched on %(how)s") % {"how": found.get(item.get("found_by"), _("recency"))}
    if item.get("matched"):
        line += ": " + ", ".join(item["matched"][:5])
    parts = (item.get("breakdown") or {}).items()
    if parts:
        name, part = max(parts, key=lambda kv: kv[1].get("contribution", 0))
        line += "; " + _("strongest signal: %(name)s") % {"name": name}
    return line


@server.tool(
    description=(
        "Search the long-term memory (facts, past episodes, conversation turns, attachments). "
        "Returns ranked results with their ids, a score and a one-line reason. Use it when the "
        "person refers to something from before, or before you rely on an assumption."
    )
)
async def recall(
    query: Annotated[str, Field(min_length=1, description="What to look for.")],
    limit: Annotated[int, Field(ge=1, le=50, description="How many results.")] = 10,
    kinds: Annotated[
        list[KindName] | None, Field(description="Only these kinds (default: all).")
    ] = None,
    time_from: Annotated[datetime | None, Field(description="Events from this time.")] = None,
    time_to: Annotated[datetime | None, Field(description="Events before this time.")] = None,
) -> dict[str, Any]:
    def work(agent):
        require_read(agent)
        payload = retrieval.SearchIn(
            query=query,
            limit=limit,
            kinds=kinds,
            time_from=time_from,
            time_to=time_to,
            explain=True,
        )
        found = retrieval.run_search(agent, payload, caller="mcp")
        results = [
            {
                "kind": r["kind"],
                "id": r["id"],
                "content": r["content"],
                "score": r["score"],
                "rank": r["rank"],
                "time": r["time"],
                "reason": _reason(r),
            }
            for r in found["results"]
        ]
        return {"results": results, "degraded": found["degraded"]}

    return await _call(work)


@server.tool(
    description=(
        "The ready-made context for the person's latest message: who the assistant and the "
        "person are, the recent turns of this session, and memories relevant to the message, "
        "within a token budget. Put its text in your prompt before answering."
    )
)
async def get_context(
    message: Annotated[str, Field(description="The person's latest message.")],
    session_id: Annotated[
        str | None, Field(description="Your conversation id, for its recent turns.")
    ] = None,
    max_tokens: Annotated[int | None, Field(ge=200, le=100_000)] = None,
) -> dict[str, Any]:
    def work(agent):
        require_read(agent)
        payload = retrieval.ContextIn(query=message, session_id=session_id, max_tokens=max_tokens)
        found = retrieval.run_context(agent, payload, caller="mcp")
        sections = [
            {"name": s["name"], "tokens": s["tokens"], "items": s["items"]}
            for s in found["sections"]
        ]
        return {"text": found["text"], "tokens": found["tokens"], "sections": sections}

    return await _call(work)


@server.tool(
    description=(
        "Record one conversation turn (yours or the person's) so the curator can learn from "
        "it. Call it for every turn, numbering turns from 0 within a session. Safe to retry."
    )
)
async def record_turn(
    session_id: Annotated[str, Field(min_length=1, max_length=200)],
    turn_index: Annotated[int, Field(ge=0, description="0, 1, 2 ... within the session.")],
    role: Role,
    content: str = "",
    tool_calls: Annotated[
        list[Any] | dict[str, Any] | None, Field(description="Tool calls made in this turn.")
    ] = None,
    tool_results: Annotated[
        list[Any] | dict[str, Any] | None, Field(description="What those tools returned.")
    ] = None,
) -> dict[str, Any]:
    def work(agent):
        require_write(agent)
        payload = conversations.TurnIn(
            session_id=session_id,
            turn_index=turn_index,
            role=role,
            content=content,
            tool_calls=tool_calls,
            tool_results=tool_results,
        )
        status, body = conversations.record(agent, payload)
        return {**body, "created": status == 201}

    return await _call(work)


@server.tool(
    description=(
        "End a conversation: the curator summarises it into an episode and finishes learning "
        "from it (in the background). Call it when the conversation is over."
    )
)
async def end_session(session_id: Annotated[str, Field(min_length=1)]) -> dict[str, Any]:
    def work(agent):
        require_write(agent)
        return {**conversations.end(agent, session_id), "queued": True}

    return await _call(work)


@server.tool(
    description=(
        "List stored memories, newest change first, with filters. Use recall to search by "
        "meaning; this is for browsing (e.g. all project rules)."
    )
)
async def list_memories(
    status: Literal["active", "superseded", "rejected", "archived", "expired", "all"] = "active",
    type: TypeName | None = None,
    scope: ScopeName | None = None,
    tag: str | None = None,
    q: Annotated[str, Field(description="Words that must all appear.")] = "",
    updated_after: datetime | None = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 50,
    offset: Annotated[int, Field(ge=0)] = 0,
) -> dict[str, Any]:
    def work(agent):
        require_read(agent)
        filters = memories.MemoryFilters(
            status=status,
            type=type,
            scope=scope,
            tag=tag,
            q=q,
            updated_after=updated_after,
            limit=limit,
            offset=offset,
        )
        return memories.memories_page(agent, filters)

    return await _call(work)


@server.tool(
    description=(
        "Who the assistant is and who the person is (the compiled profile cards), for your "
        "system prompt. Call it once at the start of a conversation."
    )
)
async def get_profile() -> dict[str, Any]:
    def work(agent):
        require_read(agent)
        return profile.profile_for(agent)

    return await _call(work)


@server.tool(
    description=(
        "Ask the person to remove a memory that is wrong or outdated. This never deletes: it "
        "files a deletion request on the person's review desk, and the memory stays until "
        "they confirm. Give the memory's id (from recall or list_memories) and why."
    )
)
async def forget(
    memory_id: Annotated[int, Field(ge=1, description="The memory's id.")],
    reason: Annotated[str, Field(description="Why it should go.")] = "",
    confidence: Annotated[float, Field(ge=0, le=1)] = 0.9,
) -> dict[str, Any]:
    def work(agent):
        require_write(agent)
        payload = memories.ForgetIn(reason=reason, confidence=confidence)
        _status, outcome = memories.forget_memory(agent, memory_id, payload)
        pending = outcome.get("pending")
        if outcome["outcome"] == "pending" and pending:
            message = _(
                "Filed deletion request #%(id)s for the person's review. Nothing was deleted: "
                "memory #%(memory)s stays until they confirm."
            ) % {"id": pending["id"], "memory": memory_id}
        else:
            message = _outcome_message(outcome)
        return {"message": message, **outcome}

    return await _call(work)


# -- resources: the cards ------------------------------------------------------------------------

# Card -> the memory scope it is written from (None: several; only unlimited agents read it).
CARD_RESOURCES = {
    "user": Scope.USER,
    "memory": None,
    "persona": Scope.SYSTEM,
    "project": Scope.PROJECT,
}


def _card_reader(key: str, scope: str | None):
    def work(agent):
        require_read(agent)
        limits = read_limits(agent)
        if limits.scopes is not None and (scope is None or scope not in limits.scopes):
            raise ApiError(403, "scope_not_allowed", _("This agent may not read this card."))
        return cards.read(key) or ""

    async def read() -> str:
        try:
            return await _call(work)
        except ToolError as exc:
            raise ResourceError(str(exc)) from None

    return read


for _key, _scope in CARD_RESOURCES.items():
    _spec = cards.spec(_key)
    server.resource(
        f"memory://cards/{_spec.title}",
        name=str(_spec.title),
        description=str(_spec.about),
        mime_type="text/markdown",
    )(_card_reader(_key, _scope))


# -- transports ----------------------------------------------------------------------------------


def run_stdio(token: str) -> None:
    """Serve over stdin/stdout until the client closes them (the token is checked first)."""
    _caller.set(Caller(token=token))
    anyio.run(server.run_stdio_async)


@csrf_exempt
@login_not_required
def endpoint(request: HttpRequest) -> HttpResponse:
    """Streamable HTTP, stateless: one JSON-RPC message in, its answer out."""
    if request.method != "POST":
        response = json_error(
            405, _("This MCP endpoint is stateless: POST JSON-RPC messages."), "method_not_allowed"
        )
        response["Allow"] = "POST"
        return response
    header = request.headers.get("Authorization", "")
    if header[:7].lower() != "bearer ":
        return json_error(
            401,
            _("Send an API token: Authorization: Bearer <token>."),
            "not_authenticated",
            headers={"WWW-Authenticate": "Bearer"},
        )
    try:
        agent = agent_for_token(header[7:])
    except ApiError as exc:
        return json_error(exc.status, exc.detail, exc.code, exc.fields, exc.headers)
    if _content_length(request) > settings.API_MAX_BODY_BYTES:
        return json_error(413, _("The request is too large."), "too_large")
    status, headers, body = async_to_sync(_serve)(request, agent)
    response = HttpResponse(body, status=status)
    for name, value in headers:
        if name.lower() not in ("content-length",):
            response[name] = value
    return response


def _content_length(request: HttpRequest) -> int:
    """Checked before the body is read (a chunked body without one is read up to Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE, then refused by the same check on its real size)."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared:
        return declared
    try:
        return len(request.body)
    except RequestDataTooBig:
        return settings.API_MAX_BODY_BYTES + 1


async def _serve(request: HttpRequest, agent: ApiToken) -> tuple[int, list, bytes]:
    """Run the SDK's stateless transport for this request (a manager lives one request)."""
    _caller.set(Caller(agent=agent))
    manager = StreamableHTTPSessionManager(
        app=server._lowlevel_server, stateless=True, json_response=True
    )
    answer = {"status": 500, "headers": [], "body": b""}
    body_sent = False

    async def receive():
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": request.body, "more_body": False}
        await anyio.sleep_forever()  # the whole body was sent; wait to be cancelled

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"] = int(message["status"])
            answer["headers"] = [(k.decode(), v.decode()) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    async with manager.run():
        await manager.handle_request(_scope(request), receive, send)
    return answer["status"], answer["headers"], answer["body"]


def _scope(request: HttpRequest) -> dict:
    """The ASGI scope of this Django request, as the SDK's transport reads it."""
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in request.headers.items()
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode(),
        "headers": headers,
        "server": (request.get_host().split(":")[0], int(request.get_port())),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }
