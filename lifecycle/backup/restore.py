"""Import: check an archive whole, preview what it would change, then restore or merge it.

Nothing is written before the whole archive has been read and checked (zip integrity,
manifest and format version, every JSON line, counts, references, files). Rows are written
in one transaction; files are staged before it and moved into place only once it has
committed (lifecycle/backup/staging.py), so an import cut short leaves no file without its rows.

Two modes:
- restore: the install holds no memory yet (a blank owner row at most). Every row keeps
  its original id, so links, event payloads and card markers stay valid as they were.
- agents: matched by name in both modes (a restore may find agents made before it). A new
  one is created without a valid token (the archive holds none): the person issues one.
  Rows of an archive made before agents travelled name tokens it lacks: they link to one
  "unknown agent (restored)".
- merge: items are matched by natural key (export.KINDS). A new item is created with a
  new id, and every link to it goes through an id map. An identical item is reused. A
  conflicting item (same key, other content) is never overwritten: the existing one is
  kept, and a `merge` event records the imported version in full, so nothing is lost.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.db import connection, models, transaction
from django.utils.translation import gettext as _

from curator import signals, thresholds
from curator.guard import log as guard_log
from curator.guard import rules as guard
from curator.models import (
    Actor,
    Attachment,
    CardRevision,
    Contradiction,
    ConversationTurn,
    Episode,
    EventType,
    Fact,
    GuardRule,
    MemoryEvent,
    Owner,
    PendingItem,
    Scratchpad,
    Session,
    SourceThreshold,
)
from lifecycle.backup import export, staging
from lifecycle.backup.export import ATTACHMENT_PREFIX, KINDS, KINDS_BY_NAME, MEMORY_PREFIX, Kind
from memsite.core import strictjson, tokens
from memsite.core.links import is_safe_link
from memsite.models import ApiToken
from retrieval import indexing
from retrieval.models import RecallHit, RecallLog, RegressionCheck

NEW, IDENTICAL, CONFLICT = "new", "identical", "conflicting"
RESTORE, MERGE = "restore", "merge"
log = logging.getLogger(__name__)
FILES = "memory_files"  # the preview's row for the card files
AGENTS = "agents"
ALWAYS_IGNORED = frozenset({"id", "updated_at"})


class ArchiveError(Exception):
    """The archive cannot be imported; the message says why, for a person."""


# --------------------------------------------------------------------------------------
# Reading and checking
# --------------------------------------------------------------------------------------


@dataclass
class Archive:
    path: Path
    manifest: dict
    rows: dict[str, list[dict]]  # kind -> records (as exported)
    values: dict[str, list[dict]]  # kind -> the same records as Python field values
    memory_files: list[str]  # paths relative to MEMORY_DIR
    attachment_files: set[str]  # storage names present in the archive

    def record(self, kind: str, pk) -> dict | None:
        return self._index()[kind].get(pk)

    def _index(self) -> dict[str, dict]:
        if not hasattr(self, "_by_id"):
            self._by_id = {k: {r["id"]: r for r in rows} for k, rows in self.rows.items()}
        return self._by_id


def read(path: str | Path) -> Archive:
    """The checked archive, or ArchiveError saying what is wrong (nothing is written)."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()  # reads every member: catches truncation and bit rot
            if bad is not None:
                raise ArchiveError(_("The archive is damaged (%(name)s).") % {"name": bad})
            return _read_members(path, zf)
    # Python's own messages ("File is not a zip file") are English and say nothing more
    # than these; the detail goes to the log.
    except zipfile.BadZipFile as exc:
        log.info("import %s: %s", path.name, exc)
        raise ArchiveError(
            _("This file is not a zip archive: choose a Memory Curator export.")
        ) from exc
    except (zlib.error, EOFError) as exc:
        log.info("import %s: %s", path.name, exc)
        raise ArchiveError(_("The archive is damaged or truncated.")) from exc
    except OSError as exc:
        log.warning("import %s: %s", path.name, exc)
        raise ArchiveError(_("The archive could not be read from the disk.")) from exc


