"""The files an import adds: staged first, moved into place only after its database commit.

An import extracts every file it adds into DATA_DIR/import-staging/<id>/ (inside the data dir:
the same file system as the cards and attachments, so a move is a rename). Its transaction
writes the rows, the list of moves (plan.json, written before the commit) and a marker row,
a JobLock named "import-files:<id>". After the commit the files are moved in and the marker
deleted. A kill -9 at any point leaves a state the next start (lifecycle/backup/recovery.py), or the
next import, repairs:
- before the commit, the rows rolled back and there is no marker: the folder is removed, and
  a restore into an empty install can simply be run again;
- after it, the marker says the rows are in: the remaining moves are made.
A live import holds an flock on <id>.lock from the start to the end (the kernel drops it when
the process dies), so a repair running in another process never touches it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.files.storage import default_storage
from django.utils import timezone

from curator.models import Attachment
from lifecycle.models import JobLock

log = logging.getLogger(__name__)
PLAN = "plan.json"
MEMORY, ATTACHMENTS = "memory", "attachments"


def root() -> Path:
    return Path(settings.DATA_DIR) / "import-staging"


def marker_name(staging_id: str) -> str:
    return f"import-files:{staging_id}"


def pending() -> bool:
    try:
        return any(root().iterdir())
    except FileNotFoundError:
        return False


def _target(area: str, name: str) -> Path:
    if area == MEMORY:
        return Path(settings.MEMORY_DIR) / name
    return Path(default_storage.path(name))


@dataclass
class Move:
    area: str  # MEMORY or ATTACHMENTS
    name: str  # where the file goes, relative to its area's folder
    staged: str  # relative to the staging folder
    attachments: list[int] = field(default_factory=list)  # rows naming the file


class Staging:
    """One import's staging folder, locked for as long as the import runs."""

    def __init__(self):
        self.id = uuid.uuid4().hex[:12]
        self.folder = root() / self.id
        self.moves: list[Move] = []
        self._fd = _hold_lock(root(), self.id)
        self.folder.mkdir()

    def stage(self, source: IO[bytes], area: str, name: str) -> str:
        """Copy one file in; its path inside the staging folder."""
        rel = f"{area}/{name}"
        path = self.folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("xb") as out:
            shutil.copyfileobj(source, out, 1024 * 1024)
        return rel

    def planned(self, area: str) -> set[str]:
        return {m.name for m in self.moves if m.area == area}

    def commit_marker(self) -> None:
        """Inside the import's transaction, after its rows: the moves, then the marker row."""
        data = [vars(m) for m in self.moves]
        path = self.folder / PLAN
        with path.open("w", encoding="utf-8") as out:
            json.dump(data, out, ensure_ascii=False)
            out.flush()
            os.fsync(out.fileno())
        JobLock.objects.create(
            name=marker_name(self.id),
            holder="import",
            expires_at=timezone.now() + timedelta(days=36500),  # removed by publish()
        )

    def publish(self) -> None:
        """After the commit: move every file in, then drop the marker and the folder."""
        try:
            _publish(self.folder, self.moves)
        except BaseException:
            os.close(self._fd)  # unlocked, marker kept: the next import or start finishes it
            raise
        JobLock.objects.filter(name=marker_name(self.id)).delete()
        self.close()

    def close(self) -> None:
        """Remove the folder and let go of the lock (what a failed import ends with)."""
        shutil.rmtree(self.folder, ignore_errors=True)
        _release(root(), self.id, self._fd)


def _hold_lock(folder: Path, staging_id: str) -> int:
    """Create <id>.lock already locked: made under a temp name, locked, then renamed, so a
    repair can never see it unlocked while this import lives."""
    temp = folder / f".{staging_id}.lock.new"
    for attempt in range(3):
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileNotFoundError:  # the last import out removed the empty folder just now
            if attempt == 2:
                raise
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.replace(temp, folder / f"{staging_id}.lock")
    return fd


def _release(folder: Path, staging_id: str, fd: int) -> None:
    (folder / f"{staging_id}.lock").unlink(missing_ok=True)  # unlinked while still held
    os.close(fd)
    try:
        folder.rmdir()  # the last import out leaves no empty folder behind
    except OSError:
        pass  # another import's files are still in it


def _publish(folder: Path, moves: list[Move]) -> None:
    for move in moves:
        source = folder / move.staged
        if not source.exists():
            continue  # moved before a crash
        target = _target(move.area, move.name)
        if _link(source, target):
            continue
        if move.area == MEMORY:  # a card made meanwhile: it is kept, never overwritten
            log.warning("Kept %s: it appeared while the import ran.", target)
            continue
        # The name was taken since the import chose it (an upload): take another, fix the rows.
        name = default_storage.get_available_name(move.name)
        _link(source, _target(move.area, name))
        Attachment.objects.filter(pk__in=move.attachments, file=move.name).update(file=name)


def _link(source: Path, target: Path) -> bool:
    """Move without ever replacing a file; False when the target exists already (and is
    not this very file, moved by an earlier, interrupted run)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except FileExistsError:
        if not os.path.samefile(source, target):
            return False
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        _copy_in(source, target)  # the folders are on other file systems
    source.unlink()
    return True


def _copy_in(source: Path, target: Path) -> None:
    temp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    shutil.copyfile(source, temp)
    try:
        os.link(temp, target)
    finally:
        temp.unlink()


def recover() -> list[str]:
    """Finish (after the commit) or remove (before it) every import no live process holds."""
    folder = root()
    if not folder.is_dir():
        return []
    ids = {p.name.removesuffix(".lock") for p in folder.glob("*.lock")}
    ids |= {p.name for p in folder.iterdir() if p.is_dir()}
    done = []
    for staging_id in sorted(ids):
        fd = os.open(folder / f"{staging_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue  # a running import
        try:
            _recover_one(folder / staging_id, staging_id)
        except BaseException:
            os.close(fd)  # kept for the next try (e.g. the tables do not exist yet)
            raise
        _release(folder, staging_id, fd)
        done.append(staging_id)
    for stray in folder.glob(".*.lock.new"):  # killed while creating its lock
        fd = os.open(stray, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            stray.unlink(missing_ok=True)
        except BlockingIOError:
            pass  # an import about to rename it
        finally:
            os.close(fd)
    return done


def _recover_one(staged: Path, staging_id: str) -> None:
    marker = JobLock.objects.filter(name=marker_name(staging_id))
    plan = staged / PLAN
    if marker.exists() and plan.exists():
        moves = [Move(**m) for m in json.loads(plan.read_text(encoding="utf-8"))]
        _publish(staged, moves)
        log.warning(
            "Finished moving the files of import %s, cut short after its commit.", staging_id
        )
    elif staged.exists():
        log.warning("Removed the staged files of import %s, which never committed.", staging_id)
    marker.delete()
    shutil.rmtree(staged, ignore_errors=True)
