"""Constants, results and errors, snapshots, and the unit of work that records one event."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils.translation import gettext as _

from curator import signals
from curator.models import (
    Fact,
    FactType,
    MemoryEvent,
    Owner,
    PendingItem,
    PendingStatus,
    Priority,
)

WRITTEN, PENDING, BOOSTED, SUPERSEDED, DROPPED, DELETED, BLOCKED = (
    "written",
    "pending",
    "boosted",
    "superseded",
    "dropped",
    "deleted",
    "blocked",
)
MAX_CONTENT = 2000
MAX_LABEL = 200
MAX_TAGS = 20
MAX_TAG = 50
# A repeat moves confidence a quarter of the way to 1 (weighted by how sure the repeat is),
# never past the cap: only a person's confirmation makes a fact certain.
BOOST_STEP = 0.25
CONFIDENCE_CAP = 0.99
# Seed 001: an extractor's `duration` maps to a retention class and an explicit expiry.
DURATIONS: dict[str, tuple[str, timedelta | None]] = {
    "permanent": (Priority.PERMANENT, None),
    "7d": (Priority.SHORT_TERM, timedelta(days=7)),
    "24h": (Priority.TRANSIENT, timedelta(hours=24)),
    "session": (Priority.TRANSIENT, timedelta(days=1)),
}
# Seed 001's default retention per type when neither priority nor duration is given.
DEFAULT_RETENTION = {
    FactType.PREFERENCE: "permanent",
    FactType.SKILL: "permanent",
    FactType.IDENTITY: "permanent",
    FactType.RULE: "permanent",
    FactType.CONSTRAINT: "permanent",
    FactType.ERROR: "7d",
}
# Fields a snapshot carries; undo restores exactly these.
FACT_FIELDS = (
    "content",
    "subject",
    "predicate",
    "type",
    "scope",
    "confidence",
    "importance",
    "priority",
    "expires_at",
    "status",
    "verified",
    "tags",
    "hit_count",
)
# Status and repeat count change only through their own actions (archive, boost ...).
EDITABLE = frozenset(FACT_FIELDS) - {"status", "hit_count"}
OPEN = (PendingStatus.PENDING, PendingStatus.SNOOZED)


# --------------------------------------------------------------------------------------
# Public data and errors
# --------------------------------------------------------------------------------------


@dataclass
class Candidate:
    content: str
    subject: str = ""
    predicate: str = ""
    type: str = "fact"
    scope: str = "user"
    confidence: float = 0.9
    importance: float = 0.5
    priority: str | None = None
    duration: str | None = None
    tags: list[str] = field(default_factory=list)
    source: str = "api"
    source_turn_id: int | None = None
    verified: bool = False
    delete_fact_id: int | None = None
    # A retention chosen by the person on the review card (curator.retention) or by an agent
    # ("until Friday"): an expiry date (wins over the priority's), or "let it decay" (long
    # term, no date).
    expires_at: Any = None
    decays: bool = False
    # A job's reason for a removal as a code and values (curator.generated.DELETION_WHYS),
    # shown in the reader's language; `content` keeps it in words for older readers.
    why_code: str = ""
    why_params: dict = field(default_factory=dict)
    # The API token that proposed it (the agent, today): calibration and per-source
    # thresholds tell agents apart by it.
    token_id: int | None = None


@dataclass
class Result:
    outcome: str
    fact: Fact | None
    pending: PendingItem | None
    event: MemoryEvent
    replayed: bool = False


class WritePathError(ValueError):
    """A refusal a person or an agent can read; `code` is stable for the API."""

    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None):
        super().__init__(message)
        self.code = code or self.code
        self.field = field


class InvalidCandidate(WritePathError):
    """Input that cannot become a memory (empty, too long, out of range, unknown choice)."""


class Blocked(InvalidCandidate):
    """A do-not-store rule matched the change (an edit or a confirmation): nothing was saved;
    the rule is named, the matched text is not."""

    code = "blocked"

    def __init__(self, rule: str, field: str = "content"):
        super().__init__(
            _("Not saved: the guardrail “%(rule)s” does not let this be stored.") % {"rule": rule},
            field=field or "content",
        )
        self.rule = rule


class StaleEdit(WritePathError):
    """The fact changed since the editor loaded it; `fact` is the current version."""

    code = "stale_edit"

    def __init__(self, fact: Fact):
        super().__init__(_("This fact changed since you opened it."), field="content")
        self.fact = fact


class AlreadyResolved(WritePathError):
    code = "already_resolved"


class OperationConflict(WritePathError):
    """An operation id reused for a different request: replaying the first outcome would
    silently drop the new content (turns answer the same way: 409)."""

    code = "operation_conflict"

    def __init__(self, operation_id: str):
        super().__init__(
            _(
                "Operation id “%(id)s” was already used for a different memory; "
                "use a new operation id for new content."
            )
            % {"id": operation_id},
            field="operation_id",
        )


class MootPending(WritePathError):
    """The fact a pending item is about changed meanwhile; applying it would be silent."""

    code = "moot"


class ActiveConflict(WritePathError):
    """Another active fact already holds this subject + predicate; `fact` is that one."""

    code = "active_conflict"

    def __init__(self, message: str, fact: Fact):
        super().__init__(message, field="predicate")
        self.fact = fact


class NotAllowed(WritePathError):
    code = "not_allowed"


# --------------------------------------------------------------------------------------
# Snapshots and the unit of work that records changes
# --------------------------------------------------------------------------------------


def json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return list(value) if isinstance(value, tuple) else value


def snapshot(fact: Fact) -> dict[str, Any]:
    """A fact as events carry it: enough to show a diff and to restore it."""
    data = {name: json_value(getattr(fact, name)) for name in FACT_FIELDS}
    return {"id": fact.pk, **data, "supersedes": fact.supersedes_id}


def pending_snapshot(item: PendingItem) -> dict[str, Any]:
    return {
        "id": item.pk,
        "status": item.status,
        "cooldown_until": json_value(item.cooldown_until),
        "resulting_fact": item.resulting_fact_id,
        "confidence": item.confidence,
        # only a redaction changes it (curator/guard/stored.py); undo puts it back whole
        "candidate": dict(item.candidate or {}),
    }


def _diff(before: dict | None, after: dict) -> tuple[dict | None, dict]:
    if before is None:
        return None, {"status": after["status"]}
    keys = [k for k in after if k not in ("id", "supersedes") and before.get(k) != after[k]]
    return {k: before.get(k) for k in keys}, {k: after[k] for k in keys}


class Work:
    """Collects what one operation changed, then writes its single event.

    `agent_id` is the agent (API token) whose request this is; the event records it.
    """

    def __init__(
        self,
        owner: Owner,
        actor: str,
        *,
        job_run: str = "",
        batch: str = "",
        at=None,
        agent_id: int | None = None,
    ):
        self.owner, self.actor, self.job_run, self.batch = owner, actor, job_run, batch
        self.agent_id = agent_id
        self.at = at  # when it happened, for history recorded afterwards (the demo's 60 days)
        self.changes: list[dict] = []
        self.fact_ids: set[int] = set()
        self.saved: dict[int, Fact] = {}  # the facts as saved, by id (for the keyword index)
        self.request = ""  # the fingerprint of what an operation id was first used for

    def fact(self, fact: Fact, before: dict | None) -> None:
        """Record a saved fact against its snapshot from before the change (None = new)."""
        old, new = _diff(before, snapshot(fact))
        if before is None or new:
            self.changes.append({"kind": "fact", "id": fact.pk, "before": old, "after": new})
            self.fact_ids.add(fact.pk)
            self.saved[fact.pk] = fact

    def pending(self, item: PendingItem, before: dict | None) -> None:
        old, new = _diff(before, pending_snapshot(item))
        if before is None or new:
            self.changes.append({"kind": "pending", "id": item.pk, "before": old, "after": new})

    def record(self, kind: str, pk: int, before: dict | None, after: dict) -> None:
        """A row whose fields changed (`after` from after the save; `before` None: new).

        A fact recorded this way is announced like one recorded with `fact()`: whoever
        records a fact change (the demo's backdated history too) must not leave the cards
        and the index behind."""
        old, new = _diff(before, after)
        if new:
            self.changes.append({"kind": kind, "id": pk, "before": old, "after": new})
            if kind == "fact":
                self.fact_ids.add(pk)

    def event(self, event_type: str, *, operation_id=None, fact=None, pending=None, **payload):
        event = MemoryEvent.objects.create(
            owner=self.owner,
            event_type=event_type,
            operation_id=operation_id or None,
            actor=self.actor,
            agent_id=self.agent_id,
            fact=fact,
            pending=pending,
            job_run=self.job_run,
            batch=self.batch,
            reverts=payload.pop("reverts", None),
            payload={**payload, "changes": self.changes, **self._request(operation_id)},
            **({"created_at": self.at} if self.at else {}),
        )
        for fact_id in self.fact_ids:
            signals.changed("fact", fact_id, self.saved.get(fact_id))
        signals.facts(self.fact_ids)
        return event

    def _request(self, operation_id) -> dict:
        return {"request": self.request} if operation_id and self.request else {}


def record_edit(
    obj,
    kind: str,
    event_type: str,
    before: dict,
    after: dict,
    changed: dict,
    *,
    quote: tuple[str, str],
    actor: str,
) -> MemoryEvent:
    """The event of a person's edit of an episode or attachment, already saved: its field
    changes (what undo reads, like any edit) and `quote`, the (before, after) text the
    activity log shows as the event's "content"."""
    work = Work(obj.owner, actor)
    work.record(kind, obj.pk, before, after)
    return work.event(
        event_type,
        **{kind: obj.pk},
        before={"content": quote[0], **work.changes[0]["before"]},
        after={"content": quote[1], **changed},
    )


def new_batch(prefix: str = "bulk") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