def _read_members(path: Path, zf: zipfile.ZipFile) -> Archive:
    manifest = _manifest(zf)
    counts = manifest["counts"]
    rows, values = {}, {}
    for kind in KINDS:
        rows[kind.name], values[kind.name] = _read_kind(zf, kind, counts)
    found = Archive(path, manifest, rows, values, [], set())
    _check_references(found)
    names = zf.namelist()
    found.memory_files = [_safe(n[len(MEMORY_PREFIX) :]) for n in names if _is(n, MEMORY_PREFIX)]
    found.attachment_files = {
        _safe(n[len(ATTACHMENT_PREFIX) :]) for n in names if _is(n, ATTACHMENT_PREFIX)
    }
    _check_files(found, counts)
    return found


def _is(name: str, prefix: str) -> bool:
    return name.startswith(prefix) and not name.endswith("/")


def _manifest(zf: zipfile.ZipFile) -> dict:
    try:
        manifest = json.loads(zf.read("manifest.json"))
    except KeyError:
        raise ArchiveError(_("The archive has no manifest.json.")) from None
    except (ValueError, UnicodeDecodeError):
        raise ArchiveError(_("manifest.json is not valid JSON.")) from None
    if not isinstance(manifest, dict) or manifest.get("format") != export.FORMAT:
        raise ArchiveError(_("This is not a Memory Curator archive."))
    got = manifest.get("format_version")
    if got != export.FORMAT_VERSION:
        raise ArchiveError(
            _("The archive has format version %(got)s; this install reads version %(want)s.")
            % {"got": got, "want": export.FORMAT_VERSION}
        )
    counts = manifest.get("counts")
    wanted = [k.name for k in KINDS if not k.optional]
    wanted += [export.CARD_FILES, export.ATTACHMENT_FILES]
    if not isinstance(counts, dict) or not all(isinstance(counts.get(k), int) for k in wanted):
        raise ArchiveError(_("The manifest's counts are missing or invalid."))
    if not all(isinstance(counts.get(k.name, 0), int) for k in KINDS):
        raise ArchiveError(_("The manifest's counts are missing or invalid."))
    return manifest


def _read_kind(zf: zipfile.ZipFile, kind: Kind, counts: dict) -> tuple[list, list]:
    name = f"data/{kind.name}.jsonl"
    try:
        raw = zf.read(name)
    except KeyError:
        if kind.optional and kind.name not in counts:
            return [], []  # exported before the kind was added
        raise ArchiveError(_("The archive lacks %(name)s.") % {"name": name}) from None
    rows, values, seen = [], [], set()
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        record = _parse_line(line, name, number)
        if record["id"] in seen:
            raise ArchiveError(
                _("%(name)s line %(n)s repeats an id.") % {"name": name, "n": number}
            )
        seen.add(record["id"])
        rows.append(record)
        values.append(_values(kind, record, name, number))
    if len(rows) != counts.get(kind.name, 0):
        raise ArchiveError(
            _("%(name)s holds %(got)s rows but the manifest says %(want)s.")
            % {"name": name, "got": len(rows), "want": counts[kind.name]}
        )
    return rows, values


def _parse_line(line: bytes, name: str, number: int) -> dict:
    try:
        record = strictjson.loads(line)
    except (ValueError, UnicodeDecodeError):
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("id"), int):
        raise ArchiveError(
            _("%(name)s line %(n)s is not a valid record.") % {"name": name, "n": number}
        )
    return record


def _values(kind: Kind, record: dict, name: str, number: int) -> dict[str, Any]:
    """Field values as the model takes them; unknown keys (a newer exporter) are ignored."""
    values = {}
    for f in kind.model._meta.concrete_fields:
        if f.attname not in record or f.attname in kind.secret:
            continue
        try:
            value = f.to_python(record[f.attname])
            if value is None and not f.null and not isinstance(f, models.AutoField):
                raise ValidationError("null")
            if isinstance(f, models.URLField) and value:
                _check_url(f, value)
        except (ValidationError, TypeError, ValueError):
            raise ArchiveError(
                _("%(name)s line %(n)s: the value of %(field)s is invalid.")
                % {"name": name, "n": number, "field": f.attname}
            ) from None
        values[f.attname] = value
    for m2m in kind.m2m:
        ids = record.get(m2m, [])
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise ArchiveError(
                _("%(name)s line %(n)s: the value of %(field)s is invalid.")
                % {"name": name, "n": number, "field": m2m}
            )
    return values


