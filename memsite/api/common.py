"""What every API router (and the MCP server) shares: bearer-token auth with the rate limit,
what an agent may do (pauses, scope limits: memsite.core.agents), the error schema, and small
helpers (the owner, pagination bounds)."""

from collections.abc import Iterable
from dataclasses import dataclass

from django.utils.translation import gettext as _
from ninja import P, PathEx, Schema
from ninja.security import HttpBearer

from curator.models import Owner, Session
from memsite.api.errors import ApiError
from memsite.api.ratelimit import limiter, rate_limit, retry_after
from memsite.core import agents
from memsite.core.tokens import find_token, touch
from memsite.models import ApiToken

MAX_PAGE = 200
MAX_OFFSET = 1_000_000_000
# Ids beyond SQLite's 64-bit integers cannot exist; refusing them keeps them out of SQL.
Id = PathEx[int, P(ge=1, le=2**63 - 1)]


def agent_for_token(raw: str) -> ApiToken:
    """The agent a bearer token belongs to, or an ApiError: 401 (unknown, revoked, expired)
    or 429 (over its rate limit). The JSON API and the MCP server both start here."""
    found = find_token(raw.strip())
    if found is None or found.revoked_at:
        raise ApiError(401, "invalid_token", _("This API token is not valid (or revoked)."))
    if found.state() == "expired":
        raise ApiError(401, "token_expired", _("This API token has expired."))
    wait = limiter.hit(found.pk, rate_limit())
    if wait:
        raise ApiError(
            429,
            "rate_limited",
            _("Too many requests with this token; retry in %(s)s s.") % {"s": retry_after(wait)},
            headers={"Retry-After": str(retry_after(wait))},
        )
    touch(found)
    return found


def refused(exc: agents.AgentRefused) -> ApiError:
    return ApiError(exc.status, exc.code, exc.detail)


def require_read(agent: ApiToken) -> None:
    """423 agent_paused when the person paused this agent's reads."""
    try:
        agents.check_read(agent)
    except agents.AgentRefused as exc:
        raise refused(exc) from None


def require_write(agent: ApiToken, scopes: Iterable[str] = ()) -> None:
    """Before anything is stored: 403 read_only_token, 423 memory_paused / agent_paused,
    403 scope_not_allowed for a memory scope this agent may not write."""
    if not agent.can_write:
        raise ApiError(403, "read_only_token", _("This token is read-only; this request writes."))
    try:
        agents.check_write(agent, scopes)
    except agents.AgentRefused as exc:
        raise refused(exc) from None


def require_scopes(agent: ApiToken, scopes: Iterable[str]) -> None:
    """403 scope_not_allowed (once require_write has passed, for the scopes in the body)."""
    try:
        agents.check_scopes(agent, scopes)
    except agents.AgentRefused as exc:
        raise refused(exc) from None


@dataclass(frozen=True)
class ReadLimits:
    """What an agent may see: fact scopes, and the sessions whose turns, episodes and
    attachments it may see. None means no limit. An agent limited to some scopes sees only
    its own conversations, which carry no scope of their own."""

    scopes: frozenset[str] | None = None
    sessions: frozenset[int] | None = None

    def fact_visible(self, scope: str) -> bool:
        return self.scopes is None or scope in self.scopes

    def session_visible(self, session_id: int | None) -> bool:
        return self.sessions is None or session_id in self.sessions


def read_limits(agent: ApiToken | None) -> ReadLimits:
    scopes = agents.readable_scopes(agent)
    if scopes is None:
        return ReadLimits()
    own = Session.objects.filter(agent=agent).values_list("pk", flat=True)
    return ReadLimits(scopes, frozenset(own))


class TokenAuth(HttpBearer):
    """`Authorization: Bearer <token>`; write operations use the instance with write=True."""

    def __init__(self, write: bool = False):
        super().__init__()
        self.write = write

    def authenticate(self, request, token: str):
        agent = agent_for_token(token)
        if self.write:
            require_write(agent)
        else:
            require_read(agent)
        return agent


READ = TokenAuth()
WRITE = TokenAuth(write=True)


class ErrorOut(Schema):
    detail: str
    code: str
    fields: dict[str, str] | None = None


# Documented on every operation so clients (and the schema fuzz test) know the shape.
AUTH_ERRORS = {401: ErrorOut, 422: ErrorOut, 423: ErrorOut, 429: ErrorOut, 503: ErrorOut}
WRITE_ERRORS = {**AUTH_ERRORS, 403: ErrorOut, 413: ErrorOut}
# Operations that read a body: 400 invalid_json (or invalid_multipart for uploads).
BODY_ERRORS = {400: ErrorOut}


def owner() -> Owner:
    return Owner.default()


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", _("No %(what)s with this id.") % {"what": what})
