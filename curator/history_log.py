"""The JSONL conversation backup (seed 003 section 4.5): every recorded turn, one line each.

`conversation_history/<session id>.jsonl` under the data dir is a plain-text copy of the
raw turns, readable without the app. The database stays the source of truth: the nightly
job deletes backup files older than CONVERSATION_LOG_RETENTION_DAYS, never a row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from curator.files import atomic_write
from curator.models import ConversationTurn

log = logging.getLogger(__name__)
FOLDER = "conversation_history"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def log_dir() -> Path:
    return Path(settings.DATA_DIR) / FOLDER


def file_name(session_id: str) -> str:
    """A file name that stays in the folder: only [A-Za-z0-9._-], no leading dot.

    A changed name gets a short hash of the original, so "a/b" and "a_b" never share a file.
    """
    safe = _UNSAFE.sub("_", session_id).lstrip(".")[:100] or "session"
    if safe != session_id:
        safe += "-" + hashlib.sha256(session_id.encode()).hexdigest()[:8]
    return safe + ".jsonl"


def line_for(turn: ConversationTurn) -> str:
    record = {
        "session_id": turn.session.external_id,
        "turn_index": turn.turn_index,
        "role": turn.role,
        "content": turn.content,
        "tool_calls": turn.tool_calls,
        "tool_results": turn.tool_results,
        "timestamp": turn.timestamp.astimezone(UTC).isoformat(),
    }
    return json.dumps(record, ensure_ascii=False) + "\n"


def append(turn: ConversationTurn) -> Path | None:
    """Append the turn to its session's file; a disk error is logged, never raised (a backup
    must not fail the recording it copies)."""
    path = log_dir() / file_name(turn.session.external_id)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line_for(turn))
    except OSError:
        log.exception("could not append turn %s to %s", turn.pk, path)
        return None
    return path


def append_after_commit(turn: ConversationTurn) -> None:
    """What record_turn calls for a newly created turn: a rolled-back turn is never logged."""
    transaction.on_commit(lambda: append(turn), robust=True)


def rewrite(turn: ConversationTurn) -> Path | None:
    """Replace the turn's line in its session's file (after a redaction, or its undo), so the
    backup never keeps what the database no longer holds. A missing file (pruned) stays
    missing; a disk error is logged, never raised."""
    path = log_dir() / file_name(turn.session.external_id)
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        return None
    except OSError:
        log.exception("could not read %s", path)
        return None
    changed = [line_for(turn) if _is_line_of(line, turn) else line for line in lines]
    if changed != lines:
        try:
            atomic_write(path, "".join(changed))
        except OSError:
            log.exception("could not rewrite %s", path)
            return None
    return path


def _is_line_of(line: str, turn: ConversationTurn) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return (
        isinstance(record, dict)
        and record.get("session_id") == turn.session.external_id
        and record.get("turn_index") == turn.turn_index
    )


def prune(now: datetime | None = None, days: int | None = None) -> list[Path]:
    """Delete backup files not written to for `days` days (0 or less keeps them all)."""
    days = settings.CONVERSATION_LOG_RETENTION_DAYS if days is None else days
    folder = log_dir()
    if days <= 0 or not folder.is_dir():
        return []
    cutoff = ((now or timezone.now()) - timedelta(days=days)).timestamp()
    removed = []
    for path in folder.glob("*.jsonl"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed.append(path)
        except OSError:
            log.exception("could not remove %s", path)
    return removed