def _check_url(f: models.URLField, value: str) -> None:
    """An archive is not trusted: a URL must be what the field accepts (or a mailto link),
    never javascript: or data: (pages show those as text anyway, see memsite/links.py)."""
    if not is_safe_link(value):
        f.run_validators(value)


def _check_references(found: Archive) -> None:
    """A required link must point at a row of the archive; optional ones may dangle."""
    for kind in KINDS:
        for record in found.rows[kind.name]:
            for att, target in kind.refs.items():
                ref = kind.model._meta.get_field(att.removesuffix("_id"))
                pk = record.get(att)
                if not ref.null and (pk is None or found.record(target, pk) is None):
                    raise ArchiveError(
                        _("A row of %(kind)s refers to a missing %(target)s row (%(pk)s).")
                        % {"kind": kind.name, "target": target, "pk": pk}
                    )


def _safe(name: str) -> str:
    """A relative path that stays inside its folder (no absolute paths, no '..')."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\\" in name:
        raise ArchiveError(_("The archive holds an unsafe file name: %(name)s") % {"name": name})
    return path.as_posix()


def _check_files(found: Archive, counts: dict) -> None:
    if len(found.memory_files) != counts[export.CARD_FILES]:
        raise ArchiveError(_("The number of card files does not match the manifest."))
    if len(found.attachment_files) != counts[export.ATTACHMENT_FILES]:
        raise ArchiveError(_("The number of attachment files does not match the manifest."))
    known_missing = set(found.manifest.get("missing_files") or [])
    for record in found.rows["attachments"]:
        name = record.get("file") or ""
        if name and _safe(name) not in found.attachment_files and name not in known_missing:
            raise ArchiveError(
                _("The attachment file %(name)s is missing from the archive.") % {"name": name}
            )


# --------------------------------------------------------------------------------------
# Planning (the preview)
# --------------------------------------------------------------------------------------

EMPTY_MODELS = (
    Fact,
    PendingItem,
    Session,
    ConversationTurn,
    Episode,
    Attachment,
    MemoryEvent,
    CardRevision,
    RegressionCheck,
)


def install_is_empty() -> bool:
    """No memory yet: at most blank owner / scratchpad rows, and no card files."""
    if any(model.objects.exists() for model in EMPTY_MODELS):
        return False
    if any(
        o.display_name or o.identity_confirmed or o.onboarding_draft for o in Owner.objects.all()
    ):
        return False
    if any(p.content or p.current_focus for p in Scratchpad.objects.all()):
        return False
    return not export.memory_files()


@dataclass
class Decision:
    record: dict
    values: dict
    status: str
    existing: int | None = None  # pk of the matching local row


@dataclass
class Plan:
    mode: str
    decisions: dict[str, list[Decision]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # memory file -> status

    def counts(self) -> list[dict[str, Any]]:
        """One row per kind: new / identical / conflicting, for the table and the command."""
        table = []
        for name, decisions in self.decisions.items():
            table.append({"kind": name, **_tally(d.status for d in decisions)})
        table.append({"kind": FILES, **_tally(self.files.values())})
        return table

    @property
    def conflicts(self) -> int:
        return sum(row[CONFLICT] for row in self.counts())


def _tally(statuses) -> dict[str, int]:
    tally = {NEW: 0, IDENTICAL: 0, CONFLICT: 0}
    for status in statuses:
        tally[status] += 1
    return tally


def plan(found: Archive) -> Plan:
    """What an import would do now, without writing anything."""
    mode = RESTORE if install_is_empty() else MERGE
    result = Plan(mode)
    local = _local_index() if mode == MERGE else {AGENTS: _local_rows(KINDS_BY_NAME[AGENTS])}
    for kind in KINDS:
        decisions = _decide_kind(kind, found, local, mode)
        result.decisions[kind.name] = [d for d in decisions if _importable(kind, d.values, found)]
    result.files = {rel: _file_status(rel, found) for rel in found.memory_files}
    return result


def _local_index() -> dict[str, dict]:
    return {k.name: _local_rows(k) for k in KINDS}


def _local_rows(kind: Kind) -> dict[int, dict]:
    return {r["id"]: r for r in export.records(kind)}


def _compared(kind: Kind, record: dict) -> dict:
    skip = ALWAYS_IGNORED | kind.ignore | set(kind.refs) | set(kind.m2m)
    return {k: v for k, v in record.items() if k not in skip}


def _decide_kind(kind: Kind, found: Archive, local: dict, mode: str) -> list[Decision]:
    if mode == RESTORE and kind.name != AGENTS:
        blank = _blank_rows(kind)
        return [
            Decision(r, v, NEW, blank.get(kind.key(r, found.record)))
            for r, v in zip(found.rows[kind.name], found.values[kind.name], strict=True)
        ]
    mine = local[kind.name]
    by_key = {kind.key(r, lambda k, pk: local[k].get(pk)): r for r in mine.values()}
    decisions = []
    for record, values in zip(found.rows[kind.name], found.values[kind.name], strict=True):
        existing = by_key.get(kind.key(record, found.record))
        if existing is None:
            decisions.append(Decision(record, values, NEW))
            continue
        same = _compared(kind, existing) == _compared(kind, record)
        decisions.append(Decision(record, values, IDENTICAL if same else CONFLICT, existing["id"]))
    return decisions


def _guard_hit(kind: Kind, values: dict, matchers: list) -> guard.Hit | None:
    """The guardrail an archived fact or review item's candidate matches. A mask in its text
    is the person's own (an edit, a redacted item), not a secret to stop."""
    item = values if kind.model is Fact else values.get("candidate") or {}
    fields = {
        "content": str(item.get("content") or ""),
        "subject": str(item.get("subject") or ""),
        "predicate": str(item.get("predicate") or ""),
        "tags": " ".join(str(t) for t in item.get("tags") or []),
    }
    kind_of = {"type": str(item.get("type") or ""), "scope": str(item.get("scope") or "")}
    return guard.check_candidate(fields, **kind_of, agent=None, matchers=matchers, masked_ok=True)


