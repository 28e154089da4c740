"""Recording and finding what was said and exchanged: turns, sessions, attachments, episodes.

The API calls these; so can any page or job. Raw turns are L0 (append-only): a turn is never
changed once recorded, and recording the same turn again is a no-op, which is what makes an
agent's retries safe.
"""

import json
import mimetypes
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone
from django.utils.translation import gettext as _

from curator import history_log, signals
from curator.guard import log as guard_log
from curator.guard import rules as guard
from curator.models import (
    Attachment,
    ConversationTurn,
    Direction,
    Episode,
    Owner,
    Session,
)
from curator.tokencount import estimate_tokens
from curator.writepath import clean_tags

# Files whose text is extracted on upload (searchable like a description).
TEXT_TYPES = ("text/plain", "text/markdown", "text/csv", "application/json")
MAX_EXTRACTED_CHARS = 100_000


class InvalidTurn(ValueError):
    """The turn cannot be stored as given: tool calls or results that are not strict JSON
    (NaN, Infinity), or text with an unpaired surrogate."""


class TurnConflict(Exception):
    """The same (session, turn_index) was recorded before with other content."""

    def __init__(self, turn: ConversationTurn):
        super().__init__(f"turn {turn.turn_index} of this session already holds other content")
        self.turn = turn


@dataclass
class TurnResult:
    turn: ConversationTurn
    created: bool


def aware(moment: datetime | None) -> datetime | None:
    if moment is not None and timezone.is_naive(moment):
        return timezone.make_aware(moment)
    return moment


# Raw SQL for the two lookups of every recorded turn: compiling their querysets cost more
# than running them (0.4-0.5 ms each, a third of the request).
_SESSION_BY_ID = f"SELECT * FROM {Session._meta.db_table} WHERE external_id = %s"
_TURN_BY_KEY = (
    f"SELECT t.* FROM {ConversationTurn._meta.db_table} t "
    f"JOIN {Session._meta.db_table} s ON s.id = t.session_id "
    "WHERE s.external_id = %s AND t.turn_index = %s"
)


def session_for(
    external_id: str, *, create: bool = False, started_at=None, agent_id: int | None = None
) -> Session | None:
    session = next(iter(Session.objects.raw(_SESSION_BY_ID, [external_id])), None)
    if session is not None or not create:
        return session
    session, _ = Session.objects.get_or_create(  # get_or_create: a concurrent first turn
        external_id=external_id,
        defaults={
            "owner": Owner.default(),
            "started_at": started_at or timezone.now(),
            "agent_id": agent_id,
        },
    )
    return session


def _same_turn(turn: ConversationTurn, role, content, tool_calls, tool_results) -> bool:
    return (turn.role, turn.content, turn.tool_calls, turn.tool_results) == (
        role,
        content,
        tool_calls,
        tool_results,
    )


def record_turn(
    session_id: str,
    turn_index: int,
    role: str,
    content: str,
    tool_calls=None,
    tool_results=None,
    timestamp: datetime | None = None,
    *,
    agent_id: int | None = None,
    source: str = "turn",
    partial: bool = False,
) -> TurnResult:
    """Store one turn (creating its session on first sight) and queue its indexing and extraction.

    The guardrails that redact transcripts mask their spans first, so the database, the
    search indexes and the JSONL backup only ever see the masked turn. The same turn again
    returns the stored one; other content under the same key raises TurnConflict, because
    raw turns are never rewritten. `agent_id` is the agent (API token) that sent it; `source` says
    where it came from in the Blocked log ("turn", "import"); `partial` marks an answer the
    client stopped reading before it ended (the chat proxy).
    """
    timestamp = aware(timestamp) or timezone.now()
    _check_storable(content, tool_calls, tool_results)
    redaction = guard.redact_turn(content, tool_calls, tool_results, agent=agent_id)
    content, tool_calls = redaction.content, redaction.tool_calls
    tool_results = redaction.tool_results
    # A retry is answered from a read, outside the write queue; a retry racing its original
    # ends in the IntegrityError branch below.
    if (turn := _stored_turn(session_id, turn_index)) is not None:
        return _repeat(turn, role, content, tool_calls, tool_results)
    try:
        with transaction.atomic():
            session = session_for(session_id, create=True, started_at=timestamp, agent_id=agent_id)
            turn = ConversationTurn.objects.create(
                session=session,
                agent_id=agent_id,
                turn_index=turn_index,
                role=role,
                content=content,
                tool_calls=tool_calls,
                tool_results=tool_results,
                timestamp=timestamp,
                partial=partial,
                token_estimate=estimate_tokens(_turn_text(content, tool_calls, tool_results)),
            )
            _reopen(session, timestamp)
            if redaction.hits:
                guard_log.record_redactions(turn, redaction.hits, source=source)
            signals.changed("turn", turn.pk)
            signals.recorded(turn.pk)
            history_log.append_after_commit(turn)  # JSONL backup (seed 003 4.5)
    except IntegrityError:
        # Another request stored this key between our read and write: answer like a retry.
        turn = _stored_turn(session_id, turn_index)
        if turn is None:  # not a race: a constraint refused the row itself
            raise
        return _repeat(turn, role, content, tool_calls, tool_results)
    return TurnResult(turn, True)


