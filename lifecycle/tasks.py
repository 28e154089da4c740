"""Huey tasks: thin, idempotent, take ids, call the plain functions of this app.

The API and the pages call the tasks by name (`extract_turn`, `end_session`, `index_item`);
retries are scheduled here because only the task knows how to call itself later.
Periodic tasks run in the consumer `manage.py serve` starts (times in settings.TIME_ZONE);
the ones that read every active fact run in a child process on a large database
(lifecycle.largejobs).
"""

from django.conf import settings
from django.db import DatabaseError
from huey.contrib.djhuey import HUEY, db_periodic_task, db_task

from curator import history_log
from curator import writepath as wp
from lifecycle import (
    chat_import,
    consolidate,
    contradictions,
    embedqueue,
    largejobs,
    livecards,
    metrics,
    schedule,
    sessions,
    turnbatch,
)
from lifecycle.backup import nightly
from lifecycle.extraction import extract
from lifecycle.models import Trigger
from memsite.core import queue
from retrieval import keywords, matrix, reindex
from retrieval.search import prune_recall_log


@db_task()
def index_item(kind: str, object_id: int, attempt: int = 0) -> None:
    """Index one item; on failure retry after 1 s, 4 s, 16 s ... then a dead letter."""
    result = embedqueue.index_with_retry(kind, object_id, attempt)
    if result.status == embedqueue.RETRY:
        index_item.schedule(args=(kind, object_id, attempt + 1), delay=result.delay)


# A chat import's batches, and then its episodes, wait behind what live turns queue (priority
# 0): a turn said during an import is indexed within seconds, not after the import's backlog.
BULK, BULK_EPISODES = -1, -2
BATCH_RETRIES = (2, 10)  # seconds before a failed batch is tried again, then per item


@db_task()
def index_turns(index_ids: list[int], extract_ids: list[int], session_ids=(), attempt=0) -> None:
    """A batch of turns (a chat import, lifecycle.turnbatch): indexed together, then the
    person's turns extracted on the batch's vectors, then the episodes of the conversations
    that ended in it queued. A batch whose indexing failed (a busy database, the embedder) is
    tried again a little later, then left to the per-item tasks and their retries."""
    left = turnbatch.run(index_ids, extract_ids)
    if left.unindexed and attempt < len(BATCH_RETRIES) and delayed_runs_happen():
        index_turns.schedule(
            args=(index_ids, extract_ids, session_ids, attempt + 1),
            delay=BATCH_RETRIES[attempt],
            priority=BULK,
        )
        return
    for turn_id in left.unindexed:
        index_item("turn", turn_id)
    for kind, object_id in left.items:
        index_item(kind, object_id)
    for turn_id in left.extract:
        extract_turn(turn_id)
    for session_pk in session_ids:
        end_session(session_pk, historic=True, priority=BULK_EPISODES)


def queue_turn_batch(index_ids: list[int], extract_ids: list[int], session_ids) -> None:
    """How a chat import hands over its turns (lifecycle.turnbatch.collecting)."""
    index_turns(index_ids, extract_ids, session_ids, priority=BULK)


def _retry_later(turn_id: int, item) -> None:
    if item is not None and item.next_attempt_at is not None:
        extract_turn.schedule(args=(turn_id,), eta=item.next_attempt_at)


@db_task()
def extract_turn(turn_id: int) -> None:
    """Queued when a turn is recorded: rules or LLM extraction through the write path."""
    _retry_later(turn_id, extract.run_turn(turn_id))


@db_task()
def retry_extraction(turn_id: int) -> None:
    """A person's Retry of an extraction dead letter."""
    _retry_later(turn_id, extract.run_turn(turn_id, retry=True))


def request_card_refresh() -> None:
    """Facts changed: refresh the cards a few seconds after the last change of a burst."""
    if livecards.note_change(HUEY):
        refresh_cards.schedule(delay=settings.CARDS_REFRESH_DELAY)


@db_task()
def refresh_cards() -> None:
    """The coalesced live refresh of MEMORY.md and User.md (lifecycle.livecards)."""
    wait = livecards.wait(HUEY)
    if wait is None:
        return
    if wait == 0 and livecards.run(HUEY) == livecards.REFRESHED:
        return
    refresh_cards.schedule(delay=wait or settings.CARDS_REFRESH_DELAY)


