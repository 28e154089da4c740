"""The recall log read back: when a fact was given to an agent, and replays.

A replay answers "why did my assistant say that?": what a logged search returned then (the
facts as they read at that moment, curator.timetravel), what the same question returns now,
and the difference: items added, removed and moved, and the fact versions that changed in
between, each with the events that changed it.

Lists filter by fact, time range, caller and the agent (API token) that asked: the log
entry's `agent`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from curator import timetravel
from curator.models import Fact, FactStatus, MemoryEvent, Owner
from retrieval.models import Kind, RecallHit, RecallLog
from retrieval.search import SearchRequest, display_text, load_items, search

DEFAULT_LIMIT = 10


def recall_history(fact: Fact, limit: int = 20) -> dict:
    """How often the fact was recalled, and the newest recalls with their queries."""
    hits = (
        RecallHit.objects.filter(kind="fact", object_id=fact.pk)
        .select_related("log")
        .order_by("-log__created_at")
    )
    return {"available": True, "total": hits.count(), "rows": list(hits[:limit])}


def find(
    owner: Owner,
    *,
    fact: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    caller: str | None = None,
    token: int | None = None,
) -> QuerySet[RecallLog]:
    """Recall log entries, newest first: those that returned `fact`, made in [since, until),
    by a caller ("api", ...), through an API token."""
    logs = RecallLog.objects.filter(owner=owner)
    if fact is not None:
        logs = logs.filter(
            pk__in=RecallHit.objects.filter(kind=Kind.FACT, object_id=fact).values("log")
        )
    if since is not None:
        logs = logs.filter(created_at__gte=since)
    if until is not None:
        logs = logs.filter(created_at__lt=until)
    if caller:
        logs = logs.filter(caller=caller)
    if token is not None:
        logs = logs.filter(agent_id=token)
    return logs.order_by("-created_at", "-id")


# --------------------------------------------------------------------------------------
# Replay
# --------------------------------------------------------------------------------------


@dataclass
class Item:
    kind: str
    id: int
    rank: int
    score: float
    content: str
    title: str = ""
    status: str = "active"

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.id)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "id": self.id,
            "rank": self.rank,
            "score": round(self.score, 6),
            "content": self.content,
            "title": self.title,
            "status": self.status,
        }


@dataclass
class Removed:
    item: Item
    why: str  # superseded, archived, expired, rejected, deleted (purged), ranked_lower
    successor: int | None = None  # the fact version that replaced it

    def to_dict(self) -> dict:
        return {**self.item.to_dict(), "why": self.why, "successor": self.successor}


@dataclass
class Moved:
    item: Item  # as it ranks now
    then_rank: int

    @property
    def by(self) -> int:
        return self.then_rank - self.item.rank  # > 0: it moved up

    @property
    def down(self) -> int:
        return -self.by

    def to_dict(self) -> dict:
        return {**self.item.to_dict(), "then_rank": self.then_rank, "now_rank": self.item.rank}


@dataclass
class Changed:
    """A fact of either list that changed between the recall and now, with its events."""

    fact_id: int
    events: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"fact_id": self.fact_id, "events": self.events}


@dataclass
class Replay:
    log: RecallLog
    then: list[Item]
    now: list[Item]
    added: list[Item] = field(default_factory=list)
    removed: list[Removed] = field(default_factory=list)
    moved: list[Moved] = field(default_factory=list)
    unchanged: int = 0
    changed: list[Changed] = field(default_factory=list)
    degraded_reason: str = ""

    @property
    def same(self) -> bool:
        return not (self.added or self.removed or self.moved or self.changed)

    def to_dict(self) -> dict:
        return {
            "then": [i.to_dict() for i in self.then],
            "now": [i.to_dict() for i in self.now],
            "diff": {
                "added": [i.to_dict() for i in self.added],
                "removed": [r.to_dict() for r in self.removed],
                "moved": [m.to_dict() for m in self.moved],
                "unchanged": self.unchanged,
                "changed": [c.to_dict() for c in self.changed],
            },
            "degraded_reason": self.degraded_reason or None,
        }


def then_items(log: RecallLog) -> list[Item]:
    """What the search returned, with each fact's text as it read at that moment."""
    rows = [r for r in (log.results or []) if isinstance(r, dict)]
    keys = [(r.get("kind"), r.get("id")) for r in rows]
    objects = load_items(k for k in keys if k[0] in Kind.values and isinstance(k[1], int))
    fact_ids = [pk for kind, pk in keys if kind == Kind.FACT]
    states = timetravel.states_at(log.created_at, fact_ids=fact_ids) if fact_ids else {}
    items = []
    for row, key in zip(rows, keys, strict=True):
        obj = objects.get(key)
        title, content = display_text(key[0], obj) if obj is not None else ("", "")
        status = getattr(obj, "status", "active") if obj is not None else "purged"
        if key[0] == Kind.FACT and key[1] in states:
            content, status = states[key[1]]["content"], states[key[1]]["status"]
        rank, score = int(row.get("rank") or 0), float(row.get("score") or 0)
        items.append(Item(key[0], key[1], rank, score, content, title, status))
    return items