def _check_storable(content: str, tool_calls, tool_results) -> None:
    """SQLite keeps UTF-8 text and strict JSON; callers other than the API (MCP, imports) may
    pass Python values that are neither."""
    try:
        text = json.dumps([content, tool_calls, tool_results], allow_nan=False, ensure_ascii=False)
        text.encode()
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise InvalidTurn(str(exc)) from None


def _stored_turn(session_id: str, turn_index: int) -> ConversationTurn | None:
    return next(iter(ConversationTurn.objects.raw(_TURN_BY_KEY, [session_id, turn_index])), None)


def _repeat(turn: ConversationTurn, role, content, tool_calls, tool_results) -> TurnResult:
    """The same turn again is a retry (the stored one, not created); anything else a conflict."""
    if _same_turn(turn, role, content, tool_calls, tool_results):
        return TurnResult(turn, False)
    raise TurnConflict(turn)


def _turn_text(content, tool_calls, tool_results) -> str:
    extras = [json.dumps(x, ensure_ascii=False) for x in (tool_calls, tool_results) if x]
    return "\n".join([content, *extras])


def mark_ended(session: Session) -> None:
    """An agent ended the session: it shows as ended at once, while its episode is written
    by a job (a later turn reopens it, as any turn after the end does)."""
    if session.ended_at is None:
        session.ended_at = timezone.now()
        Session.objects.filter(pk=session.pk, ended_at__isnull=True).update(
            ended_at=session.ended_at
        )


def _reopen(session: Session, timestamp) -> None:
    """A turn after the session ended reopens it, so the next end covers the new turns too."""
    changed = []
    if session.ended_at is not None:
        session.ended_at = None
        changed.append("ended_at")
    if timestamp < session.started_at:
        session.started_at = timestamp
        changed.append("started_at")
    if changed:
        session.save(update_fields=changed)


# ----------------------------------------------------------------------------------------------
# Finding: level-2 traces, episodes, attachments
# ----------------------------------------------------------------------------------------------


def terms(q: str | None) -> list[str]:
    return [t for t in (q or "").split() if t]


def _text_match(fields: list[str], term: str) -> Q:
    """term in any field; JSON fields are matched on their stored text, ASCII-escaped or not."""
    escaped = json.dumps(term)[1:-1]
    query = Q()
    for name in fields:
        query |= Q(**{f"{name}__icontains": term})
        if escaped != term:
            query |= Q(**{f"{name}__icontains": escaped})
    return query


def search_traces(
    q: str = "",
    session_id: str | None = None,
    role: str | None = None,
    time_from: datetime | None = None,
    time_to: datetime | None = None,
    limit: int = 20,
):
    """Seed 001's second level: the raw turns, tool calls and results, newest first.

    Matching is literal (every word of q must appear, in the text or the tool calls/results),
    because an agent looks here for exact details: a file name, a command, an error message.
    """
    turns = trace_queryset(q, session_id, role, time_from, time_to)
    return list(turns[:limit])


# Newest first across every session: the unary + stops SQLite from reaching the turns through
# the owner's sessions, which made it sort all of them (40 ms for 50,000 turns), so it walks the
# timestamp index instead and stops once the page is full (1.4 ms).
_OWNED_BY_WALKING_TIME = (
    f"+{ConversationTurn._meta.db_table}.session_id IN "
    f"(SELECT id FROM {Session._meta.db_table} WHERE owner_id = %s)"
)


def trace_queryset(q="", session_id=None, role=None, time_from=None, time_to=None):
    """search_traces unsliced, so the trace search page can paginate the same matches."""
    owner = Owner.default()
    turns = ConversationTurn.objects.annotate(
        calls_text=Cast("tool_calls", TextField()), results_text=Cast("tool_results", TextField())
    )
    for term in terms(q):
        turns = turns.filter(_text_match(["content", "calls_text", "results_text"], term))
    if session_id:  # one session: its own index finds its turns
        turns = turns.filter(session__owner=owner, session__external_id=session_id)
    else:
        turns = turns.extra(where=[_OWNED_BY_WALKING_TIME], params=[owner.pk])
    if role:
        turns = turns.filter(role=role)
    if time_from:
        turns = turns.filter(timestamp__gte=aware(time_from))
    if time_to:
        turns = turns.filter(timestamp__lte=aware(time_to))
    return turns.select_related("session").order_by("-timestamp", "-id")