@db_task()
def reindex_task(run_id: int) -> None:
    """A reindex queued from the home page or the debugger (its ReindexRun row exists)."""
    reindex.run_queued(run_id)


@db_task()
def end_session(session_pk: int, historic: bool = False) -> None:
    """Episode and scratchpad for a finished session (the API returns this task's id);
    `historic` for an imported conversation (no scratchpad, ended at its last turn)."""
    sessions.run_end(session_pk, historic=historic)


def end_imported_session(session_pk: int) -> None:
    """An imported conversation got new turns: its episode, as for a live session."""
    end_session(session_pk, historic=True)


@db_task()
def import_chats(import_id: int) -> None:
    """A chat history import started from its page (its ChatImport row exists)."""
    chat_import.run(import_id, finish_session=end_imported_session, batches=queue_turn_batch)


@db_task()
def consolidate_now(run_id: str) -> None:
    """ "Run consolidation now" from the Jobs page (its JobRun row already exists)."""
    largejobs.consolidation(Trigger.MANUAL, run_id=run_id)


@db_periodic_task(schedule.check_for("nightly_consolidation"))
def nightly_consolidation() -> None:
    largejobs.consolidation(Trigger.SCHEDULE)


@db_task()
def purge_facts_due() -> None:
    """Facts deleted for good whose undo window is over (queued for then; hourly upkeep
    catches one a stopped consumer missed)."""
    wp.purge_due()


def purge_after_window(seconds: int) -> None:
    if delayed_runs_happen():
        purge_facts_due.schedule(delay=seconds + 1)


@db_periodic_task(schedule.check_for("hourly_upkeep"))
def hourly_upkeep() -> None:
    wp.purge_due()
    metrics.snapshot()
    if consolidate.catch_up_due():
        largejobs.consolidation(Trigger.CATCH_UP)
    if nightly.catch_up_due():
        nightly.make()


@db_periodic_task(schedule.check_for("nightly_backup"))
def nightly_backup() -> None:
    """An archive into DATA_DIR/backups/, verified by a dry restore, then rotation."""
    nightly.make()


@db_task()
def backup_now() -> None:
    """The Jobs page's "Back up now", and the catch-up of a missed night."""
    nightly.make()


@db_periodic_task(schedule.check_for("prune_conversation_logs"))
def prune_conversation_logs() -> None:
    """The JSONL conversation backup keeps CONVERSATION_LOG_RETENTION_DAYS (files only)."""

    history_log.prune()


@db_periodic_task(schedule.check_for("prune_search_logs"))
def prune_search_logs() -> None:
    """The recall log keeps RECALL_LOG_DAYS; the change logs of the vector and keyword
    indexes their newest entries."""

    prune_recall_log()
    matrix.prune_log()
    keywords.prune_log()


@db_task()
def find_contradictions_soon() -> None:
    """Queued after writes (at most one per CONTRADICTIONS_DELAY): pairs with a fact that
    changed in the last day."""
    largejobs.find_contradictions(recent=True)


queue.upkeep(find_contradictions_soon.task_class.__name__)  # not what /health waits for


def contradictions_after_write() -> None:
    """What the receiver calls for every changed fact: one delayed scan sees them all."""
    if delayed_runs_happen() and contradictions.due_after_write():
        find_contradictions_soon.schedule(delay=settings.CONTRADICTIONS_DELAY)


def delayed_runs_happen() -> bool:
    """In immediate mode (tests, debugging) a delayed task only waits in memory, never runs:
    the check is left to the nightly run and to "Look for contradictions now"."""
    return not HUEY.immediate


@db_task()
def find_contradictions_now() -> None:
    """The Contradictions tab's "Look now": every active fact, as at night."""
    largejobs.find_contradictions()


@db_periodic_task(schedule.check_for("find_contradictions"))
def find_contradictions() -> None:
    """Every active fact against every other worth comparing."""
    largejobs.find_contradictions()


@db_periodic_task(schedule.check_for("heartbeat"))
def heartbeat() -> None:
    schedule.beat()


@HUEY.on_startup()
def consumer_started() -> None:
    try:
        schedule.beat(started=True)
    except DatabaseError:  # not migrated yet: the minute heartbeat will say it later
        pass
