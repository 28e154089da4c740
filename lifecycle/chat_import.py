"""Importing chat history: a preview first, then sessions and turns with their original times.

`prepare` reads the whole file (lifecycle.chat_formats refuses a bad one before anything is
stored) and records a ChatImport with its preview: conversations, turns, dates, languages, a
sample, and what the guardrails would mask, block or send to review. `run` stores it conversation by
conversation, each in one transaction through `record_turn`, exactly as live turns arrive, so
the guardrails mask them first and indexing and extraction are queued by the same signals;
each conversation with new turns then gets its episode from the session-end job (historic:
it ended at its last turn and leaves the scratchpad alone).

Safe to repeat and to interrupt: turns are keyed by (session id, turn index), so a file
imported again adds nothing; `position` says how many conversations are stored, so a resumed
run (the page's Resume, or the same command again) goes on from there; a conversation is
never half stored. Cancelling stops after the conversation being stored.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from curator import conversations as conv
from curator.guard import rules as guard
from curator.models import ConversationTurn, Role, Session
from lifecycle import chat_formats, runs, turnbatch
from lifecycle.chat_formats import Conversation, ImportRefused
from lifecycle.extraction.rules import is_chinese
from lifecycle.models import ChatImport, ImportStatus

log = logging.getLogger(__name__)
FINISHED = (ImportStatus.DONE, ImportStatus.CANCELLED)
RESUMABLE = (ImportStatus.INTERRUPTED, ImportStatus.FAILED, ImportStatus.QUEUED)
LOCK_TTL = timedelta(minutes=2)  # refreshed after every conversation: a dead run shows soon
SAMPLE_CONVERSATIONS, SAMPLE_TURNS, SAMPLE_CHARS = 2, 4, 300
STALE_AFTER = timedelta(days=1)  # uploads nobody started are removed after this


def uploads_dir() -> Path:
    return Path(settings.DATA_DIR) / "chat-imports"


def lock_name(job: ChatImport) -> str:
    return f"chat-import:{job.pk}"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------
# Preview
# --------------------------------------------------------------------------------------


def language(conversation: Conversation) -> str:
    text = " ".join(t.content for t in conversation.turns if t.role == Role.USER)[:4000]
    if is_chinese(text):
        return "zh"
    letters = sum(c.isascii() and c.isalpha() for c in text)
    return "en" if letters * 2 >= len(text.replace(" ", "")) and letters else "other"


def _stored_counts(conversations: list[Conversation]) -> int:
    """Turns of the file already stored (same session id and turn index)."""
    keys = {c.key: c for c in conversations}
    found = 0
    sessions = Session.objects.filter(external_id__in=list(keys)).values_list("pk", "external_id")
    for pk, key in sessions:
        indexes = [turn_index(t, n) for n, t in enumerate(keys[key].turns)]
        found += ConversationTurn.objects.filter(session_id=pk, turn_index__in=indexes).count()
    return found


def turn_index(turn, position: int) -> int:
    return turn.index if turn.index is not None else position


def _guardrails(conversations: list[Conversation]) -> tuple[list[dict], list[dict], list[dict]]:
    """Per rule: how many turns it would mask, how many would have memories blocked, and how
    many would have memories sent to review (personal data, by default)."""
    matchers = guard.active()
    masking = guard.transcript_rules(matchers, None)
    texts = [m for m in guard.text_rules(matchers) if m not in masking and not m.agents]
    blocking = [m for m in texts if not m.review]
    reviewing = [m for m in texts if m.review]
    masked, blocked, review = Counter(), Counter(), Counter()
    for conversation in conversations:
        for turn in conversation.turns:
            redaction = guard.redact_turn(
                turn.content, turn.tool_calls, turn.tool_results, matchers=matchers
            )
            masked.update({hit.name for hit in redaction.hits})
            if turn.role == Role.USER:
                blocked.update({m.name for m in blocking if m.spans(redaction.content)})
                review.update({m.name for m in reviewing if m.spans(redaction.content)})
    order = [m.name for m in matchers]
    return (
        [{"rule": n, "turns": masked[n]} for n in order if masked[n]],
        [{"rule": n, "turns": blocked[n]} for n in order if blocked[n]],
        [{"rule": n, "turns": review[n]} for n in order if review[n]],
    )


def _sample(conversations: list[Conversation]) -> list[dict]:
    """The first turns of the first conversations, as they would be stored (masked)."""
    matchers = guard.active()
    sample = []
    for conversation in conversations[:SAMPLE_CONVERSATIONS]:
        turns = []
        for turn in conversation.turns[:SAMPLE_TURNS]:
            text = guard.redact_turn(turn.content, matchers=matchers).content
            calls = ", ".join(
                str((c.get("function") or c).get("name") or "?")
                for c in turn.tool_calls or []
                if isinstance(c, dict)
            )
            turns.append(
                {
                    "role": turn.role,
                    "content": text[:SAMPLE_CHARS] + ("…" if len(text) > SAMPLE_CHARS else ""),
                    "tools": calls,
                    "timestamp": turn.timestamp.isoformat(),
                }
            )
        sample.append({"title": conversation.title or conversation.key, "turns": turns})
    return sample


def preview(conversations: list[Conversation]) -> dict:
    turns = [t for c in conversations for t in c.turns]
    times = [t.timestamp for t in turns]
    masked, blocked, review = _guardrails(conversations)
    already = _stored_counts(conversations)
    return {
        "conversations": len(conversations),
        "turns": len(turns),
        "first": min(times).isoformat(),
        "last": max(times).isoformat(),
        "languages": dict(Counter(language(c) for c in conversations).most_common()),
        "roles": dict(Counter(t.role for t in turns).most_common()),
        "tool_turns": sum(bool(t.tool_calls or t.tool_results) for t in turns),
        "sample": _sample(conversations),
        "masked": masked,
        "blocked": blocked,
        "review": review,
        "already": already,
        "new": len(turns) - already,
    }


# --------------------------------------------------------------------------------------
# Preparing: a file becomes a ChatImport with its preview
# --------------------------------------------------------------------------------------


def prepare(path: str | Path, fmt: str, *, name: str = "", uploaded: bool = False) -> ChatImport:
    """Read and check the whole file, then record the import (nothing else is stored). The
    same file again while an earlier import of it is unfinished resumes that one."""
    path = Path(path).resolve()  # a resume may run from another directory
    data = chat_formats.read_bytes(path)
    conversations = chat_formats.parse(data, fmt)
    sha = digest(data)
    unfinished = (
        ChatImport.objects.filter(digest=sha, fmt=fmt)
        .exclude(status__in=[*FINISHED, ImportStatus.READY])
        .order_by("-created_at")
        .first()
    )
    if unfinished is not None:
        if uploaded and path != Path(unfinished.path):
            Path(path).unlink(missing_ok=True)  # the earlier copy is the one resumed
        elif not Path(unfinished.path).exists():
            ChatImport.objects.filter(pk=unfinished.pk).update(path=str(path), uploaded=uploaded)
        unfinished.refresh_from_db()
        return unfinished
    turns = sum(len(c.turns) for c in conversations)
    return ChatImport.objects.create(
        fmt=fmt,
        file_name=(name or path.name)[:255],
        path=str(path),
        uploaded=uploaded,
        digest=sha,
        preview=preview(conversations),
        conversations=len(conversations),
        turns=turns,
    )


def stage_upload(upload, fmt: str) -> ChatImport:
    """An uploaded file, kept under DATA_DIR/chat-imports until it is imported or cancelled;
    a refused one is removed at once (ImportRefused says why)."""
    remove_stale()
    folder = uploads_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}{_suffix(upload.name)}"
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    try:
        return prepare(path, fmt, name=conv.safe_name(upload.name or ""), uploaded=True)
    except ImportRefused:
        path.unlink(missing_ok=True)
        raise


def _suffix(name: str) -> str:
    suffix = Path(name or "").suffix.lower()
    return suffix if suffix in (".json", ".jsonl", ".zip") else ".data"


def remove_stale(now=None) -> None:
    """Previews nobody started (and their files) go after a day."""
    cutoff = (now or timezone.now()) - STALE_AFTER
    for job in ChatImport.objects.filter(status=ImportStatus.READY, created_at__lt=cutoff):
        _discard_file(job)
        job.delete()


def _discard_file(job: ChatImport) -> None:
    if job.uploaded:
        Path(job.path).unlink(missing_ok=True)


# --------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------


def queue(job: ChatImport) -> ChatImport:
    """READY, or resumable: mark it queued (the caller enqueues the task)."""
    ChatImport.objects.filter(pk=job.pk).update(status=ImportStatus.QUEUED, error="")
    job.refresh_from_db()
    return job


def cancel(job: ChatImport) -> ChatImport:
    """A running import stops after its current conversation; any other stops now. What is
    stored stays (whole conversations), the uploaded file goes."""
    if job.status == ImportStatus.RUNNING and not interrupted(job):
        ChatImport.objects.filter(pk=job.pk).update(status=ImportStatus.CANCELLING)
    elif job.status not in FINISHED:
        _finish(job, ImportStatus.CANCELLED)
    job.refresh_from_db()
    return job


def interrupted(job: ChatImport) -> bool:
    """Said to run, but nobody holds its lock: the process running it died."""
    active = (ImportStatus.RUNNING, ImportStatus.CANCELLING)
    return job.status in active and runs.held(lock_name(job)) is None


def _finish(job: ChatImport, status: str, error: str = "") -> None:
    ChatImport.objects.filter(pk=job.pk).update(
        status=status, error=error[:2000], finished_at=timezone.now()
    )
    if status in FINISHED:
        _discard_file(job)


def import_conversation(conversation: Conversation) -> tuple[Session, int, int]:
    """Store one conversation in one transaction: (its session, turns added, turns that
    differ from what is stored under the same key and were left as they are)."""
    added = differing = 0
    with transaction.atomic():
        for position, turn in enumerate(conversation.turns):
            try:
                result = conv.record_turn(
                    conversation.key,
                    turn_index(turn, position),
                    turn.role,
                    turn.content,
                    tool_calls=turn.tool_calls,
                    tool_results=turn.tool_results,
                    timestamp=turn.timestamp,
                    source="import",
                )
            except conv.TurnConflict:
                differing += 1  # raw turns are never rewritten: an edited branch stays apart
                continue
            added += result.created
        session = conv.session_for(conversation.key)
        if conversation.title and not session.title:
            Session.objects.filter(pk=session.pk).update(title=conversation.title[:200])
    return session, added, differing


Progress = Callable[[ChatImport], None]


def run(
    import_id: int,
    *,
    finish_session: Callable[[int], object],
    progress: Progress | None = None,
    batches: Callable[..., object] | None = None,
) -> ChatImport:
    """Store the import's conversations from `position` on. `finish_session(session_pk)`
    queues the episode of a session that got new turns (the session-end job). With
    `batches(index_ids, extract_ids, session_ids)` (the `index_turns` task), the turns are
    indexed and extracted in batches (lifecycle.turnbatch), and that task queues the episodes
    once their turns are done; without, each turn gets its own tasks, as a live one does."""
    job = ChatImport.objects.get(pk=import_id)
    if job.status in FINISHED:
        return job
    holder = uuid.uuid4().hex
    if not runs.acquire(lock_name(job), holder, LOCK_TTL):
        return job  # another worker is on it
    try:
        if batches is None:
            _run(job, holder, finish_session, progress)
        else:
            with turnbatch.collecting(batches) as collector:
                _run(job, holder, collector.end_after, progress)
    except KeyboardInterrupt:
        ChatImport.objects.filter(pk=job.pk).update(status=ImportStatus.INTERRUPTED)
        raise
    except (ImportRefused, DatabaseError, OSError) as exc:
        log.exception("chat import %s failed", job.pk)
        _finish(job, ImportStatus.FAILED, str(exc))
    finally:
        runs.release(lock_name(job), holder)
    job.refresh_from_db()
    return job


def _run(job: ChatImport, holder: str, finish_session, progress: Progress | None) -> None:
    data = chat_formats.read_bytes(job.path)
    if digest(data) != job.digest:
        raise ImportRefused(_("The file changed since its preview; upload it again."))
    conversations = chat_formats.parse(data, job.fmt)
    updates = {"status": ImportStatus.RUNNING, "error": ""}
    if job.started_at is None:
        updates["started_at"] = timezone.now()
    ChatImport.objects.filter(pk=job.pk).update(**updates)
    job.refresh_from_db()
    for index, conversation in enumerate(conversations[job.position :], start=job.position):
        if ChatImport.objects.filter(pk=job.pk, status=ImportStatus.CANCELLING).exists():
            _finish(job, ImportStatus.CANCELLED)
            return
        session, added, differing = import_conversation(conversation)
        job.position = index + 1
        job.turns_done += len(conversation.turns)
        job.turns_added += added
        job.turns_differing += differing
        if added and session.pk not in job.session_ids:
            job.session_ids.append(session.pk)
        job.save(
            update_fields=[
                "position",
                "turns_done",
                "turns_added",
                "turns_differing",
                "session_ids",
                "updated_at",
            ]
        )
        if added:
            finish_session(session.pk)
        runs.refresh(lock_name(job), holder, LOCK_TTL)
        if progress is not None:
            progress(job)
    _finish(job, ImportStatus.DONE)


# --------------------------------------------------------------------------------------
# Where it stands (the page's progress bar)
# --------------------------------------------------------------------------------------


def extraction_state(job: ChatImport) -> tuple[int, int]:
    """(user turns extracted, user turns) of the sessions this import added turns to."""
    if not job.session_ids:
        return 0, 0
    turns = ConversationTurn.objects.filter(session_id__in=job.session_ids, role=Role.USER)
    return turns.filter(extracted=True).count(), turns.count()


def percent(job: ChatImport) -> int:
    if job.status == ImportStatus.DONE:
        return 100
    return int(100 * job.turns_done / job.turns) if job.turns else 0
