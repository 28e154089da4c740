"""Export: the whole memory as one zip archive that `restore` can restore or merge.

Layout of an archive (format version 1):

    manifest.json                 format, format_version, app_version, created_at, counts
    data/<kind>.jsonl             one JSON object per row, in KINDS order (parents first)
    files/memory/<path>           every file under MEMORY_DIR (the Markdown cards, archives)
    files/attachments/<name>      the stored attachment files (Attachment.file names)

Rows keep their database ids ("id") and foreign keys as ids ("session_id"), so an import
can rebuild every link through an id map; many-to-many links are lists of ids.

Agents travel as records (name, description, access, scope limits, pauses, times) without
their token's digest: a secret never leaves the install, so a restored agent has no valid
token until the person issues one, yet every row it wrote or recall it read still names it.
User accounts (passwords), search indexes, the Blocked log and job bookkeeping are left out:
they are secrets, rebuilt, or operational.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import models
from django.utils import timezone

from curator.models import (
    Attachment,
    CardRevision,
    Contradiction,
    ConversationTurn,
    Episode,
    Fact,
    GuardRule,
    MemoryEvent,
    Owner,
    PendingItem,
    Scratchpad,
    Session,
    SourceThreshold,
)
from curator.thresholds import token_of
from memsite.core.db.snapshot import read_snapshot
from memsite.models import ApiToken
from retrieval.models import RecallHit, RecallLog, RegressionCheck

FORMAT = "memory-curator-archive"
FORMAT_VERSION = 1
MEMORY_PREFIX = "files/memory/"
ATTACHMENT_PREFIX = "files/attachments/"
# Counts of files, next to the row counts in the manifest.
CARD_FILES, ATTACHMENT_FILES = "memory_files", "attachment_files"


def _pair(record: dict, *names: str) -> tuple:
    return tuple(record.get(name) for name in names)


@dataclass(frozen=True)
class Kind:
    """One exported model: its natural key (what identifies a row across installs)."""

    name: str
    model: type[models.Model]
    # natural key of a record; `parent(kind, id)` gives a referenced record of the same side
    key: Callable[[dict, Callable[[str, Any], dict | None]], tuple]
    refs: dict[str, str] = field(default_factory=dict)  # fk attname -> kind
    m2m: dict[str, str] = field(default_factory=dict)  # m2m field -> kind
    # left out of the "identical?" comparison: ids, derived values, lists of foreign ids
    ignore: frozenset[str] = frozenset()
    # added to format 1 later: archives exported before it lack the kind, which reads as none
    optional: bool = False
    # never written into an archive (an agent's token digest)
    secret: frozenset[str] = frozenset()


def _ext(parent, kind: str, pk) -> Any:
    """A referenced row's natural key (None when the reference is empty or dangling)."""
    row = parent(kind, pk) if pk is not None else None
    return None if row is None else KINDS_BY_NAME[kind].key(row, parent)


def _threshold_key(record: dict, parent) -> tuple:
    """An agent's thresholds are that agent's (by name), whatever its id is in either install."""
    agent = token_of(record.get("source") or "")
    return (record.get("source"),) if agent is None else ("agent", _ext(parent, "agents", agent))


AGENT = {"agent_id": "agents"}  # the agent a row came from (curator.models.agent_field)

