"""One chat request through the proxy: read it, add the memory, forward it, record it.

    prepared = prepare(agent, body, session_header)   # context, recording state, upstream
    answer = forward(prepared)                        # the upstream's status line (or 502)
    ... stream(prepared, answer) or complete(prepared, answer) ...

The curator's part never costs the person their chat: when the context cannot be built the
request goes on without it (`X-Memory-Status: degraded`), and when recording fails the answer
has already gone (the exchange log says so). Recording follows the agent's rights: a
read-only token, a paused agent or the person's global pause records nothing.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field

from django.db import DatabaseError
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curator import conversations as conv
from curator.models import Owner, Session
from memsite.core import agents, strictjson
from memsite.models import ApiToken, ProxyExchange
from memsite.proxy import messages as msgs
from memsite.proxy import upstream as upstreams
from memsite.proxy.stream import StreamCollector
from memsite.proxy.upstream_http import Answer, UpstreamDown, call, open_soon
from retrieval import context as contexts

log = logging.getLogger("memsite.proxy")
HEADING = gettext_lazy(
    "What you remember about the person you are talking with (from Memory Curator). "
    "Use it when it helps; do not mention it otherwise."
)
MAX_FORKS = 8
KEEP_EXCHANGES = 1000
PASSED_HEADERS = ("x-request-id", "openai-", "retry-after", "x-ratelimit-")


class ProxyError(Exception):
    """An error the client gets in OpenAI's shape: {"error": {message, type, param, code}}."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        type_: str = "invalid_request_error",
        param: str | None = None,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.code = status, str(message), code
        self.type, self.param, self.headers = type_, param, headers or {}

    def body(self) -> dict:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


# -- reading the request -------------------------------------------------------------------------


def parse(raw: bytes) -> dict:
    """The request body, checked as far as the proxy needs; ProxyError 400 naming the problem."""
    try:
        body = strictjson.loads(raw)
    except ValueError as exc:
        raise ProxyError(
            400, _("The request body is not valid JSON: %(e)s") % {"e": exc}, "invalid_json"
        ) from None
    if not isinstance(body, dict):
        raise ProxyError(400, _("The request body must be a JSON object."), "invalid_body")
    if not isinstance(body.get("model"), str) or not body["model"].strip():
        raise ProxyError(400, _("'model' is required: the model to chat with."), param="model")
    found = body.get("messages")
    if not isinstance(found, list) or not found:
        raise ProxyError(400, _("'messages' must be a non-empty list."), param="messages")
    for i, message in enumerate(found):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ProxyError(
                400,
                _("messages[%(i)d] must be an object with a 'role'.") % {"i": i},
                param=f"messages[{i}]",
            )
    if "stream" in body and not isinstance(body["stream"], bool):
        raise ProxyError(400, _("'stream' must be true or false."), param="stream")
    return body


# -- the memory part -----------------------------------------------------------------------------


@dataclass
class Prepared:
    agent: ApiToken
    body: dict  # what goes upstream: the context injected, the model mapped
    turns: list[msgs.Turn]
    upstream: upstreams.Upstream
    uid: str = field(default_factory=lambda: uuid.uuid4().hex)
    status: str = "ok"  # ok, degraded, paused
    reason: str = ""
    recording: str = "on"  # on, read_only_token, memory_paused, agent_paused
    session_key: str = ""
    context: dict = field(default_factory=dict)
    tokens: int = 0
    started: float = field(default_factory=time.perf_counter)
    opening: Future | None = field(default=None, repr=False)  # the upstream connection
    timings: dict = field(default_factory=dict)

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    def headers(self) -> dict:
        return {
            "X-Memory-Status": self.status,
            "X-Memory-Context-Tokens": str(self.tokens),
            "X-Memory-Recall-Id": self.uid,
            "X-Memory-Recording": self.recording,
            "X-Memory-Session": self.session_key,
            # What the proxy spent before the upstream answered (browsers' devtools show it).
            "Server-Timing": ", ".join(
                f"{name.removesuffix('_ms')};dur={value}" for name, value in self.timings.items()
            ),
        }


def recording_state(agent: ApiToken) -> str:
    """ "on", or why nothing of this chat is recorded."""
    if not agent.can_write:
        return "read_only_token"
    try:
        agents.check_write(agent)
    except agents.AgentRefused as exc:
        return exc.code
    return "on"


def prepare(agent: ApiToken, body: dict, session_header: str = "") -> Prepared:
    upstream, options = upstreams.resolve(agent)
    turns = msgs.conversation(body["messages"])
    prepared = Prepared(agent, body, turns, upstream)
    prepared.opening = open_soon(upstream)
    prepared.session_key = msgs.session_key(agent.pk, turns, session_header)
    prepared.recording = recording_state(agent)
    if agent.reads_paused:
        prepared.status = "paused"
    else:
        _add_context(prepared, body, options)
    prepared.body = {
        **body,
        "model": upstream.model_for(body["model"]),
        "messages": msgs.inject(
            body["messages"], prepared_text(prepared), options.placement, _heading()
        ),
    }
    prepared.timings["prepare_ms"] = _ms(prepared.started)
    return prepared