def _search_args(log: RecallLog) -> dict:
    """The logged request as search() arguments (entries from before requests were kept
    ask with the defaults, at least as many results as they had)."""
    params = log.params or {}
    args = {
        "query": log.query,
        "owner": log.owner,
        "mode": log.mode or "hybrid",
        "limit": params.get("limit") or max(DEFAULT_LIMIT, len(log.results or [])),
        "kinds": params.get("kinds") or None,
        "include_inactive": bool(params.get("include_inactive")),
        "session_id": params.get("session_id"),
        "time_from": _date(params.get("time_from")),
        "time_to": _date(params.get("time_to")),
    }
    if log.preset and log.preset != "custom":
        args["preset"] = log.preset
    elif log.weights:
        weights = dict(log.weights)
        if params.get("half_life_days"):
            weights["half_life_days"] = params["half_life_days"]
        args["weights"] = weights
    return args


def _date(value) -> datetime | None:
    return parse_datetime(value) if isinstance(value, str) else None


def _now_items(log: RecallLog) -> tuple[list[Item], str]:
    args = _search_args(log)
    result = search(SearchRequest(**args, record=False, caller="replay", actor="person"))
    items = [
        Item(i.kind, i.id, i.rank, i.score, i.content, i.title, i.status) for i in result.items
    ]
    return items, result.degraded_reason


def _why_gone(item: Item, facts: dict[int, Fact]) -> tuple[str, int | None]:
    if item.kind != Kind.FACT:
        return "ranked_lower", None
    fact = facts.get(item.id)
    if fact is None:
        return "deleted", None
    if fact.status == FactStatus.SUPERSEDED:
        successor = Fact.objects.filter(supersedes=fact).values_list("pk", flat=True).first()
        return "superseded", successor
    if fact.status != FactStatus.ACTIVE or (fact.expires_at and fact.expires_at <= timezone.now()):
        return fact.status if fact.status != FactStatus.ACTIVE else "expired", None
    return "ranked_lower", None


def _changed(log: RecallLog, fact_ids: set[int]) -> list[Changed]:
    """Every change since the recall to a fact of either list, oldest first, by fact."""
    if not fact_ids:
        return []
    found: dict[int, Changed] = {}
    changes = timetravel.changes(after=log.created_at, fact_ids=fact_ids, newest_first=False)
    events = MemoryEvent.objects.in_bulk({c.event_id for c in changes})
    for change in changes:
        event = events.get(change.event_id)
        entry = found.setdefault(change.fact_id, Changed(change.fact_id))
        entry.events.append(
            {
                "id": change.event_id,
                "event_type": change.event_type,
                "actor": event.actor if event else "",
                "created_at": change.at,
                "before": change.before,
                "after": change.after,
            }
        )
    return sorted(found.values(), key=lambda c: c.events[0]["created_at"])


def replay(log: RecallLog) -> Replay:
    """Then, now and the difference for one recall log entry (nothing is recorded)."""
    then = then_items(log)
    now, degraded = _now_items(log)
    now_by_key = {i.key: i for i in now}
    then_by_key = {i.key: i for i in then}
    out = Replay(log, then, now, degraded_reason=degraded)
    out.added = [i for i in now if i.key not in then_by_key]
    facts = Fact.objects.in_bulk([i.id for i in then if i.kind == Kind.FACT])
    for item in then:
        current = now_by_key.get(item.key)
        if current is None:
            why, successor = _why_gone(item, facts)
            out.removed.append(Removed(item, why, successor))
        elif current.rank != item.rank:
            out.moved.append(Moved(current, item.rank))
        else:
            out.unchanged += 1
    fact_ids = {i.id for i in [*then, *now] if i.kind == Kind.FACT}
    out.changed = _changed(log, fact_ids)
    return out
