"""Automatic backups: a nightly archive in <data dir>/backups/, verified, rotated, restorable.

Each backup is NAME.zip (an export, written under a temporary name and renamed when whole)
and NAME.json beside it: when it was made, its size, and the result of its verification.
Verifying is the restore itself, dry: a child process migrates an empty scratch data dir and
runs `import --dry-run` on the archive there (every check, foreign keys included, then a
rollback), so a backup called good is one that restores into a new install. The live
database is never locked for it.

Kept: the newest backup of each of the last KEEP_DAILY days that have one, and the newest of
each of the last KEEP_WEEKLY weeks; a failed attempt is kept (as a record) until a later
backup succeeds. A restore goes into a new data dir, never over the live one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone

from curator.models import ConversationTurn, Fact, Owner
from lifecycle.backup import export
from lifecycle.backup import restore as imp

PREFIX = "backup-"
STALE_AFTER = timedelta(days=2)  # the home page warns when the last good backup is older
CHILD_TIMEOUT = 3600  # seconds a verification or a restore may take


def folder() -> Path:
    return Path(settings.DATA_DIR) / "backups"


@dataclass
class Backup:
    name: str  # the file stem: backup-YYYYMMDD-HHMMSS
    created_at: datetime
    size: int = 0
    verified: bool | None = None  # None: not checked yet
    checked_at: datetime | None = None
    error: str = ""  # why it failed (making it or verifying it)

    @property
    def path(self) -> Path:
        return folder() / f"{self.name}.zip"

    @property
    def good(self) -> bool:
        return self.verified is True and self.path.exists()

    def save(self) -> None:
        data = asdict(self)
        for key in ("created_at", "checked_at"):
            data[key] = data[key].isoformat() if data[key] else None
        temp = folder() / f".{self.name}.json.tmp"
        temp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(temp, folder() / f"{self.name}.json")


def _load(path: Path) -> Backup | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["created_at"] = datetime.fromisoformat(data["created_at"])
        if data.get("checked_at"):
            data["checked_at"] = datetime.fromisoformat(data["checked_at"])
        return Backup(**data)
    except (OSError, ValueError, TypeError, KeyError):
        return None  # not ours, or half-written by a process that died


def backups() -> list[Backup]:
    """Every backup and failed attempt, newest first (a zip without its record counts too:
    copied in by hand, it is listed as not checked)."""
    if not folder().is_dir():
        return []
    found = {}
    for record in folder().glob(f"{PREFIX}*.json"):
        backup = _load(record)
        if backup is not None:
            found[backup.name] = backup
    for archive in folder().glob(f"{PREFIX}*.zip"):
        if archive.stem not in found:
            made = datetime.fromtimestamp(archive.stat().st_mtime, tz=UTC)
            found[archive.stem] = Backup(archive.stem, made, archive.stat().st_size)
    return sorted(found.values(), key=lambda b: b.created_at, reverse=True)


def get(name: str) -> Backup:
    """The backup with this name (a name from the list, never a path)."""
    for backup in backups():
        if backup.name == name:
            return backup
    raise LookupError(name)


# -- making, verifying, rotating -------------------------------------------------------------


def make(now: datetime | None = None) -> Backup:
    """Export, verify, rotate. A failure is recorded (the home page and /health say so)."""
    now = now or timezone.now()
    folder().mkdir(parents=True, exist_ok=True)
    local = now.astimezone(ZoneInfo(settings.TIME_ZONE))
    backup = Backup(f"{PREFIX}{local:%Y%m%d-%H%M%S}", now.astimezone(UTC))
    temp = folder() / f".{backup.name}.zip.tmp"
    try:
        export.export(temp)
        os.replace(temp, backup.path)
    except Exception as exc:  # a full disk, a failed read: recorded, never raised at night
        temp.unlink(missing_ok=True)
        backup.verified, backup.checked_at, backup.error = False, now, str(exc) or repr(exc)
        backup.save()
        return backup
    backup.size = backup.path.stat().st_size
    backup.save()
    verify(backup, now=now)
    rotate()
    return backup


def verify(backup: Backup, now: datetime | None = None) -> Backup:
    """The archive read whole, then restored dry into a scratch data dir (a child process)."""
    try:
        if not backup.path.exists():
            raise imp.ArchiveError("the file is missing")
        imp.read(backup.path)  # every member's checksum, the manifest, every row
        _in_child(backup.path, folder() / f".verify-{uuid.uuid4().hex[:8]}", dry_run=True)
        backup.verified, backup.error = True, ""
    except (imp.ArchiveError, ChildFailed, OSError) as exc:
        backup.verified, backup.error = False, str(exc)
    backup.checked_at = now or timezone.now()
    backup.save()
    return backup


def rotate() -> list[str]:
    """Keep the newest good backup of each of the last KEEP_DAILY days and KEEP_WEEKLY weeks;
    failed attempts older than the newest good backup go too. The names removed."""
    every = backups()
    good = [b for b in every if b.good]
    keep = {b.name for b in _newest_per(good, _day, settings.BACKUP_KEEP_DAILY)}
    keep |= {b.name for b in _newest_per(good, _week, settings.BACKUP_KEEP_WEEKLY)}
    newest_good = good[0].created_at if good else None
    removed = []
    for backup in every:
        if backup.name in keep or not (folder() / f"{backup.name}.json").exists():
            continue  # kept, or a zip copied in by hand: never deleted
        if backup.verified is not True and (newest_good is None or backup.created_at > newest_good):
            continue  # a failure (or an unchecked copy) newer than every good backup stays
        backup.path.unlink(missing_ok=True)
        (folder() / f"{backup.name}.json").unlink(missing_ok=True)
        removed.append(backup.name)
    return removed


def _day(backup: Backup):
    return backup.created_at.astimezone(ZoneInfo(settings.TIME_ZONE)).date()


def _week(backup: Backup):
    return _day(backup).isocalendar()[:2]


def _newest_per(good: list[Backup], period, count: int) -> list[Backup]:
    chosen: dict = {}
    for backup in good:  # newest first: the first of each period is its newest
        chosen.setdefault(period(backup), backup)
    return list(chosen.values())[:count]


# -- what the pages and /health say ----------------------------------------------------------


@dataclass
class Status:
    state: str  # off / none / ok / stale / failed
    last_good: Backup | None
    last: Backup | None

    @property
    def warn(self) -> bool:
        return self.state in ("stale", "failed")


def status(now: datetime | None = None) -> Status:
    """failed: the newest attempt failed; stale: the newest good one is more than two days old
    (or there is none, and the install is older than that); none: not made yet (a new
    install: the first comes within the hour once it holds memory)."""
    every = backups()
    last = every[0] if every else None
    last_good = next((b for b in every if b.good), None)
    if not settings.BACKUPS_ENABLED and last is None:
        return Status("off", None, None)
    if last is not None and last.verified is False:
        return Status("failed", last_good, last)
    now = now or timezone.now()
    if last_good is not None:
        state = "stale" if now - last_good.created_at > STALE_AFTER else "ok"
        return Status(state, last_good, last)
    older = Owner.objects.filter(created_at__lt=now - STALE_AFTER).exists()
    return Status("stale" if older else "none", None, last)


def catch_up_due(now: datetime | None = None) -> bool:
    """A machine asleep at backup time still gets its backup, an hour or more late."""
    if not settings.BACKUPS_ENABLED:
        return False
    now = now or timezone.now()
    every = backups()
    if every:
        return now - every[0].created_at > timedelta(hours=25)
    # the first backup, once there is something to keep
    return Fact.objects.exists() or ConversationTurn.objects.exists()


# -- restoring into a new data dir -------------------------------------------------------------


class ChildFailed(Exception):
    """The child process that verifies or restores failed; the message is its own output."""


def check_target(into: Path) -> Path:
    """A new data dir: not the live one, not inside it nor around it, empty if it exists."""
    into = Path(into).expanduser().resolve()
    live = Path(settings.DATA_DIR).resolve()
    if into == live or live in into.parents or into in live.parents:
        raise ValueError("live")
    if into.exists() and (not into.is_dir() or any(into.iterdir())):
        raise ValueError("not_empty")
    return into


def restore_into(backup: Backup, into: Path) -> str:
    """Restore a backup into a new data dir (check_target first); the child's output."""
    into = check_target(into)
    return _in_child(backup.path, into, dry_run=False)


def _in_child(archive: Path, data_dir: Path, *, dry_run: bool) -> str:
    """`manage.py backups load` in another process whose data dir is `data_dir`: it migrates
    the empty database there and imports the archive (dry: rolled back, then removed)."""
    manage = Path(settings.BASE_DIR) / "manage.py"
    env = {**os.environ, "MEMSITE_DATA_DIR": str(data_dir)}
    env["DJANGO_SETTINGS_MODULE"] = "memsite.settings"
    env["MEMSITE_HUEY_IMMEDIATE"] = "1"  # nothing queued for a consumer of that dir
    command = [sys.executable, str(manage), "backups", "load", str(archive)]
    try:
        done = subprocess.run(
            command + (["--dry-run"] if dry_run else []),
            env=env,
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        raise ChildFailed(f"no answer after {CHILD_TIMEOUT} s") from exc
    finally:
        if dry_run:
            shutil.rmtree(data_dir, ignore_errors=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise ChildFailed(lines[-1] if lines else f"exit status {done.returncode}")
    return done.stdout
