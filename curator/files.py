"""Atomic file writes: readers see the old file or the new one, never a mix."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path


def _stage(path: Path, text: str, tmp: Path | None = None) -> Path:
    """Write text into a temp file beside `path` (same file system, so rename is atomic).

    `tmp` names the temp file when someone must be able to find it after a crash (the card
    journal); otherwise a fresh name is picked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if tmp is None:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    else:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
        os.chmod(tmp, mode)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _sync_dir(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never a mix."""
    write_files({path: text})


def snapshot(paths: Iterable[Path]) -> dict[Path, str | None]:
    """What these files hold now (None = missing), to put back if a larger step fails."""
    snap = {}
    for path in paths:
        try:
            snap[path] = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            snap[path] = None
    return snap


def restore_snapshot(snap: dict[Path, str | None]) -> None:
    for path, text in snap.items():
        if text is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write(path, text)


def write_files(contents: dict[Path, str], temp_names: dict[Path, Path] | None = None) -> None:
    """Replace several files together: stage every temp file first, then rename them all.

    Staging is where disks fill up and permissions fail, so a failure there changes nothing.
    If a rename fails half-way, the files already renamed get their old content back.
    """
    before = snapshot(contents)
    staged: dict[Path, Path] = {}
    temp_names = temp_names or {}
    try:
        for path, text in contents.items():
            staged[path] = _stage(path, text, temp_names.get(path))
    except BaseException:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
        raise
    done: list[Path] = []
    try:
        for path, tmp in staged.items():
            os.replace(tmp, path)
            done.append(path)
    except BaseException:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
        restore_snapshot({path: before[path] for path in done})
        raise
    for folder in {path.parent for path in contents}:
        _sync_dir(folder)