def _importable(kind: Kind, values: dict, found: Archive) -> bool:
    """Thresholds of an agent the archive does not carry (made before agents travelled)
    would apply to whichever agent has that id here: they stay behind."""
    if kind.model is not SourceThreshold:
        return True
    agent = thresholds.token_of(values.get("source", ""))
    return agent is None or found.record(AGENTS, agent) is not None


def _blank_rows(kind: Kind) -> dict[tuple, int]:
    """In an empty install, the rows an archive row replaces: the blank owner / scratchpad,
    built-in guardrails created on first use, thresholds set before the restore."""
    if kind.model is Owner:
        return {(o.key,): o.pk for o in Owner.objects.all()}
    if kind.model is Scratchpad:
        return {((p.owner.key,),): p.pk for p in Scratchpad.objects.select_related("owner")}
    if kind.model is GuardRule:
        rules = GuardRule.objects.select_related("owner")
        return {((r.owner.key,), r.detector or r.name): r.pk for r in rules}
    if kind.model is SourceThreshold:
        agents = _local_rows(KINDS_BY_NAME[AGENTS])
        local = export.records(kind)
        return {kind.key(r, lambda _k, pk: agents.get(pk)): r["id"] for r in local}
    return {}


def _file_status(rel: str, found: Archive) -> str:
    target = Path(settings.MEMORY_DIR) / rel
    if not target.exists():
        return NEW
    with zipfile.ZipFile(found.path) as zf:
        return IDENTICAL if zf.read(MEMORY_PREFIX + rel) == target.read_bytes() else CONFLICT


# --------------------------------------------------------------------------------------
# Applying
# --------------------------------------------------------------------------------------


@dataclass
class Report:
    mode: str
    import_id: str
    counts: list[dict[str, Any]]
    events: int = 0
    indexed: int | None = None
    index_error: str = ""
    blocked: int = 0  # merge: facts and review items the guardrails kept out
    dry_run: bool = False  # everything ran, checks included, then rolled back


class _DryRun(Exception):
    """Rolls a dry run's transaction back once every check has passed."""


