"""Crash safety for card files: an undo record for every card file a transaction replaces.

A card save writes its revision row and renames the new file into place inside one database
transaction, under the write lock, so the next writer always reads the file that matches the
history. A kill -9 between that rename and the commit would leave a file no revision records,
so before the rename a small record goes to DATA_DIR/journal/cards: the revision it belongs
to, the file's previous content and a fingerprint of the new one. After the commit the record
is dropped. At the next start (lifecycle/backup/recovery.py), under the write lock, a record whose
revision never committed puts the previous content back, unless the file changed again since
(a later save, or an edit outside the app, is never undone).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from curator.files import atomic_write
from curator.models import CardRevision

log = logging.getLogger(__name__)


def folder() -> Path:
    return Path(settings.DATA_DIR) / "journal" / "cards"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Entry:
    path: Path  # the record itself
    card: str
    target: Path  # the card file
    staged: Path  # the temp file the new content is written to before the rename
    revision: int
    before: str | None  # None: the file did not exist
    after_sha: str
    # The revision's own text, when the file is not the card itself (the archive file a
    # card's metabolism writes); the card's text otherwise.
    revision_sha: str = ""

    def forget(self) -> None:
        self.staged.unlink(missing_ok=True)
        self.path.unlink(missing_ok=True)


def begin(
    card: str,
    target: Path,
    revision: int,
    before: str | None,
    after: str,
    revision_text: str | None = None,
) -> Entry:
    """Record the undo durably, before anything touches the card file. `revision_text` is
    the revision's content when `target` is another file that revision commits."""
    name = f"{time.time_ns()}-{revision}-{secrets.token_hex(4)}"  # sorts in the order written
    entry = Entry(
        folder() / f"{name}.json",
        card,
        target,
        target.parent / f".{target.name}.{name}.tmp",  # memory_files() skips *.tmp
        revision,
        before,
        _sha(after),
        _sha(after if revision_text is None else revision_text),
    )
    data = {
        "card": card,
        "target": str(target),
        "staged": str(entry.staged),
        "revision": revision,
        "before": before,
        "after_sha": entry.after_sha,
        "revision_sha": entry.revision_sha,
    }
    entry.path.parent.mkdir(parents=True, exist_ok=True)
    partial = entry.path.with_suffix(".part")  # a half-written record is never read back
    with partial.open("w", encoding="utf-8") as out:
        json.dump(data, out, ensure_ascii=False)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, entry.path)
    return entry


def _load(path: Path) -> Entry | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Entry(
            path,
            data["card"],
            Path(data["target"]),
            Path(data["staged"]),
            int(data["revision"]),
            data["before"],
            data["after_sha"],
            data.get("revision_sha") or data["after_sha"],
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pending() -> bool:
    """Anything left to look at (cheap: one directory listing)."""
    try:
        return any(folder().iterdir())
    except FileNotFoundError:
        return False


def _committed(entry: Entry) -> bool:
    """Did this record's revision commit? A rolled-back id can be reused, so the card and the
    content must match too."""
    revision = CardRevision.objects.filter(pk=entry.revision, card=entry.card).first()
    return revision is not None and _sha(revision.content) == entry.revision_sha


def _needs_undo(tail: list[Entry], current: str) -> bool:
    """The file still holds what the last uncommitted save wrote, and no committed revision
    says it should (a record left by a transaction that failed, not killed, could otherwise
    undo a later save of the same text)."""
    if _sha(current) != tail[-1].after_sha:
        return False
    newest = CardRevision.objects.filter(card=tail[-1].card).first()  # newest first
    return newest is None or _sha(newest.content) != _sha(current)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def recover() -> list[str]:
    """Put back card files whose save never committed; the cards repaired.

    Call it under the database write lock (inside `transaction.atomic()`): every save journals
    and renames inside its transaction, so no record seen then belongs to a live save.
    """
    groups: dict[Path, list[Entry]] = {}
    for path in sorted(folder().glob("*")):
        entry = _load(path) if path.suffix == ".json" else None
        if entry is None:
            path.unlink(missing_ok=True)  # a record cut short: its save never renamed anything
            continue
        groups.setdefault(entry.target, []).append(entry)
    repaired = []
    for target, entries in groups.items():
        # The uncommitted saves at the end (one killed transaction can save a card twice):
        # the file goes back to what it was before the first of them.
        tail = []
        for entry in reversed(entries):
            if _committed(entry):
                break
            tail.insert(0, entry)
        current = _read(target)
        if tail and current is not None and _needs_undo(tail, current):
            before = tail[0].before
            if before is None:
                target.unlink()
            else:
                atomic_write(target, before)
            repaired.append(tail[0].card)
            log.warning("Put %s back as it was before a save that never committed.", target)
        for entry in entries:
            entry.forget()
    return repaired
