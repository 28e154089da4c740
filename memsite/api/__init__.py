"""The agent API (django-ninja), mounted at /api/v1/. Only /health is public.

Every error has one shape, {"detail", "code", "fields"?}; the handlers below produce it for
errors inside operations, memsite.api.errors.ApiErrorMiddleware for everything else under /api/.
The docs page renders Swagger UI from ninja's bundled static files (never a CDN) and asks for a
login or a token, like the schema it shows.
"""

import json
from datetime import datetime
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, connection
from django.http import Http404
from django.utils.translation import gettext as _
from ninja import Field, NinjaAPI, Schema, Swagger
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder

from lifecycle.backup import nightly
from lifecycle.extraction import model as extraction_model
from memsite.api.common import READ
from memsite.api.errors import ApiError, error_for_exception, json_error
from memsite.core import strictjson
from memsite.core.queue import queue_pending
from memsite.core.tokens import find_token
from retrieval.indexing import vector_state
from retrieval.probe import vector_table_problem


def docs_access(view):
    """The schema and docs are for a logged-in person or a client holding a valid token."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        header = request.headers.get("Authorization", "")
        if header[:7].lower() == "bearer ":
            token = find_token(header[7:].strip())
            if token and token.state() == "active":
                return view(request, *args, **kwargs)
            return json_error(401, _("This API token is not valid."), "invalid_token")
        if request.path_info.rstrip("/").endswith("/docs"):
            return redirect_to_login(request.get_full_path())
        return json_error(
            401, _("Log in or send Authorization: Bearer <token>."), "not_authenticated"
        )

    return wrapper


class ExactEncoder(NinjaJSONEncoder):
    """Full-precision ISO 8601 times: clients send updated_at back as expected_updated_at,
    which must compare equal (Django's encoder would cut it to milliseconds)."""

    def default(self, o):
        if isinstance(o, datetime):
            return o.isoformat()
        return super().default(o)


class Renderer(JSONRenderer):
    encoder_class = ExactEncoder
    json_dumps_params = {"ensure_ascii": False}


class StrictParser(Parser):
    """Bodies are strict JSON: NaN, Infinity or an unpaired surrogate is a 400 (invalid_json)
    naming the problem, never a value that fails later when it is stored."""

    def parse_body(self, request):
        return strictjson.loads(request.body)


class CuratorApi(NinjaAPI):
    """Builds the OpenAPI schema once per path prefix. Building it walks every operation's
    pydantic models (about 200 ms), and the operations never change after start-up, so a
    client polling /openapi.json or a few people opening /docs would each cost that again.
    Callers get the shared dict and must not change it (ninja only serializes it)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._schemas = {}

    def get_openapi_operation_id(self, operation) -> str:
        """The operation's function name (`record_turn`, `search`): what generated clients
        call their methods, instead of ninja's `memsite_api_conversations_record_turn`.
        Names are unique across the routers (tests/test_api_docs.py holds that)."""
        return operation.view_func.__name__

    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        if path_prefix is None:
            path_prefix = self.get_root_path(path_params or {})
        if path_prefix not in self._schemas:
            self._schemas[path_prefix] = super().get_openapi_schema(path_prefix=path_prefix)
        return self._schemas[path_prefix]


api = CuratorApi(
    title="Memory Curator API",
    version="1",
    description=(
        "Agents record conversation turns, propose memories, and read back search results "
        "and an assembled context. Authenticate with `Authorization: Bearer <token>` "
        "(create tokens on the Settings page or with `manage.py api_token create`)."
    ),
    urls_namespace="api",
    auth=READ,
    renderer=Renderer(),
    parser=StrictParser(),
    # validatorUrl: Swagger UI would otherwise fetch a badge from the internet.
    docs=Swagger(settings={"validatorUrl": None, "persistAuthorization": True}),
    docs_decorator=docs_access,
)


def error(request, detail, code: str, status: int, fields=None, headers=None):
    """Every API error has the same shape: {"detail": ..., "code": ..., "fields"?: ...}."""
    return json_error(status, detail, code, fields, headers)


@api.exception_handler(ApiError)
def on_api_error(request, exc: ApiError):
    return error(request, exc.detail, exc.code, exc.status, exc.fields, exc.headers)


def _field_name(loc) -> str:
    """("body", "payload", "content") -> "content"; ("query", "limit") -> "limit";
    ("body", "payload") -> "body" (the body as a whole, e.g. a list where an object belongs)."""
    parts = [str(p) for p in loc]
    source, rest = parts[0] if parts else "", parts[1:]
    if source == "body" and len(rest) == 1:
        rest = []
    if source in ("body", "form", "file") and len(rest) > 1:
        rest = rest[1:]  # the handler's parameter name says nothing to the client
    return ".".join(rest) or source or "body"


@api.exception_handler(ValidationError)
def on_validation_error(request, exc: ValidationError):
    fields: dict[str, str] = {}
    for err in exc.errors:
        fields.setdefault(_field_name(err.get("loc", ())), str(err.get("msg", "invalid")))
    listing = "; ".join(f"{name}: {msg}" for name, msg in fields.items())
    return error(
        request, _("Invalid input (%(fields)s).") % {"fields": listing}, "invalid", 422, fields
    )


@api.exception_handler(AuthenticationError)
def on_authentication_error(request, exc):
    return error(
        request,
        _("Send an API token: Authorization: Bearer <token>."),
        "not_authenticated",
        401,
        headers={"WWW-Authenticate": "Bearer"},
    )


@api.exception_handler(HttpError)
def on_http_error(request, exc: HttpError):
    if exc.status_code == 400 and str(exc).startswith("Cannot parse request body"):
        return error(request, _not_json(exc.__cause__), "invalid_json", 400)
    code = getattr(exc, "code", "") or f"http_{exc.status_code}"
    return error(request, str(exc), code, exc.status_code)


def _not_json(cause) -> str:
    if isinstance(cause, json.JSONDecodeError):
        where = {"error": cause.msg, "line": cause.lineno, "col": cause.colno}
        return (
            _("The request body is not valid JSON: %(error)s (line %(line)d, column %(col)d).")
            % where
        )
    return _("The request body is not valid JSON.")


@api.exception_handler(Http404)
def on_not_found(request, exc):
    return error(request, _("Not found."), "not_found", 404)


@api.exception_handler(RequestDataTooBig)
@api.exception_handler(Exception)
def on_exception(request, exc):
    err = error_for_exception(exc)
    return error(request, err.detail, err.code, err.status, err.fields, err.headers)


class Queue(Schema):
    pending: int


class BackupState(Schema):
    state: str = Field(
        description="ok; stale (the last good backup is over two days old, or there is none "
        "and the install is older than that); failed (the last backup failed its check); "
        "none (not made yet); off (MEMSITE_BACKUPS=0)"
    )
    last_good_at: datetime | None = Field(None, description="When the last good backup was made.")


class Health(Schema):
    status: str
    db: str
    fts: str
    vector: str
    embedding_model: str
    extractor: str = Field(
        description='"learned": the rules and the learned model extract '
        'offline; "rules": its weights file is missing or damaged.'
    )
    queue: Queue
    backup: BackupState
    degraded_reason: str | None = Field(None, description="What is wrong, when status is not ok.")


def _probe(sql: str) -> str | None:
    """None when the query runs, else the database's error."""
    try:
        with connection.cursor() as cur:
            cur.execute(sql)
        return None
    except DatabaseError as exc:
        return str(exc)


def _vector_problem() -> tuple[str, str | None]:
    """(embedding model, what is wrong with vectors or None): the configured model must match
    the stored vectors, and the vector table must answer a real query."""
    state = vector_state()
    if not state.ok:
        return state.model, state.reason
    return state.model, vector_table_problem()


def _backup_state() -> dict:
    try:
        found = nightly.status()
    except DatabaseError as exc:
        return {"state": "none", "last_good_at": None, "problem": str(exc)}
    good = found.last_good.created_at if found.last_good else None
    if found.state == "failed":
        problem = _("the last backup failed its check: %(error)s") % {"error": found.last.error}
    else:
        problem = _("no good backup for more than two days")
    return {"state": found.state, "last_good_at": good, "problem": problem}


@api.get("/health", response=Health, auth=None, summary="Liveness and index state", tags=["health"])
def health(request):
    problems = {"db": _probe("SELECT 1")}
    problems["fts"] = _probe("SELECT rowid FROM search_fts LIMIT 1")
    model = ""
    if problems["db"] is None:
        model, problems["vector"] = _vector_problem()
    else:
        problems["vector"] = _("the database is not available")
    backup = _backup_state()
    if backup["state"] in ("failed", "stale"):
        problems["backup"] = backup["problem"]
    problems["extractor"] = extraction_model.problem()
    reasons = [f"{part}: {problem}" for part, problem in problems.items() if problem]
    return {
        "backup": backup,
        "status": "degraded" if reasons else "ok",
        "db": "error" if problems["db"] else "ok",
        "fts": "error" if problems["fts"] else "ok",
        "vector": "degraded" if problems["vector"] else "ok",
        "embedding_model": model,
        "extractor": "rules" if problems["extractor"] else "learned",
        "queue": {"pending": queue_pending()},
        "degraded_reason": "; ".join(reasons) or None,
    }


# The routers live beside this file, one per area; imported last because they use `api`-free
# helpers only (memsite.api.common), so there is no import cycle.
from memsite.api.calibration import router as calibration_router  # noqa: E402
from memsite.api.contradictions import router as contradictions_router  # noqa: E402
from memsite.api.conversations import router as conversations_router  # noqa: E402
from memsite.api.memories import router as memories_router  # noqa: E402
from memsite.api.profile import router as profile_router  # noqa: E402
from memsite.api.recalls import router as recalls_router  # noqa: E402
from memsite.api.retrieval import router as retrieval_router  # noqa: E402
from memsite.api.rules import router as rules_router  # noqa: E402

api.add_router("", conversations_router)
api.add_router("", memories_router)
api.add_router("", retrieval_router)
api.add_router("", profile_router)
api.add_router("", rules_router)
api.add_router("", recalls_router)
api.add_router("", contradictions_router)
api.add_router("", calibration_router)