class _Apply:
    """One import run: the id map, the files it stages, the events recorded."""

    def __init__(self, found: Archive, the_plan: Plan, import_id: str, files: staging.Staging):
        self.found, self.plan, self.import_id = found, the_plan, import_id
        self.staging = files
        self.restore = the_plan.mode == RESTORE
        self.ids: dict[str, dict[int, int]] = {k.name: {} for k in KINDS}
        self.created: dict[str, list[tuple[Decision, models.Model]]] = {}
        self.staged_memory: dict[str, str] = {}  # memory file -> its path in the staging folder
        self.staged_attachments: dict[str, str] = {}  # archived file name -> the same
        self.events = 0
        # Merge: this install's guardrails hold for what an archive brings, as for any source.
        # A restore brings the archive's own rules and the memory exactly as it was.
        self.matchers = None if self.restore else guard.active()
        self.blocked: dict[str, set[int]] = {k.name: set() for k in KINDS}
        self.unknown_agent: int | None = None

    # rows -----------------------------------------------------------------------------

    def rows(self) -> None:
        for kind in KINDS:
            self.created[kind.name] = []
            for decision in self.plan.decisions[kind.name]:
                self._row(kind, decision)
            self._self_links(kind)
        for kind in KINDS:
            self._links(kind)

    def _row(self, kind: Kind, decision: Decision) -> None:
        src = decision.record["id"]
        if decision.status != NEW:
            self.ids[kind.name][src] = decision.existing
            if decision.status == CONFLICT:
                self._conflict_event(kind, decision)
            return
        if self._stopped(kind, decision):
            return
        values = self._mapped(kind, decision.values, defer_self=True)
        if kind.model is RecallHit and (values["object_id"] is None or values["log_id"] is None):
            return  # its item or its recall was not imported
        if decision.existing is not None:  # restore over a blank owner / scratchpad row
            obj = kind.model.objects.get(pk=decision.existing)
            values.pop("id", None)  # the blank row keeps its id; links use the id map
            for name, value in values.items():
                setattr(obj, name, value)
            obj.save()
        else:
            obj = kind.model(**values)
            obj.save(force_insert=True)
        self._keep_auto_times(kind, obj, decision.values)
        self.ids[kind.name][src] = obj.pk
        self.created[kind.name].append((decision, obj))

    def _stopped(self, kind: Kind, decision: Decision) -> bool:
        """A new fact or review item a guardrail matches stays out (logged as blocked), and so
        do the events and contradictions about it: their payloads quote its text."""
        if self.matchers is None:
            return False
        if kind.model in (Fact, PendingItem):
            hit = _guard_hit(kind, decision.values, self.matchers)
            if hit is not None:
                owner = Owner.objects.get(pk=self.ids["owners"][decision.values["owner_id"]])
                guard_log.record_block(
                    hit, owner=owner, actor=Actor.PERSON, source="import", event=None
                )
                self.blocked[kind.name].add(decision.record["id"])
            return hit is not None
        if kind.model not in (MemoryEvent, Contradiction):
            return False
        refs = kind.refs.items()
        return any(decision.values.get(att) in self.blocked[to] for att, to in refs)

    def _mapped(self, kind: Kind, values: dict, defer_self: bool = False) -> dict:
        """Field values with links through the id map (a restore keeps the original ids)."""
        values = dict(values)
        if not self.restore:
            values.pop("id", None)
        for att, target in kind.refs.items():
            pk = values.get(att)
            if pk is None:
                continue
            if defer_self and target == kind.name:
                values[att] = None  # set once every row of the kind exists
            elif target == AGENTS:
                values[att] = self._agent_id(pk)
            else:
                values[att] = self.ids[target].get(pk)
        if kind.model is ApiToken:
            values.update(self._tokenless())
        if self.restore and kind.model in (ApiToken, RecallLog, RecallHit):
            # rows an install makes before any memory (agents, searches): the archive's id
            # when it is free here, else a new one (links follow the id map)
            if kind.model.objects.filter(pk=values.get("id")).exists():
                values["id"] = None
        if kind.model is RecallLog and not self.restore:
            values["results"] = [
                {**item, "id": pk}
                for item in values.get("results") or []
                if isinstance(item, dict)
                and (pk := self._recalled(item.get("kind"), item.get("id"))) is not None
            ]
        if kind.model is RecallHit and not self.restore:
            values["object_id"] = self._recalled(values.get("kind"), values.get("object_id"))
        if kind.model is RegressionCheck and not self.restore:
            for name in ("must_include", "must_exclude"):
                values[name] = self._fact_ids(values.get(name) or [])
        if kind.model is MemoryEvent and not self.restore:
            values["payload"] = self._event_ids(self._payload(values.get("payload") or {}))
        if kind.model in (GuardRule, SourceThreshold):
            values.pop("id", None)  # nothing links to them, and a restore may find local ones
        if kind.model is GuardRule:  # an agent the archive lacks: the rule guards every source
            agents = [self.ids[AGENTS].get(pk) for pk in values.get("agents") or []]
            values["agents"] = sorted(pk for pk in agents if pk is not None)
        if kind.model is SourceThreshold:
            agent = thresholds.token_of(values.get("source") or "")
            if agent is not None:
                values["source"] = f"{thresholds.TOKEN}{self.ids[AGENTS][agent]}"
        if kind.model is Contradiction and values["left_id"] > values["right_id"]:
            values["left_id"], values["right_id"] = values["right_id"], values["left_id"]
        return values

    def _tokenless(self) -> dict:
        """A new agent's token fields: no secret that any token hashes to."""
        return {"digest": tokens.no_token_digest(), "prefix": ""}

    def _recalled(self, kind, pk) -> int | None:
        """A recalled item's id here (None: not imported, e.g. kept out by a guardrail)."""
        target = export.RECALLED.get(kind)
        return self.ids[target].get(pk) if target else None

    def _agent_id(self, pk: int) -> int:
        """The agent a row names, here; one the archive lacks (an archive made before agents
        travelled, whose tokens stayed behind) is the one "unknown agent (restored)"."""
        mapped = self.ids[AGENTS].get(pk)
        return mapped if mapped is not None else self._unknown_agent()

    def _unknown_agent(self) -> int:
        if self.unknown_agent is None:
            self.unknown_agent = tokens.unknown_agent().pk
        return self.unknown_agent

    def _keep_auto_times(self, kind: Kind, obj, values: dict) -> None:
        """auto_now / auto_now_add fields were stamped with now: put the archived times back."""
        times = {
            f.attname: values[f.attname]
            for f in kind.model._meta.concrete_fields
            if (getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False))
            and values.get(f.attname) is not None
        }
        if times:
            kind.model.objects.filter(pk=obj.pk).update(**times)

    def _self_links(self, kind: Kind) -> None:
        for att, target in kind.refs.items():
            if target != kind.name:
                continue
            for decision, obj in self.created[kind.name]:
                pk = decision.values.get(att)
                mapped = self.ids[kind.name].get(pk) if pk is not None else None
                if mapped is None:
                    continue
                if kind.model is Fact and Fact.objects.filter(supersedes_id=mapped).exists():
                    continue  # one successor per fact: the local chain wins, the link is dropped
                kind.model.objects.filter(pk=obj.pk).update(**{att: mapped})

    def _links(self, kind: Kind) -> None:
        for name, target in kind.m2m.items():
            for decision, obj in self.created[kind.name]:
                ids = [self.ids[target].get(pk) for pk in decision.record.get(name, [])]
                getattr(obj, name).set([pk for pk in ids if pk is not None])

    def _fact_ids(self, ids: list) -> list:
        return [self.ids["facts"][i] for i in ids if i in self.ids["facts"]]

    def _payload(self, payload: Any) -> Any:
        """Ids inside an event's payload (undo reads them) follow the id map; unknown -> None."""
        if isinstance(payload, list):
            return [self._payload(item) for item in payload]
        if not isinstance(payload, dict):
            return payload
        out = {k: self._payload(v) for k, v in payload.items()}
        kind = {"fact": "facts", "pending": "pending"}.get(payload.get("kind"))
        if kind and isinstance(payload.get("id"), int):
            out["id"] = self.ids[kind].get(payload["id"])
        for key in ("before", "after"):
            snap = payload.get(key)
            if isinstance(snap, dict) and "content" in snap:  # a fact snapshot
                for name in ("id", "supersedes"):
                    if isinstance(snap.get(name), int):
                        out[key][name] = self.ids["facts"].get(snap[name])
        return out

    def _event_ids(self, payload: Any) -> Any:
        """The episode / attachment an edit event names (its top-level key) follows too."""
        if isinstance(payload, dict):
            for key, kind in (("episode", "episodes"), ("attachment", "attachments")):
                if isinstance(payload.get(key), int):
                    payload[key] = self.ids[kind].get(payload[key])
        return payload

    def _conflict_event(self, kind: Kind, decision: Decision) -> None:
        """Keep the local row; the imported version goes into the log, whole."""
        owner_src = decision.record.get("owner_id")
        owner_pk = self.ids["owners"].get(owner_src) if owner_src is not None else None
        MemoryEvent.objects.create(
            owner_id=owner_pk or Owner.default().pk,
            event_type=EventType.MERGE,
            operation_id=f"import:{self.import_id}:{kind.name}:{decision.record['id']}",
            actor=Actor.PERSON,
            fact_id=decision.existing if kind.model is Fact else None,
            pending_id=decision.existing if kind.model is PendingItem else None,
            payload=self._event_payload(kind.name, decision.existing, decision.record),
        )
        self.events += 1

    def _event_payload(self, kind: str, existing, imported) -> dict:
        return {
            "import": self.import_id,
            "kind": f"import:{kind}",
            "decision": "kept_existing",
            "existing_id": existing,
            "imported": imported,
            "changes": [],  # nothing changed locally: undo has nothing to do
        }

    # files ----------------------------------------------------------------------------

    def stage(self, zf: zipfile.ZipFile) -> None:
        """Before the transaction: copy out every file the import adds (staging.py)."""
        self.staged_memory = {
            rel: self._stage(zf, MEMORY_PREFIX + rel, staging.MEMORY, rel)
            for rel, status in self.plan.files.items()
            if status == NEW
        }
        names = {
            d.record.get("file") for d in self.plan.decisions["attachments"] if d.status == NEW
        }
        self.staged_attachments = {
            name: self._stage(zf, ATTACHMENT_PREFIX + name, staging.ATTACHMENTS, name)
            for name in sorted(n for n in names if n in self.found.attachment_files)
        }

    def _stage(self, zf: zipfile.ZipFile, member: str, area: str, name: str) -> str:
        with zf.open(member) as source:
            return self.staging.stage(source, area, name)

    def files(self, zf: zipfile.ZipFile) -> None:
        """Inside the transaction: plan the moves, record the conflicting files."""
        for rel, status in self.plan.files.items():
            if status == NEW:
                self.staging.moves.append(
                    staging.Move(staging.MEMORY, rel, self.staged_memory[rel])
                )
            elif status == CONFLICT:
                text = zf.read(MEMORY_PREFIX + rel).decode("utf-8", errors="replace")
                MemoryEvent.objects.create(
                    owner=Owner.default(),
                    event_type=EventType.MERGE,
                    operation_id=f"import:{self.import_id}:file:{rel}"[:200],
                    actor=Actor.PERSON,
                    payload={**self._event_payload("file", None, text), "path": rel},
                )
                self.events += 1
        rows_by_name: dict[str, list[int]] = {}
        for decision, obj in self.created["attachments"]:
            name = decision.record.get("file") or ""
            if name in self.staged_attachments:
                rows_by_name.setdefault(name, []).append(obj.pk)
            elif name:
                Attachment.objects.filter(pk=obj.pk).update(file="")  # lost before the export
        for name, pks in rows_by_name.items():  # two rows may share one stored file
            self._attachment_file(name, pks)

    def _attachment_file(self, name: str, pks: list[int]) -> None:
        """Stored under its old name when free (a restore), else the storage picks one."""
        final = self._free_name(name)
        move = staging.Move(staging.ATTACHMENTS, final, self.staged_attachments[name], pks)
        self.staging.moves.append(move)
        if final != name:
            Attachment.objects.filter(pk__in=pks).update(file=final)

    def _free_name(self, name: str) -> str:
        """A name no stored file and no other file of this import has."""
        max_length = Attachment._meta.get_field("file").max_length
        taken = self.staging.planned(staging.ATTACHMENTS)
        candidate = default_storage.get_available_name(name, max_length=max_length)
        while candidate in taken:
            root, ext = os.path.splitext(name)
            alternative = default_storage.get_alternative_name(root, ext)
            candidate = default_storage.get_available_name(alternative, max_length=max_length)
        return candidate


