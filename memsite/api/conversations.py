"""API: conversation turns, session end, level-2 traces, episodes and attachments.

Recording a turn and ending a session are plain functions too (`record`, `end`), which the MCP
server calls. An agent limited to some memory scopes sees only its own sessions' turns,
episodes and attachments (memsite.api.common.ReadLimits).
"""

from datetime import datetime
from typing import Any, Literal

from django.http import FileResponse
from django.urls import register_converter, reverse
from django.utils.translation import gettext as _
from ninja import Field, File, Form, P, PathEx, Query, Router, Schema, Status
from ninja.files import UploadedFile

from curator import conversations as conv
from curator.models import Attachment, Episode
from curator.normalize import split_tags
from curator.writepath import WritePathError
from lifecycle import tasks
from memsite.api.common import (
    AUTH_ERRORS,
    BODY_ERRORS,
    MAX_OFFSET,
    MAX_PAGE,
    WRITE,
    WRITE_ERRORS,
    ErrorOut,
    Id,
    not_found,
    owner,
    read_limits,
)
from memsite.api.errors import ApiError
from memsite.api.types import BodyIn, Moment, RangeEnd, RangeStart
from memsite.models import ApiToken
from retrieval.lookup import find_attachments

router = Router()
RoleName = Literal["user", "assistant", "system", "tool"]