def prepared_text(prepared: Prepared) -> str:
    return prepared.context.get("text", "") if prepared.status == "ok" else ""


def _heading() -> str:
    with translation.override(Owner.default().agent_language()):
        return str(HEADING)


def build_context(
    agent: ApiToken | None,
    query: str,
    session_key: str,
    budget: int,
    *,
    record: bool = True,
    recall_id: str = "",
) -> contexts.ContextResult:
    """What POST /context gives for the newest user message, without this conversation's own
    turns (the client sends them): cards and evidence within `budget` tokens."""
    scopes = agents.readable_scopes(agent)
    sessions = None
    if scopes is not None:
        sessions = frozenset(conv_sessions(agent))
    budgets = contexts.Budgets.from_settings(budget, turns=0, reserve=0)
    return contexts.assemble(
        query,
        session_id=None,
        budgets=budgets,
        caller="proxy",
        agent_id=agent.pk if agent else None,
        fact_scopes=scopes,
        sessions=sessions,
        exclude_session=session_key,
        record=record,
        params={"proxy": recall_id, "proxy_session": session_key},
    )


def conv_sessions(agent: ApiToken):
    """An agent limited to some scopes sees only its own conversations (as in the API)."""
    return Session.objects.filter(agent=agent).values_list("pk", flat=True)


def context_dict(result: contexts.ContextResult) -> dict:
    """The context as the playground shows it: each item with its score breakdown."""
    data = result.to_dict(explain=True)
    if result.search is not None:
        by_key = {(i.kind, i.id): i for i in result.search.items}
        for section in data["sections"]:
            for item in section["items"]:
                if (found := by_key.get((item.get("kind"), item.get("id")))) is not None:
                    item["breakdown"] = found.breakdown
                    item["content"] = found.content[:500]
    data["query"] = result.query
    return data


def _add_context(prepared: Prepared, body: dict, options: upstreams.Options) -> None:
    started = time.perf_counter()
    try:
        result = build_context(
            prepared.agent,
            msgs.query_of(body["messages"]),
            prepared.session_key,
            options.context_tokens,
            recall_id=prepared.uid,
        )
        prepared.context = context_dict(result)
        prepared.tokens = result.tokens if result.text.strip() else 0
        if result.degraded:
            prepared.reason = result.degraded_reason
    except Exception as exc:  # noqa: BLE001
        # A locked database, a broken index, a missing model: the chat goes on without memory.
        log.warning("Chat proxy: no context for this request (%s)", exc.__class__.__name__)
        prepared.status, prepared.reason = "degraded", f"{exc.__class__.__name__}: {exc}"
    prepared.timings["context_ms"] = _ms(started)


# -- forwarding ----------------------------------------------------------------------------------


def forward(prepared: Prepared) -> Answer:
    """The upstream's answer (status line read); ProxyError when there is no upstream or it
    cannot be reached (502 naming it)."""
    if not prepared.upstream.configured:
        raise ProxyError(
            503,
            _(
                "No upstream is configured for the chat proxy: set it on the Settings page "
                "(Chat proxy) or with MEMSITE_PROXY_UPSTREAM_URL."
            ),
            "upstream_not_configured",
            "server_error",
            headers=prepared.headers(),
        )
    try:
        answer = call(
            prepared.upstream, "POST", "/chat/completions", prepared.body, prepared.opening
        )
    except UpstreamDown as exc:
        _log_exchange(prepared, [], upstream_status=502)
        raise ProxyError(
            502, exc.message, "upstream_unreachable", "upstream_error", headers=prepared.headers()
        ) from None
    prepared.timings["upstream_headers_ms"] = _ms(prepared.started)
    return answer


def passed_headers(answer: Answer) -> dict:
    return {k: v for k, v in answer.headers.items() if k.lower().startswith(PASSED_HEADERS)}


def upstream_error(prepared: Prepared, answer: Answer) -> ProxyError:
    """The upstream refused: its status, and its error body when it is OpenAI-shaped."""
    raw = answer.read_all()
    _log_exchange(prepared, [], upstream_status=answer.status)
    try:
        found = json.loads(raw)
    except ValueError:
        found = None
    error = found.get("error") if isinstance(found, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or "")
        err = ProxyError(
            answer.status,
            message,
            error.get("code"),
            error.get("type") or "upstream_error",
            error.get("param"),
        )
    else:
        text = raw.decode("utf-8", "replace").strip()[:500]
        message = _("The upstream answered %(status)d: %(text)s") % {
            "status": answer.status,
            "text": text or answer.content_type,
        }
        err = ProxyError(answer.status, message, None, "upstream_error")
    err.headers = {**prepared.headers(), **passed_headers(answer)}
    return err