def apply(
    found: Archive, the_plan: Plan | None = None, *, reindex: bool = True, dry_run: bool = False
) -> Report:
    """Import the checked archive as planned (a fresh plan when none is given).

    Files are staged first and moved into place only after the commit (lifecycle/backup/staging.py):
    a failure, or a kill -9, never leaves a file without its rows, nor rows without files.
    A dry run is this very import, the link check included, rolled back at the end: it fails
    exactly when the import would.
    """
    staging.recover()  # what an interrupted import left goes (or is finished) first
    the_plan = the_plan or plan(found)
    if the_plan.mode == MERGE and _made_builtin_rules():
        the_plan = plan(found)  # the archive's built-in rules now match the ones just made
    run = _Apply(found, the_plan, uuid.uuid4().hex[:12], staging.Staging())
    try:
        with zipfile.ZipFile(found.path) as zf:
            run.stage(zf)
            # durable: the files are moved in right after this block, so it must really commit
            with transaction.atomic(durable=True):
                run.rows()
                run.files(zf)
                check_links()
                run.staging.commit_marker()
                # The cards are built from the facts: merged ones reach them within seconds.
                # A restore brings the cards as the archive has them, which is what it promises
                # (export -> restore -> export gives the same records).
                if not run.restore:
                    signals.facts(obj.pk for _decision, obj in run.created.get("facts", []))
                if dry_run:
                    raise _DryRun
    except _DryRun:
        run.staging.close()  # rolled back: nothing was written, the staged files go
        report = Report(the_plan.mode, run.import_id, the_plan.counts(), run.events, dry_run=True)
        report.blocked = sum(len(ids) for ids in run.blocked.values())
        return report
    except BaseException:
        run.staging.close()  # the rows rolled back; the staged files go with them
        raise
    run.staging.publish()
    report = Report(the_plan.mode, run.import_id, the_plan.counts(), run.events)
    report.blocked = sum(len(ids) for ids in run.blocked.values())
    if reindex:
        _reindex(report)
    return report


