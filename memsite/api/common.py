"""What every API router shares: bearer-token auth with scopes and rate limit, the error schema,
and small helpers (the owner, pagination bounds)."""

from django.utils.translation import gettext as _
from ninja import P, PathEx, Schema
from ninja.security import HttpBearer

from curator.models import Owner
from memsite.api.errors import ApiError
from memsite.api.ratelimit import limiter, rate_limit, retry_after
from memsite.core.tokens import find_token, touch

MAX_PAGE = 200
MAX_OFFSET = 1_000_000_000
# Ids beyond SQLite's 64-bit integers cannot exist; refusing them keeps them out of SQL.
Id = PathEx[int, P(ge=1, le=2**63 - 1)]


class TokenAuth(HttpBearer):
    """`Authorization: Bearer <token>`; write operations use the instance with write=True."""

    def __init__(self, write: bool = False):
        super().__init__()
        self.write = write

    def authenticate(self, request, token: str):
        found = find_token(token.strip())
        if found is None or found.revoked_at:
            raise ApiError(401, "invalid_token", _("This API token is not valid (or revoked)."))
        if found.state() == "expired":
            raise ApiError(401, "token_expired", _("This API token has expired."))
        wait = limiter.hit(found.pk, rate_limit())
        if wait:
            raise ApiError(
                429,
                "rate_limited",
                _("Too many requests with this token; retry in %(s)s s.")
                % {"s": retry_after(wait)},
                headers={"Retry-After": str(retry_after(wait))},
            )
        if self.write and not found.can_write:
            raise ApiError(
                403, "read_only_token", _("This token is read-only; this request writes.")
            )
        touch(found)
        return found


READ = TokenAuth()
WRITE = TokenAuth(write=True)


class ErrorOut(Schema):
    detail: str
    code: str
    fields: dict[str, str] | None = None


# Documented on every operation so clients (and the schema fuzz test) know the shape.
AUTH_ERRORS = {401: ErrorOut, 422: ErrorOut, 429: ErrorOut, 503: ErrorOut}
WRITE_ERRORS = {**AUTH_ERRORS, 403: ErrorOut, 413: ErrorOut}
# Operations that read a body: 400 invalid_json (or invalid_multipart for uploads).
BODY_ERRORS = {400: ErrorOut}


def owner() -> Owner:
    return Owner.default()


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", _("No %(what)s with this id.") % {"what": what})