def find_episodes(q="", session_id=None, time_from=None, time_to=None):
    episodes = Episode.objects.filter(owner=Owner.default()).select_related("session")
    for term in terms(q):
        episodes = episodes.filter(_text_match(["summary", "goal"], term))
    if session_id:
        episodes = episodes.filter(session__external_id=session_id)
    if time_from:  # overlaps the window
        episodes = episodes.filter(ended_at__gte=aware(time_from))
    if time_to:
        episodes = episodes.filter(started_at__lte=aware(time_to))
    return episodes.order_by("-started_at", "-id")


class AttachmentRefused(Exception):
    """An upload that is not kept; `status` and `code` are what the API answers with."""

    status, code = 422, "invalid_attachment"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class TooLarge(AttachmentRefused):
    status, code = 413, "too_large"

    def __init__(self, limit: int):
        mb = f"{limit / (1024 * 1024):g}"
        super().__init__(_("Attachments may be at most %(mb)s MB.") % {"mb": mb})
        self.limit = limit


class UnsupportedType(AttachmentRefused):
    status, code = 415, "unsupported_type"

    def __init__(self, mime: str):
        super().__init__(
            _(
                "Files of type %(type)s cannot be kept. Images, audio, video, PDF, text, Markdown, "
                "JSON, CSV and office documents can."
            )
            % {"type": mime}
        )
        self.mime = mime


class EmptyFile(AttachmentRefused):
    status, code = 422, "empty_file"

    def __init__(self):
        super().__init__(_("The file is empty."))


@dataclass
class CheckedUpload:
    name: str  # the original name, path components stripped: kept as data only
    mime: str
    stored_name: str  # <uuid>.<ext>: the only name that reaches the disk


def check_upload(upload) -> CheckedUpload:
    """Refuse empty, too large and disallowed files (the page and the API share this)."""
    if not upload.size:
        raise EmptyFile()
    limit = settings.API_ATTACHMENT_MAX_BYTES
    if upload.size > limit:
        raise TooLarge(limit)
    name = safe_name(upload.name or "")
    mime = _mime(upload, name)
    if mime not in settings.ATTACHMENT_ALLOWED_TYPES:
        raise UnsupportedType(mime)
    return CheckedUpload(name, mime, f"{uuid.uuid4().hex}{_extension(name, mime)}")


def safe_name(raw: str) -> str:
    """'../../etc/passwd' -> 'passwd': the last path component, without control characters."""
    last = re.split(r"[/\\]", raw)[-1]
    cleaned = "".join(ch for ch in last if ch.isprintable()).strip().lstrip(".")
    return cleaned[:255] or "file"


def _extension(name: str, mime: str) -> str:
    """The name's extension only when it implies the allowed type; otherwise the type's own
    (x.php declared as image/png is stored as .png, never as .php)."""
    suffix = PurePosixPath(name).suffix.lower()
    if re.fullmatch(r"\.[a-z0-9]{1,10}", suffix) and mimetypes.guess_type(f"f{suffix}")[0] == mime:
        return suffix
    return mimetypes.guess_extension(mime) or ".bin"


def record_attachment(
    upload,
    direction: str = Direction.INBOUND,
    description: str = "",
    session_id: str = "",
    transcription: str = "",
    tags: list[str] | None = None,
) -> Attachment:
    """Keep a file under MEDIA_ROOT/YYYY/MM/<uuid>.<ext> with what makes it findable.

    Raises an AttachmentRefused subclass (size, type, empty file); text and Markdown files
    have their text extracted so their content is searchable.
    """
    checked = check_upload(upload)
    with transaction.atomic():
        session = session_for(session_id, create=True) if session_id else None
        attachment = Attachment(
            owner=Owner.default(),
            session=session,
            original_name=checked.name,
            mime_type=checked.mime,
            size=upload.size,
            direction=direction,
            description=description,
            transcription=transcription,
            tags=clean_tags(tags),
            extracted_text=_text_of(upload, checked.mime),
        )
        attachment.file.save(checked.stored_name, upload, save=False)
        try:
            attachment.save()
        except Exception:
            attachment.file.delete(save=False)  # no orphan file when the row is not written
            raise
        signals.changed("attachment", attachment.pk)
    return attachment


def _mime(upload, name: str) -> str:
    """The type the file name implies; the declared type only when the name says nothing."""
    guessed = mimetypes.guess_type(name)[0]
    if guessed:
        return guessed.lower()
    given = (getattr(upload, "content_type", "") or "").split(";")[0].strip().lower()
    return given[:100] or "application/octet-stream"


def _text_of(upload, mime: str) -> str:
    if mime not in TEXT_TYPES or upload.size > 4 * MAX_EXTRACTED_CHARS:
        return ""
    upload.seek(0)
    data = upload.read()
    upload.seek(0)
    for encoding in ("utf-8-sig", "gb18030"):  # Chinese text files are often GBK
        try:
            return data.decode(encoding)[:MAX_EXTRACTED_CHARS]
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace")[:MAX_EXTRACTED_CHARS]