KINDS: list[Kind] = [
    Kind("owners", Owner, lambda r, p: _pair(r, "key"), ignore=frozenset({"created_at"})),
    # First: every row that names an agent comes after it. Matched by name across installs.
    Kind(
        "agents",
        ApiToken,
        lambda r, p: _pair(r, "name"),
        ignore=frozenset({"created_at", "last_used_at"}),
        optional=True,
        secret=frozenset({"digest", "prefix"}),
    ),
    Kind(
        "sessions",
        Session,
        lambda r, p: _pair(r, "external_id"),
        refs={"owner_id": "owners", **AGENT},
    ),
    Kind(
        "episodes",
        Episode,
        lambda r, p: _pair(r, "started_at", "source"),  # the summary can be edited
        refs={"owner_id": "owners", "session_id": "sessions"},
        m2m={"linked_facts": "facts"},
        ignore=frozenset({"access_count"}),
    ),
    Kind(
        "turns",
        ConversationTurn,
        lambda r, p: (_ext(p, "sessions", r["session_id"]), r.get("turn_index")),
        refs={"session_id": "sessions", "episode_id": "episodes", **AGENT},
        ignore=frozenset({"extracted"}),  # processing state, not content
    ),
    Kind(
        "facts",
        Fact,
        # not the content: an edit changes it in place, and must show as a conflict,
        # never come back as a second fact
        lambda r, p: _pair(r, "created_at", "source"),
        refs={
            "owner_id": "owners",
            "supersedes_id": "facts",
            "source_turn_id": "turns",
            "source_episode_id": "episodes",
            **AGENT,
        },
        # derived, or usage counters that every recall bumps
        ignore=frozenset({"content_key", "access_count", "last_accessed_at"}),
    ),
    Kind(
        "pending",
        PendingItem,
        lambda r, p: _pair(r, "created_at", "reason"),  # the candidate can be edited
        refs={
            "owner_id": "owners",
            "conflicts_with_id": "facts",
            "source_turn_id": "turns",
            "resulting_fact_id": "facts",
            **AGENT,
        },
    ),
    Kind(
        "attachments",
        Attachment,
        lambda r, p: _pair(r, "original_name", "size", "created_at"),
        refs={"owner_id": "owners", "session_id": "sessions", "episode_id": "episodes"},
        m2m={"linked_facts": "facts"},
        ignore=frozenset({"file"}),
    ),
    Kind(
        "scratchpads",
        Scratchpad,
        lambda r, p: (_ext(p, "owners", r["owner_id"]),),
        refs={"owner_id": "owners"},
    ),
    Kind(
        "events",
        MemoryEvent,
        # operation_id is unique when set; otherwise what happened, by whom, when
        lambda r, p: (
            ("op", r["operation_id"])
            if r.get("operation_id")
            else _pair(r, "event_type", "actor", "created_at", "job_run", "batch")
        ),
        refs={
            "owner_id": "owners",
            "fact_id": "facts",
            "pending_id": "pending",
            "reverts_id": "events",
            **AGENT,
        },
        ignore=frozenset({"payload"}),  # carries ids, which differ between installs
    ),
    Kind("card_revisions", CardRevision, lambda r, p: _pair(r, "card", "created_at", "content")),
    # The person's decisions about the memory travel with it: do-not-store rules, confidence
    # thresholds per source, and contradictions answered (a "both are true" is never asked again).
    Kind(
        "guard_rules",
        GuardRule,
        # a built-in detector's rule is the same rule whatever it is called
        lambda r, p: (_ext(p, "owners", r["owner_id"]), r.get("detector") or r.get("name")),
        refs={"owner_id": "owners"},
        ignore=frozenset({"updated_at"}),
        optional=True,
    ),
    Kind(
        "thresholds",
        SourceThreshold,
        _threshold_key,
        ignore=frozenset({"updated_at"}),
        optional=True,
    ),
    Kind(
        "contradictions",
        Contradiction,
        lambda r, p: (_ext(p, "facts", r["left_id"]), _ext(p, "facts", r["right_id"])),
        refs={"owner_id": "owners", "left_id": "facts", "right_id": "facts"},
        optional=True,
    ),
    Kind(
        "regression_checks",
        RegressionCheck,
        lambda r, p: _pair(r, "created_at"),
        refs={"owner_id": "owners"},
        ignore=frozenset(
            {"must_include", "must_exclude", "last_run_at", "last_passed", "last_result"}
        ),
    ),
    # The recall log: what each agent was given, and when (replays and "recalled 12 times").
    Kind(
        "recalls",
        RecallLog,
        lambda r, p: _pair(r, "created_at", "caller", "query"),
        refs={"owner_id": "owners", **AGENT},
        ignore=frozenset({"results"}),  # item ids, which differ between installs
        optional=True,
    ),
    Kind(
        "recall_hits",
        RecallHit,
        lambda r, p: (_ext(p, "recalls", r["log_id"]), r.get("rank")),
        refs={"log_id": "recalls"},
        ignore=frozenset({"object_id"}),
        optional=True,
    ),
]
# What a recalled item's kind (retrieval.models.Kind) is in an archive.
RECALLED = {"fact": "facts", "episode": "episodes", "turn": "turns", "attachment": "attachments"}
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}


def app_version() -> str:
    try:
        return version("memory-curator")
    except PackageNotFoundError:
        return "unknown"


# --------------------------------------------------------------------------------------
# Rows <-> records
# --------------------------------------------------------------------------------------


