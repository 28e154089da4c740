"""The agent API (django-ninja), mounted at /api/v1/. Only /health is public."""

from django.db import DatabaseError, connection
from django.http import Http404
from huey.contrib.djhuey import HUEY
from ninja import NinjaAPI, Schema
from ninja.errors import HttpError, ValidationError

from retrieval.indexing import vector_state

api = NinjaAPI(title="Memory Curator API", version="1", urls_namespace="api")


def error(request, detail, code: str, status: int):
    """Every API error has the same shape: {"detail": ..., "code": ...}."""
    return api.create_response(request, {"detail": detail, "code": code}, status=status)


@api.exception_handler(ValidationError)
def on_validation_error(request, exc: ValidationError):
    return error(request, exc.errors, "invalid", 422)


@api.exception_handler(HttpError)
def on_http_error(request, exc: HttpError):
    return error(
        request, str(exc), getattr(exc, "code", "") or f"http_{exc.status_code}", exc.status_code
    )


@api.exception_handler(Http404)
def on_not_found(request, exc):
    return error(request, "Not found.", "not_found", 404)


class Queue(Schema):
    pending: int


class Health(Schema):
    status: str
    db: str
    fts: str
    vector: str
    embedding_model: str
    queue: Queue


def _probe(sql: str) -> str:
    try:
        with connection.cursor() as cur:
            cur.execute(sql)
        return "ok"
    except DatabaseError:
        return "error"


def queue_pending() -> int:
    """Jobs waiting in the queue or its schedule: clients poll this until indexing caught up."""
    return HUEY.pending_count() + HUEY.scheduled_count()


@api.get("/health", response=Health, auth=None, summary="Liveness and index state")
def health(request):
    db = _probe("SELECT 1")
    fts = _probe("SELECT rowid FROM search_fts LIMIT 1")
    state = vector_state() if db == "ok" else None
    vector = "ok" if state and state.ok else "degraded"
    status = "ok" if db == fts == vector == "ok" else "degraded"
    return {
        "status": status,
        "db": db,
        "fts": fts,
        "vector": vector,
        "embedding_model": state.model if state else "",
        "queue": {"pending": queue_pending()},
    }