class AnyTextConverter:
    """A path segment that may hold anything, "/" and line breaks included: a session id is
    whatever the agent recorded, and every recorded id must be usable in the path."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(AnyTextConverter, "anytext")
SESSION_ID_DOC = (
    "The agent's session id: any text of 1 to 200 characters, `/` included. In a path "
    "(`/sessions/{session_id}/end`) send it percent-encoded, e.g. `a/b` as `a%2Fb`."
)
JsonValue = list[Any] | dict[str, Any] | None


# -- turns and sessions ------------------------------------------------------------------------


class TurnIn(BodyIn):
    session_id: str = Field(min_length=1, max_length=200, description=SESSION_ID_DOC)
    turn_index: int = Field(ge=0, le=2_000_000_000, description="Position in the session.")
    role: RoleName
    content: str = Field("", max_length=500_000)
    tool_calls: JsonValue = None
    tool_results: JsonValue = None
    timestamp: Moment = Field(
        None, description="When it was said (default: now); without an offset: server time zone."
    )


class TurnOut(Schema):
    id: int
    session_id: str
    turn_index: int


@router.post(
    "/turns",
    auth=WRITE,
    response={201: TurnOut, 200: TurnOut, 409: ErrorOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Record one conversation turn (retry-safe)",
    tags=["conversations"],
)
def record_turn(request, payload: TurnIn):
    """201 for a new turn, 200 with the same id when the identical turn was recorded before,
    409 when (session_id, turn_index) already holds other content. Extraction is queued.
    Guardrails that redact transcripts mask their spans before the turn is stored."""
    status, body = record(request.auth, payload)
    return Status(status, body)


def record(agent: ApiToken, payload: TurnIn) -> tuple[int, dict]:
    """(201 new or 200 retry, the turn); the caller checked that the agent may write."""
    try:
        result = conv.record_turn(**payload.dict(), agent_id=agent.pk)
    except conv.TurnConflict as exc:
        raise ApiError(
            409,
            "turn_conflict",
            _("Turn %(n)s of session %(s)s was already recorded with other content (id %(id)s).")
            % {"n": payload.turn_index, "s": payload.session_id, "id": exc.turn.pk},
        ) from None
    except conv.InvalidTurn as exc:
        raise ApiError(
            422, "invalid", _("The turn cannot be stored: %(reason)s.") % {"reason": exc}
        ) from None
    body = {
        "id": result.turn.pk,
        "session_id": payload.session_id,
        "turn_index": payload.turn_index,
    }
    return 201 if result.created else 200, body


class JobOut(Schema):
    job_id: str


@router.post(
    "/sessions/{anytext:session_id}/end",
    auth=WRITE,
    response={202: JobOut, 404: ErrorOut, **WRITE_ERRORS},
    summary="End a session: episode, scratchpad, pending extraction (queued)",
    tags=["conversations"],
)
def end_session(request, session_id: PathEx[str, P(description=SESSION_ID_DOC)]):
    """Every id POST /turns recorded can be ended here, `/` included (percent-encoded)."""
    return Status(202, end(request.auth, session_id))


def end(agent: ApiToken, session_id: str) -> dict:
    """Queue the end of a session this agent may see (404 otherwise)."""
    session = conv.session_for(session_id)
    if session is None or not read_limits(agent).session_visible(session.pk):
        raise not_found(_("session"))
    conv.mark_ended(session)
    result = tasks.end_session(session.pk)  # the Huey result: its id is the job's
    return {"job_id": str(result.id)}


# -- traces ------------------------------------------------------------------------------------


class TraceFilters(Schema):
    q: str = Field("", max_length=500, description="Words that must all appear (literal).")
    session_id: str | None = None
    role: RoleName | None = None
    time_from: RangeStart = None
    time_to: RangeEnd = None
    limit: int = Field(20, ge=1, le=MAX_PAGE)


class TraceOut(Schema):
    id: int
    session_id: str
    turn_index: int
    role: str
    content: str
    tool_calls: JsonValue
    tool_results: JsonValue
    timestamp: datetime


class TracesOut(Schema):
    items: list[TraceOut]


def trace_dict(turn) -> dict:
    return {
        "id": turn.pk,
        "session_id": turn.session.external_id,
        "turn_index": turn.turn_index,
        "role": turn.role,
        "content": turn.content,
        "tool_calls": turn.tool_calls,
        "tool_results": turn.tool_results,
        "timestamp": turn.timestamp,
    }


@router.get(
    "/traces",
    response={200: TracesOut, **AUTH_ERRORS},
    summary="Search raw turns with their tool calls and results (level 2)",
    tags=["conversations"],
)
def traces(request, filters: Query[TraceFilters]):
    limits = read_limits(request.auth)
    if limits.sessions is None:
        turns = conv.search_traces(**filters.dict())
    else:
        found = conv.trace_queryset(
            filters.q, filters.session_id, filters.role, filters.time_from, filters.time_to
        )
        turns = found.filter(session_id__in=limits.sessions)[: filters.limit]
    return {"items": [trace_dict(t) for t in turns]}


# -- episodes ----------------------------------------------------------------------------------


class EpisodeFilters(Schema):
    q: str = Field("", max_length=500)
    session_id: str | None = None
    time_from: RangeStart = None
    time_to: RangeEnd = None
    limit: int = Field(50, ge=1, le=MAX_PAGE)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


class EpisodeOut(Schema):
    id: int
    session_id: str | None
    summary: str
    goal: str
    outcome: str
    started_at: datetime
    ended_at: datetime
    action_nodes: list[Any]
    entities: list[Any]
    tools_used: list[Any]
    tags: list[Any]
    importance: float
    source: str
    linked_fact_ids: list[int]


class EpisodesOut(Schema):
    items: list[EpisodeOut]
    count: int


def episode_dict(ep: Episode) -> dict:
    return {
        "id": ep.pk,
        "session_id": ep.session.external_id if ep.session else None,
        "summary": ep.summary,
        "goal": ep.goal,
        "outcome": ep.outcome,
        "started_at": ep.started_at,
        "ended_at": ep.ended_at,
        "action_nodes": ep.action_nodes or [],
        "entities": ep.entities or [],
        "tools_used": ep.tools_used or [],
        "tags": ep.tags or [],
        "importance": ep.importance,
        "source": ep.source,
        "linked_fact_ids": [f.pk for f in ep.linked_facts.all()],
    }


@router.get(
    "/episodes",
    response={200: EpisodesOut, **AUTH_ERRORS},
    summary="Episodes (what happened in past sessions)",
    tags=["conversations"],
)
def episodes(request, filters: Query[EpisodeFilters]):
    found = conv.find_episodes(filters.q, filters.session_id, filters.time_from, filters.time_to)
    found = _visible(found, request.auth)
    page = found.prefetch_related("linked_facts")[filters.offset : filters.offset + filters.limit]
    return {"items": [episode_dict(e) for e in page], "count": found.count()}


@router.get(
    "/episodes/{episode_id}",
    response={200: EpisodeOut, 404: ErrorOut, **AUTH_ERRORS},
    summary="One episode",
    tags=["conversations"],
)
def episode(request, episode_id: Id):
    found = _visible(conv.find_episodes(), request.auth).filter(pk=episode_id).first()
    if found is None:
        raise not_found(_("episode"))
    return episode_dict(found)


def _visible(items, agent: ApiToken | None):
    """Episodes or attachments of the sessions this agent may see."""
    limits = read_limits(agent)
    return items if limits.sessions is None else items.filter(session_id__in=limits.sessions)


# -- attachments -------------------------------------------------------------------------------


class AttachmentOut(Schema):
    id: int
    name: str
    mime_type: str
    size: int
    direction: str
    description: str
    transcription: str
    session_id: str | None
    tags: list[Any]
    created_at: datetime
    file_url: str | None


class AttachmentsOut(Schema):
    items: list[AttachmentOut]
    count: int


class AttachmentFilters(Schema):
    q: str = Field("", max_length=500)
    session_id: str | None = None
    direction: Literal["inbound", "outbound"] | None = None
    limit: int = Field(50, ge=1, le=MAX_PAGE)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


def attachment_dict(att: Attachment) -> dict:
    url = reverse("api:attachment_file", args=[att.pk]) if att.file else None
    return {
        "id": att.pk,
        "name": att.original_name,
        "mime_type": att.mime_type,
        "size": att.size,
        "direction": att.direction,
        "description": att.description,
        "transcription": att.transcription,
        "session_id": att.session.external_id if att.session else None,
        "tags": att.tags or [],
        "created_at": att.created_at,
        "file_url": url,
    }


@router.post(
    "/attachments",
    auth=WRITE,
    response={201: AttachmentOut, 415: ErrorOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Record a file the person and the agent exchanged (multipart)",
    tags=["attachments"],
)
def create_attachment(
    request,
    file: File[UploadedFile],
    direction: Form[Literal["inbound", "outbound"]] = "inbound",
    description: Form[str] = "",
    session_id: Form[str] = "",
    transcription: Form[str] = "",
    tags: Form[str] = "",  # comma-separated
):
    """413 too_large, 415 unsupported_type (see ATTACHMENT_ALLOWED_TYPES), 422 empty_file.
    The file name is kept as data only; the file is stored under a generated name."""
    if len(session_id) > 200:
        raise ApiError(422, "invalid", _("session_id is too long."), {"session_id": "too long"})
    try:
        att = conv.record_attachment(
            file, direction, description, session_id, transcription, split_tags(tags)
        )
    except conv.AttachmentRefused as exc:
        raise ApiError(exc.status, exc.code, exc.message) from None
    except WritePathError as exc:
        raise ApiError(
            422, exc.code, str(exc), {exc.field: str(exc)} if exc.field else None
        ) from None
    return Status(201, attachment_dict(att))


@router.get(
    "/attachments",
    response={200: AttachmentsOut, **AUTH_ERRORS},
    summary="Find attachments by name, description or text",
    tags=["attachments"],
)
def attachments(request, filters: Query[AttachmentFilters]):
    found = find_attachments(owner(), filters.q, filters.direction or "").items
    found = _visible(found, request.auth)
    if filters.session_id:
        found = found.filter(session__external_id=filters.session_id)
    page = found[filters.offset : filters.offset + filters.limit]
    return {"items": [attachment_dict(a) for a in page], "count": found.count()}


def _attachment(attachment_id: int, agent: ApiToken | None = None) -> Attachment:
    found = _visible(find_attachments(owner()).items, agent).filter(pk=attachment_id).first()
    if found is None:
        raise not_found(_("attachment"))
    return found


@router.get(
    "/attachments/{attachment_id}",
    response={200: AttachmentOut, 404: ErrorOut, **AUTH_ERRORS},
    summary="One attachment's details",
    tags=["attachments"],
)
def attachment(request, attachment_id: Id):
    return attachment_dict(_attachment(attachment_id, request.auth))


@router.get(
    "/attachments/{attachment_id}/file",
    response={200: None, 404: ErrorOut, **AUTH_ERRORS},
    url_name="attachment_file",
    summary="Download the file",
    tags=["attachments"],
)
def attachment_file(request, attachment_id: Id):
    att = _attachment(attachment_id, request.auth)
    if not att.file:
        raise ApiError(404, "no_file", _("This attachment has no stored file."))
    try:
        handle = att.file.open("rb")
    except FileNotFoundError:
        raise ApiError(404, "no_file", _("The stored file is missing.")) from None
    return FileResponse(
        handle, as_attachment=True, filename=att.original_name, content_type=att.mime_type
    )
