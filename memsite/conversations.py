"""Recording and finding what was said and exchanged: turns, sessions, attachments, episodes.

The API calls these; so can any page or job. Raw turns are L0 (append-only): a turn is never
changed once recorded, and recording the same turn again is a no-op, which is what makes an
agent's retries safe.
"""

import json
import mimetypes
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from curator.models import Attachment, ConversationTurn, Direction, Episode, Owner, Session
from retrieval import indexing

TEXT_TYPES = ("text/", "application/json", "application/xml", "application/x-yaml")
MAX_EXTRACTED_CHARS = 100_000


class TurnConflict(Exception):
    """The same (session, turn_index) was recorded before with other content."""

    def __init__(self, turn: ConversationTurn):
        super().__init__(f"turn {turn.turn_index} of this session already holds other content")
        self.turn = turn


@dataclass
class TurnResult:
    turn: ConversationTurn
    created: bool


def estimate_tokens(text: str) -> int:
    """Offline estimate (tiktoken downloads its encodings): 1 per CJK char, 1 per 4 others."""
    cjk = sum(1 for ch in text if "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")
    return cjk + -(-(len(text) - cjk) // 4)


def aware(moment: datetime | None) -> datetime | None:
    if moment is not None and timezone.is_naive(moment):
        return timezone.make_aware(moment)
    return moment


def session_for(external_id: str, *, create: bool = False, started_at=None) -> Session | None:
    session = Session.objects.filter(external_id=external_id).first()
    if session is not None or not create:
        return session
    session, _ = Session.objects.get_or_create(  # get_or_create: a concurrent first turn
        external_id=external_id,
        defaults={"owner": Owner.default(), "started_at": started_at or timezone.now()},
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
) -> TurnResult:
    """Store one turn (creating its session on first sight) and queue its indexing and extraction.

    The same turn again returns the stored one; other content under the same key raises
    TurnConflict, because raw turns are never rewritten.
    """
    timestamp = aware(timestamp) or timezone.now()
    try:
        with transaction.atomic():
            session = session_for(session_id, create=True, started_at=timestamp)
            existing = ConversationTurn.objects.filter(session=session, turn_index=turn_index)
            if (turn := existing.first()) is not None:
                if _same_turn(turn, role, content, tool_calls, tool_results):
                    return TurnResult(turn, False)
                raise TurnConflict(turn)
            turn = ConversationTurn.objects.create(
                session=session,
                turn_index=turn_index,
                role=role,
                content=content,
                tool_calls=tool_calls,
                tool_results=tool_results,
                timestamp=timestamp,
                token_estimate=estimate_tokens(_turn_text(content, tool_calls, tool_results)),
            )
            _reopen(session, timestamp)
            indexing.schedule("turn", turn.pk)
            transaction.on_commit(lambda: queue_extraction(turn.pk))
    except IntegrityError:
        # Another request stored this key between our read and write: answer like a retry.
        turn = ConversationTurn.objects.get(session__external_id=session_id, turn_index=turn_index)
        if _same_turn(turn, role, content, tool_calls, tool_results):
            return TurnResult(turn, False)
        raise TurnConflict(turn) from None
    return TurnResult(turn, True)


def _turn_text(content, tool_calls, tool_results) -> str:
    extras = [json.dumps(x, ensure_ascii=False) for x in (tool_calls, tool_results) if x]
    return "\n".join([content, *extras])


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


def queue_extraction(turn_id: int) -> None:
    from lifecycle.tasks import extract_turn  # late: the tasks module imports half the project

    extract_turn(turn_id)


def end_session(session: Session):
    """Queue the session-end job (episode, scratchpad, pending extraction); its Huey result."""
    from lifecycle.tasks import end_session as job

    return job(session.pk)


# ----------------------------------------------------------------------------------------------
# Finding: level-2 traces, episodes, attachments
# ----------------------------------------------------------------------------------------------


def _terms(q: str | None) -> list[str]:
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
    turns = ConversationTurn.objects.filter(session__owner=Owner.default()).annotate(
        calls_text=Cast("tool_calls", TextField()), results_text=Cast("tool_results", TextField())
    )
    for term in _terms(q):
        turns = turns.filter(_text_match(["content", "calls_text", "results_text"], term))
    if session_id:
        turns = turns.filter(session__external_id=session_id)
    if role:
        turns = turns.filter(role=role)
    if time_from:
        turns = turns.filter(timestamp__gte=aware(time_from))
    if time_to:
        turns = turns.filter(timestamp__lte=aware(time_to))
    return list(turns.select_related("session").order_by("-timestamp", "-id")[:limit])


def find_episodes(q="", session_id=None, time_from=None, time_to=None):
    episodes = Episode.objects.filter(owner=Owner.default()).select_related("session")
    for term in _terms(q):
        episodes = episodes.filter(_text_match(["summary", "goal"], term))
    if session_id:
        episodes = episodes.filter(session__external_id=session_id)
    if time_from:  # overlaps the window
        episodes = episodes.filter(ended_at__gte=aware(time_from))
    if time_to:
        episodes = episodes.filter(started_at__lte=aware(time_to))
    return episodes.order_by("-started_at", "-id")


def find_attachments(q="", session_id=None, direction=None):
    found = Attachment.objects.filter(owner=Owner.default()).select_related("session")
    fields = ["original_name", "description", "transcription", "extracted_text"]
    for term in _terms(q):
        found = found.filter(_text_match(fields, term))
    if session_id:
        found = found.filter(session__external_id=session_id)
    if direction:
        found = found.filter(direction=direction)
    return found.order_by("-created_at", "-id")


class TooLarge(Exception):
    def __init__(self, limit: int):
        super().__init__(limit)
        self.limit = limit


def record_attachment(
    upload, direction: str = Direction.INBOUND, description: str = "", session_id: str = ""
) -> Attachment:
    """Keep a file under MEDIA_ROOT with what makes it findable; text files are searchable."""
    limit = settings.API_ATTACHMENT_MAX_BYTES
    if upload.size > limit:
        raise TooLarge(limit)
    name = (upload.name or "file").rsplit("/", 1)[-1][:255]
    mime = _mime(upload, name)
    with transaction.atomic():
        session = session_for(session_id, create=True) if session_id else None
        attachment = Attachment(
            owner=Owner.default(),
            session=session,
            original_name=name,
            mime_type=mime,
            size=upload.size,
            direction=direction,
            description=description,
            extracted_text=_text_of(upload, mime),
        )
        attachment.file.save(name, upload, save=False)
        try:
            attachment.save()
        except Exception:
            attachment.file.delete(save=False)  # no orphan file when the row is not written
            raise
        indexing.schedule("attachment", attachment.pk)
    return attachment


def _mime(upload, name: str) -> str:
    given = (getattr(upload, "content_type", "") or "").split(";")[0].strip()
    if given and given != "application/octet-stream":
        return given[:100]
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def _text_of(upload, mime: str) -> str:
    if not mime.startswith(TEXT_TYPES) or upload.size > 4 * MAX_EXTRACTED_CHARS:
        return ""
    upload.seek(0)
    data = upload.read()
    upload.seek(0)
    return data.decode("utf-8", errors="replace")[:MAX_EXTRACTED_CHARS]