def _json(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, models.fields.files.FieldFile):
        return value.name or ""
    return value


def to_record(kind: Kind, obj: models.Model) -> dict[str, Any]:
    """A row as JSON: every concrete field by attname (secrets aside), m2m links as sorted id
    lists."""
    record = {
        f.attname: _json(getattr(obj, f.attname))
        for f in kind.model._meta.concrete_fields
        if f.attname not in kind.secret
    }
    for name in kind.m2m:
        record[name] = sorted(getattr(obj, name).values_list("pk", flat=True))
    return record


def records(kind: Kind):
    """Every row of a kind, in id order (streamed: turns can be many)."""
    qs = kind.model.objects.order_by("pk")
    if kind.m2m:
        qs = qs.prefetch_related(*kind.m2m)
        return (to_record(kind, obj) for obj in qs)
    return (to_record(kind, obj) for obj in qs.iterator(chunk_size=1000))


# --------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------


def memory_files() -> list[Path]:
    """Every regular file under MEMORY_DIR (cards, their archives), temp files aside."""
    root = Path(settings.MEMORY_DIR)
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.endswith(".tmp"))


def _add_file(zf: zipfile.ZipFile, source: IO[bytes], arcname: str) -> None:
    with zf.open(arcname, "w", force_zip64=True) as out:
        while chunk := source.read(1024 * 1024):
            out.write(chunk)


# --------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------


@dataclass
class ExportResult:
    counts: dict[str, int]
    missing_files: list[str]  # attachment files the database names but the disk lacks


def export(target: str | Path | IO[bytes]) -> ExportResult:
    """Write the archive to a path or a writable binary file; the manifest goes in last.

    Everything is read in one snapshot (memsite/db/snapshot.py), so an export taken while
    agents write is still one consistent state that imports: no turn without its session,
    and card files as they were at that moment (opened then; a later save renames a new
    file in and leaves the opened one as it was).
    """
    counts: dict[str, int] = {}
    missing: list[str] = []
    with read_snapshot(_open_memory_files) as memory:
        try:
            with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for kind in KINDS:
                    counts[kind.name] = _write_rows(zf, kind)
                counts[CARD_FILES] = _write_memory_files(zf, memory)
                counts[ATTACHMENT_FILES] = _write_attachment_files(zf, missing)
                manifest = {
                    "missing_files": missing,
                    "format": FORMAT,
                    "format_version": FORMAT_VERSION,
                    "app_version": app_version(),
                    "created_at": timezone.now().astimezone(UTC).isoformat(),
                    "counts": counts,
                }
                zf.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
        finally:
            for _rel, handle in memory:
                handle.close()
    return ExportResult(counts, missing)


def _write_rows(zf: zipfile.ZipFile, kind: Kind) -> int:
    n = 0
    with zf.open(f"data/{kind.name}.jsonl", "w", force_zip64=True) as out:
        for record in records(kind):
            out.write(json.dumps(record, ensure_ascii=False, sort_keys=True).encode() + b"\n")
            n += 1
    return n


def _open_memory_files() -> list[tuple[str, IO[bytes]]]:
    """Every file under MEMORY_DIR, opened now: at the snapshot's moment (see export)."""
    root = Path(settings.MEMORY_DIR)
    opened = []
    try:
        for path in memory_files():
            try:
                opened.append((path.relative_to(root).as_posix(), path.open("rb")))
            except FileNotFoundError:
                continue  # removed between the listing and the open (an outside edit)
    except BaseException:
        for _rel, handle in opened:
            handle.close()
        raise
    return opened


def _write_memory_files(zf: zipfile.ZipFile, memory: list[tuple[str, IO[bytes]]]) -> int:
    for rel, handle in memory:
        _add_file(zf, handle, MEMORY_PREFIX + rel)
    return len(memory)


def _write_attachment_files(zf: zipfile.ZipFile, missing: list[str]) -> int:
    n = 0
    names = Attachment.objects.exclude(file="").order_by("pk").values_list("file", flat=True)
    for name in dict.fromkeys(names):  # two rows may share a stored file
        try:
            source = default_storage.open(name, "rb")
        except (FileNotFoundError, OSError):
            missing.append(name)  # recorded, not fatal: the row still travels
            continue
        with source:
            _add_file(zf, source, ATTACHMENT_PREFIX + name)
        n += 1
    return n