def _made_builtin_rules() -> bool:
    """A merge checks what it brings against this install's guardrails, whose built-in rules
    are made on first use: made now, before the rows, not halfway through them."""
    before = GuardRule.objects.count()
    guard.active()
    return GuardRule.objects.count() != before


def check_links() -> None:
    """SQLite checks foreign keys at the commit, where a failure only says "FOREIGN KEY
    constraint failed": check the imported tables now, inside the transaction, and say which
    link is broken (the transaction then rolls back, as the commit would have)."""
    tables = {k.model._meta.db_table for k in KINDS}
    tables |= {getattr(k.model, m).through._meta.db_table for k in KINDS for m in k.m2m}
    broken = []
    with connection.cursor() as cursor:
        for table in sorted(tables):
            cursor.execute(f'PRAGMA foreign_key_check("{table}")')
            broken += cursor.fetchall()
    if broken:
        table, rowid, parent, _fk = broken[0]
        raise ArchiveError(
            _(
                "The archive's rows do not fit together: %(n)s row(s) refer to rows that do "
                "not exist (the first: row %(row)s of %(table)s, linking to %(parent)s). "
                "Nothing was imported."
            )
            % {"n": len(broken), "row": rowid, "table": table, "parent": parent}
        )


def _reindex(report: Report) -> None:
    """Rebuild the search indexes from the imported rows (the archive carries none)."""

    try:
        report.indexed = indexing.index_all()
    except Exception as exc:  # the data is in; a reindex can be run again by hand
        report.index_error = str(exc)


def import_archive(path: str | Path, *, reindex: bool = True) -> Report:
    """Check, plan and apply in one call (what a restore into an empty install does)."""
    found = read(path)
    return apply(found, plan(found), reindex=reindex)
