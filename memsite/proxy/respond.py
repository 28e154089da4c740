"""The HTTP answer to one chat request, for whoever authenticated it: the /llm/v1 endpoint
(an agent token) and the playground page (the logged-in person, as a chosen agent)."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse

from memsite.models import ApiToken
from memsite.proxy import engine
from memsite.proxy.engine import ProxyError


def openai_error(exc: ProxyError) -> JsonResponse:
    dumps = {"ensure_ascii": False}
    response = JsonResponse(exc.body(), status=exc.status, json_dumps_params=dumps)
    for name, value in exc.headers.items():
        response[name] = value
    return response


def chat(agent: ApiToken, raw: bytes, session_header: str = "") -> HttpResponse:
    """Read, add the memory, forward; the upstream's answer streamed or whole, with the
    X-Memory-* headers; every error in OpenAI's shape."""
    try:
        body = engine.parse(raw)
        prepared = engine.prepare(agent, body, session_header)
        answer = engine.forward(prepared)
        if answer.status >= 400:
            raise engine.upstream_error(prepared, answer)
    except ProxyError as exc:
        return openai_error(exc)
    if answer.content_type.startswith("text/event-stream"):
        response = StreamingHttpResponse(
            engine.stream(prepared, answer), content_type=answer.content_type
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # a reverse proxy in front must not hold events
    else:
        data, _recorded = engine.complete(prepared, answer)
        response = HttpResponse(data, content_type=answer.content_type, status=answer.status)
    for name, value in {**engine.passed_headers(answer), **prepared.headers()}.items():
        response[name] = value
    return response
