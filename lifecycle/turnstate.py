"""A conversation turn's extraction state, defined once for every page that shows it.

Issue 29 found three pages disagreeing: the Sessions list counted every unextracted turn
(assistant turns too, which are never extracted), a session's page called an assistant turn
"waiting", and Jobs counted only the turns whose retry was due. The one definition:

- only a user turn is extracted; any other turn has no extraction state ("");
- "extracted": the extractor ran (what it made is in the log, see curator.transcripts);
- "waiting": not extracted yet, never tried or first in line;
- "retrying": the LLM failed and a retry is queued (still waiting, just later);
- "gave_up": a dead or discarded retry: nothing will extract it any more.

"Waiting for extraction" in a count means waiting + retrying: `awaiting()` on Jobs, a
session's page and the Sessions list. The extraction worker takes `extract.pending_turns`,
the subset whose turn is due now.
"""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from curator.models import ConversationTurn, Role, Session
from lifecycle.models import ExtractionItem, QueueStatus

EXTRACTED, WAITING, RETRYING, GAVE_UP = "extracted", "waiting", "retrying", "gave_up"
ENDED = (QueueStatus.DEAD, QueueStatus.DISCARDED)


def awaiting(turns: QuerySet | None = None) -> QuerySet:
    """User turns still to be extracted (now or after a retry)."""
    turns = ConversationTurn.objects.all() if turns is None else turns
    gave_up = ExtractionItem.objects.filter(status__in=ENDED).values("turn_id")
    return turns.filter(role=Role.USER, extracted=False).exclude(pk__in=gave_up)


def with_waiting(sessions: QuerySet | None = None) -> QuerySet:
    """Sessions annotated with `waiting`: their turns that `awaiting()` counts."""
    sessions = Session.objects.all() if sessions is None else sessions
    gave_up = ExtractionItem.objects.filter(status__in=ENDED).values("turn_id")
    unextracted = Q(turns__role=Role.USER, turns__extracted=False) & ~Q(turns__pk__in=gave_up)
    return sessions.annotate(waiting=Count("turns", filter=unextracted, distinct=True))


def state(turn: ConversationTurn, queue_status: str | None) -> str:
    """One turn's state; `queue_status`: its ExtractionItem's status, None without one."""
    if turn.role != Role.USER:
        return ""
    if turn.extracted:
        return EXTRACTED
    if queue_status in ENDED:
        return GAVE_UP
    return RETRYING if queue_status == QueueStatus.WAITING else WAITING


def mark(turns: list[ConversationTurn]) -> list[ConversationTurn]:
    """Set `extraction_state` on each turn, with one read of the retry queue."""
    ids = [t.pk for t in turns if t.role == Role.USER and not t.extracted]
    queue = dict(ExtractionItem.objects.filter(turn_id__in=ids).values_list("turn_id", "status"))
    for turn in turns:
        turn.extraction_state = state(turn, queue.get(turn.pk))
    return turns


def waiting_count(turns: list[ConversationTurn]) -> int:
    """How many of these (marked) turns `awaiting()` would count."""
    return sum(1 for t in turns if t.extraction_state in (WAITING, RETRYING))