def complete(prepared: Prepared, answer: Answer) -> tuple[bytes, list[int]]:
    """A non-streamed answer: its bytes, once the exchange is recorded."""
    raw = answer.read_all()
    prepared.timings["upstream_done_ms"] = _ms(prepared.started)
    reply = None
    try:
        found = json.loads(raw)
        reply = found["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        log.warning("Chat proxy: the upstream's answer has no choices[0].message")
    recorded = finish(prepared, reply, partial=False)
    return raw, recorded


def stream(prepared: Prepared, answer: Answer):
    """The upstream's server-sent events as they arrive; recording runs once the stream has
    gone (or the client went away: then what was received is recorded as a partial answer)."""
    collector = StreamCollector()
    first = True
    try:
        for data in answer.chunks():
            collector.feed(data)
            if first:
                prepared.timings["first_chunk_ms"] = _ms(prepared.started)
                first = False
            yield data
    finally:
        answer.close()
        prepared.timings["upstream_done_ms"] = _ms(prepared.started)
        finish(prepared, collector.message(), partial=not collector.done)


# -- recording -----------------------------------------------------------------------------------


def finish(prepared: Prepared, reply: dict | None, *, partial: bool) -> list[int]:
    """Record the exchange; never raises (the answer is the person's, whatever happens here)."""
    recorded: list[int] = []
    try:
        if prepared.recording == "on":
            recorded = record(prepared, reply, partial)
    except Exception as exc:  # noqa: BLE001 - logged, and the exchange says "degraded"
        log.warning("Chat proxy: the turns were not recorded (%s)", exc.__class__.__name__)
        prepared.recording = "degraded"
    _log_exchange(prepared, recorded, upstream_status=200, partial=partial)
    return recorded


def answer_turn(reply: dict | None, partial: bool) -> msgs.Turn | None:
    if not reply:
        return None
    turn = msgs.as_turn({**reply, "role": "assistant"})
    if turn is None or not (turn.content or turn.tool_calls):
        return None
    return msgs.Turn(turn.role, turn.content, turn.tool_calls, None, partial)


def record(prepared: Prepared, reply: dict | None, partial: bool) -> list[int]:
    """The turns the session has not seen yet, then the answer; the ids of new turns.

    Each turn goes to the index it has in the conversation, so a resent history finds its
    turns already there (record_turn answers a repeat with the stored turn). When a message
    differs from the recorded one at its index, the conversation has parted from it: the
    rest goes to a fork (messages.fork_key), counted from the point where they parted."""
    turns = list(prepared.turns)
    if (answer := answer_turn(reply, partial)) is not None:
        turns.append(answer)
    key, offset, recorded = prepared.session_key, 0, []
    for _fork in range(MAX_FORKS):
        index = offset
        try:
            for index in range(offset, len(turns)):
                turn = turns[index]
                result = conv.record_turn(
                    key,
                    index - offset,
                    turn.role,
                    turn.content,
                    turn.tool_calls,
                    turn.tool_results,
                    agent_id=prepared.agent.pk,
                    source="turn",
                    partial=turn.partial,
                )
                if result.created:
                    recorded.append(result.turn.pk)
            break
        except conv.TurnConflict:
            key, offset = msgs.fork_key(key, turns[: index + 1]), index
    prepared.session_key = key
    return recorded


def _log_exchange(
    prepared: Prepared, recorded: list[int], *, upstream_status: int, partial: bool = False
) -> None:
    try:
        exchange = ProxyExchange.objects.create(
            uid=prepared.uid,
            agent=prepared.agent,
            session_key=prepared.session_key,
            model=str(prepared.body.get("model", ""))[:200],
            stream=prepared.stream,
            context=prepared.context,
            context_tokens=prepared.tokens,
            memory_status=prepared.status,
            recording=prepared.recording,
            recorded_turns=recorded,
            upstream_status=upstream_status,
            partial=partial,
            timings_ms=prepared.timings,
        )
        if exchange.pk % 100 == 0:  # keep the newest KEEP_EXCHANGES
            ProxyExchange.objects.filter(pk__lte=exchange.pk - KEEP_EXCHANGES).delete()
    except DatabaseError as exc:
        log.warning("Chat proxy: the exchange was not logged (%s)", exc.__class__.__name__)


# -- models --------------------------------------------------------------------------------------


def models(agent: ApiToken) -> dict:
    """The upstream's model list, plus the names the model mapping offers."""
    upstream = upstreams.for_agent(agent)
    if not upstream.configured:
        raise ProxyError(
            503,
            _("No upstream is configured for the chat proxy."),
            "upstream_not_configured",
            "server_error",
        )
    try:
        answer = call(upstream, "GET", "/models")
    except UpstreamDown as exc:
        raise ProxyError(502, exc.message, "upstream_unreachable", "upstream_error") from None
    raw = answer.read_all()
    listed = []
    if answer.status == 200:
        try:
            listed = [m for m in json.loads(raw).get("data", []) if isinstance(m, dict)]
        except (ValueError, AttributeError):
            listed = []
    names = {m.get("id") for m in listed}
    for alias in upstream.model_map:
        if alias not in names:
            listed.append({"id": alias, "object": "model", "owned_by": "memory-curator"})
    return {"object": "list", "data": listed}


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)
