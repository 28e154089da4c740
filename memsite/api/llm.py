"""The OpenAI-compatible chat proxy's endpoints: POST /llm/v1/chat/completions and
GET /llm/v1/models (the work is memsite.proxy.engine's; docs/proxy.md).

A client's base URL is http://127.0.0.1:8000/llm/v1 and its API key an agent token. Every
error here has OpenAI's shape, {"error": {"message", "type", "param", "code"}}, because that
is what chat clients know how to show.
"""

from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt

from memsite.api.common import agent_for_token
from memsite.api.errors import ApiError
from memsite.models import ApiToken
from memsite.proxy import engine, respond
from memsite.proxy.engine import ProxyError
from memsite.proxy.respond import openai_error


def authenticate(request: HttpRequest) -> ApiToken:
    """The agent whose token is the API key; 401 invalid_api_key (missing, wrong, revoked,
    expired) or 429, in OpenAI's shape."""
    header = request.headers.get("Authorization", "")
    if header[:7].lower() != "bearer " or not header[7:].strip():
        raise ProxyError(
            401,
            _("Send an agent token as the API key (Authorization: Bearer <token>)."),
            "invalid_api_key",
            headers={"WWW-Authenticate": "Bearer"},
        )
    try:
        return agent_for_token(header[7:])
    except ApiError as exc:
        if exc.status == 429:
            raise ProxyError(
                429, exc.detail, "rate_limit_exceeded", "requests", headers=exc.headers
            ) from None
        raise ProxyError(401, exc.detail, "invalid_api_key") from None
    except DatabaseError:
        raise ProxyError(
            503,
            _("The curator's database is busy; retry shortly."),
            "database_busy",
            "server_error",
            headers={"Retry-After": "1"},
        ) from None


def _read_body(request: HttpRequest) -> bytes:
    limit = settings.PROXY_MAX_BODY_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    raw = b"" if declared > limit else request.read(limit + 1)
    if declared > limit or len(raw) > limit:
        raise ProxyError(
            413,
            _("The request is larger than %(mb)g MB.") % {"mb": limit / (1024 * 1024)},
            "request_too_large",
        )
    return raw


def _method_not_allowed(allowed: str) -> JsonResponse:
    response = openai_error(
        ProxyError(
            405, _("This endpoint accepts %(m)s only.") % {"m": allowed}, "method_not_allowed"
        )
    )
    response["Allow"] = allowed
    return response


def cors(view):
    """Browser-based clients (Chatbox on the web, LobeChat in client mode, Electron apps) call
    the proxy from another origin. Any origin may, because nothing here rides on cookies:
    every request carries its own token. The X-Memory-* headers are readable by them."""

    @wraps(view)
    def wrapper(request: HttpRequest) -> HttpResponse:
        if request.method == "OPTIONS":
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response["Access-Control-Allow-Headers"] = request.headers.get(
                "Access-Control-Request-Headers", "Authorization, Content-Type, X-Memory-Session"
            )
            response["Access-Control-Max-Age"] = "600"
        else:
            response = view(request)
        response["Access-Control-Allow-Origin"] = "*"
        response["Access-Control-Expose-Headers"] = EXPOSED
        return response

    return wrapper


EXPOSED = ", ".join(
    [
        "X-Memory-Status",
        "X-Memory-Context-Tokens",
        "X-Memory-Recall-Id",
        "X-Memory-Recording",
        "X-Memory-Session",
    ]
)


@csrf_exempt
@login_not_required
@cors
def chat_completions(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _method_not_allowed("POST")
    try:
        agent = authenticate(request)
        raw = _read_body(request)
    except ProxyError as exc:
        return openai_error(exc)
    return respond.chat(agent, raw, request.headers.get("X-Memory-Session", ""))


@csrf_exempt
@login_not_required
@cors
def models(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        return _method_not_allowed("GET")
    try:
        agent = authenticate(request)
        return JsonResponse(engine.models(agent))
    except ProxyError as exc:
        return openai_error(exc)
