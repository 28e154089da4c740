"""One error shape for everything under /api/: {"detail", "code", "fields"?}.

Ninja's exception handlers (memsite/api.py) cover errors raised inside API operations; this
middleware covers what happens outside them: unknown /api/ paths and methods (Django's HTML
404/405), bodies too large to read, and any unexpected exception, so an agent never gets an
HTML page.
"""

import logging

from django.conf import settings
from django.core.exceptions import BadRequest, RequestDataTooBig, SuspiciousOperation
from django.db import OperationalError
from django.http import JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.utils.translation import gettext as _

log = logging.getLogger("memsite.api")

API_PREFIX = "/api/"
STATUS_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
    423: "paused",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}


class ApiError(Exception):
    """Raised by API code for any error an agent should see, with its stable code."""

    def __init__(self, status: int, code: str, detail: str, fields=None, headers=None):
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, str(detail)
        self.fields, self.headers = fields, headers or {}


def body(detail: str, code: str, fields: dict | None = None) -> dict:
    data = {"detail": str(detail), "code": code}
    if fields:
        data["fields"] = fields
    return data


def json_error(status: int, detail: str, code: str, fields=None, headers=None) -> JsonResponse:
    response = JsonResponse(body(detail, code, fields), status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def is_locked(exc: BaseException) -> bool:
    """SQLite's "database is locked" / "database table is locked": busy beyond busy_timeout."""
    return isinstance(exc, OperationalError) and "locked" in str(exc).lower()


def error_for_exception(exc: BaseException) -> ApiError:
    """What to tell the agent about an exception nobody handled."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return too_large(settings.API_MAX_BODY_BYTES)
    if isinstance(exc, MultiPartParserError):
        # No boundary, a part header over 1 KB, bad base64...: the client sent this body.
        return ApiError(
            400,
            "invalid_multipart",
            _("The multipart/form-data body cannot be read: %(reason)s") % {"reason": exc},
        )
    if isinstance(exc, SuspiciousOperation | BadRequest):
        # Too many fields or files, and the like: Django refuses them as 400 on pages too.
        return ApiError(
            400, "bad_request", _("The request was refused: %(reason)s") % {"reason": exc}
        )
    if is_locked(exc):
        return ApiError(
            503,
            "database_busy",
            _("The database is busy; retry shortly (the same request is safe to repeat)."),
            headers={"Retry-After": "1"},
        )
    log.error("Unhandled API error", exc_info=exc)
    return ApiError(500, "internal_error", _("Something went wrong on the server; it is logged."))


def too_large(limit: int) -> ApiError:
    return ApiError(
        413, "too_large", _("The request is larger than %(mb)s MB.") % {"mb": _mb(limit)}
    )


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):g}"


def body_limit(request) -> int:
    """Attachments may be as large as their own limit (plus the form around the file)."""
    if request.path_info.rstrip("/").endswith("/attachments") and request.method == "POST":
        return settings.API_ATTACHMENT_MAX_BYTES + 64 * 1024
    return settings.API_MAX_BODY_BYTES


class ApiErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith(API_PREFIX):
            return self.get_response(request)
        limit = body_limit(request)
        if _content_length(request) > limit:
            err = too_large(limit if limit == settings.API_MAX_BODY_BYTES else limit - 64 * 1024)
            return json_error(err.status, err.detail, err.code)
        response = self.get_response(request)
        if response.status_code >= 400 and not _is_json(response):
            return self._as_json(response)
        return response

    def process_exception(self, request, exception):
        if not request.path_info.startswith(API_PREFIX):
            return None
        err = error_for_exception(exception)
        return json_error(err.status, err.detail, err.code, err.fields, err.headers)

    @staticmethod
    def _as_json(response):
        status = response.status_code
        detail = {
            404: _("There is no such API endpoint; see /api/v1/docs."),
            405: _("This endpoint does not accept that method."),
        }.get(status, getattr(response, "reason_phrase", "") or _("Request failed."))
        converted = json_error(status, detail, STATUS_CODES.get(status, f"http_{status}"))
        if response.has_header("Allow"):
            converted["Allow"] = response["Allow"]
        return converted


def _content_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _is_json(response) -> bool:
    return response.get("Content-Type", "").startswith("application/json")
