"""What was true at a moment, rebuilt from the event log.

Every change of a fact is recorded by the write path as an event whose payload lists its
`changes` (object, fields before, fields after). So the state of any fact at a moment T is
its current row with the changes made after T taken back, newest first; a change whose
`before` is empty created the fact, so before it the fact did not exist. The same changes,
read forwards, give each version its active intervals: from its write to its supersede,
archive, deletion or expiry (a fact past its `expires_at` stops being active at that
moment, even if the nightly job only marks it expired at 03:00).

The pages and the API ask here for "what did the assistant know on date D?"; search and
context assembly (retrieval) ask for the state of their fact candidates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.utils.dateparse import parse_datetime

from curator.models import EventType, Fact, FactStatus, MemoryEvent, Owner
from curator.writepath import FACT_FIELDS

DATE_FIELDS = ("expires_at",)
# Status changes that end a version's activity, named for the timeline.
ENDINGS = {
    FactStatus.SUPERSEDED: "superseded",
    FactStatus.ARCHIVED: "archived",
    FactStatus.EXPIRED: "expired",
    FactStatus.REJECTED: "withdrawn",
}

_CHANGES = (
    "SELECT e.id, e.created_at, e.event_type, json_extract(c.value, '$.id'), "
    "json_extract(c.value, '$.before'), json_extract(c.value, '$.after') "
    f"FROM {MemoryEvent._meta.db_table} e, json_each(e.payload, '$.changes') c "
    "WHERE json_extract(c.value, '$.kind') = 'fact'"
)


@dataclass(frozen=True)
class Change:
    """One fact's part of one event: the fields it changed (before = None: created it)."""

    event_id: int
    at: datetime
    event_type: str
    fact_id: int
    before: dict | None
    after: dict


def _moment(value) -> datetime | None:
    """A stored time as an aware UTC datetime (raw SQL gives Django's naive UTC text)."""
    if value is None or isinstance(value, datetime):
        moment = value
    else:
        moment = parse_datetime(str(value))
    if moment is not None and moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


def _fields(raw: str | None) -> dict | None:
    if raw is None:
        return None
    data = json.loads(raw)
    for name in DATE_FIELDS:
        if isinstance(data.get(name), str):
            data[name] = _moment(data[name])
    return data


def changes(
    *,
    after: datetime | None = None,
    fact_ids=None,
    owner: Owner | None = None,
    newest_first: bool = True,
) -> list[Change]:
    """Fact changes recorded in events after `after` (all of them without it).

    Read with SQLite's json_each, so an event that changed a fact is found whatever fact its
    `fact` column names (a supersede names the new version, a contradiction's resolution one
    of two facts). Asked about given facts, only the events that can touch them are read."""
    sql, params = _CHANGES, []
    if after is not None:
        sql += " AND e.created_at > %s"
        params.append(connection.ops.adapt_datetimefield_value(after))
    if owner is not None:
        sql += " AND e.owner_id = %s"
        params.append(owner.pk)
    if fact_ids is not None:
        ids = json.dumps(sorted({int(i) for i in fact_ids}))
        # Only events that can change these facts are opened: their own, those of a version
        # that supersedes one of them, and resolutions and undos (which change two facts).
        sql += (
            f" AND (e.fact_id IN (SELECT value FROM json_each(%s))"
            f" OR e.fact_id IN (SELECT id FROM {Fact._meta.db_table}"
            " WHERE supersedes_id IN (SELECT value FROM json_each(%s)))"
            " OR e.event_type IN (%s, %s))"
            " AND json_extract(c.value, '$.id') IN (SELECT value FROM json_each(%s))"
        )
        params += [ids, ids, EventType.RESOLVE, EventType.UNDO, ids]
    order = "DESC" if newest_first else "ASC"
    sql += f" ORDER BY e.created_at {order}, e.id {order}"
    with connection.cursor() as cur:
        cur.execute(sql, params)
        rows = cur.fetchall()
    return [
        Change(pk, _moment(at), kind, int(fact_id), _fields(before), _fields(after_) or {})
        for pk, at, kind, fact_id, before, after_ in rows
    ]


# --------------------------------------------------------------------------------------
# The state of facts at a moment
# --------------------------------------------------------------------------------------


def current_state(fact: Fact) -> dict[str, Any]:
    return {name: getattr(fact, name) for name in FACT_FIELDS}


def _rows(moment: datetime, owner: Owner | None, fact_ids) -> dict[int, dict]:
    facts = Fact.objects.filter(created_at__lte=moment)
    if owner is not None:
        facts = facts.filter(owner=owner)
    if fact_ids is not None:
        facts = facts.filter(pk__in=list(fact_ids))
    return {row["id"]: row for row in facts.values("id", *FACT_FIELDS)}


def states_at(
    moment: datetime, *, owner: Owner | None = None, fact_ids=None
) -> dict[int, dict[str, Any]]:
    """{fact id: its fields as they were at `moment`} for every fact that existed then."""
    states = _rows(moment, owner, fact_ids)
    for change in changes(after=moment, fact_ids=fact_ids, owner=owner):
        if change.fact_id not in states:
            continue
        if change.before is None:  # written after the moment: it did not exist yet
            del states[change.fact_id]
        else:
            states[change.fact_id].update(change.before)
    return states


def active_then(state: dict[str, Any], moment: datetime) -> bool:
    """Active and not yet past its expiry at `moment` (what retrieval would have returned)."""
    expires = state.get("expires_at")
    return state.get("status") == FactStatus.ACTIVE and (expires is None or expires > moment)


def active_at(moment: datetime, *, owner: Owner | None = None, fact_ids=None) -> dict[int, dict]:
    states = states_at(moment, owner=owner, fact_ids=fact_ids)
    return {pk: s for pk, s in states.items() if active_then(s, moment)}


def as_it_was(fact: Fact, state: dict[str, Any]) -> Fact:
    """The fact object with its fields as they were (for showing; never saved)."""
    for name, value in state.items():
        if name in FACT_FIELDS:
            setattr(fact, name, value)
    fact.as_of_state = True
    return fact


def facts_as_of(owner: Owner, moment: datetime, *, status: str = "active", **filters) -> list:
    """The facts of `owner` at `moment` as they read then, newest first.

    status "active": active then (the default); "all": every fact that existed; another
    status: the facts that had it then. Filters (type, scope, source, priority, verified,
    tag, q) apply to the fields as they were.
    """
    states = states_at(moment, owner=owner)
    if status == "active":
        states = {pk: s for pk, s in states.items() if active_then(s, moment)}
    elif status and status != "all":
        states = {pk: s for pk, s in states.items() if s.get("status") == status}
    facts = Fact.objects.filter(pk__in=list(states)).select_related("supersedes")
    found = [as_it_was(f, states[f.pk]) for f in facts.order_by("-created_at", "-pk")]
    return [f for f in found if _matches(f, filters)]


def _matches(fact: Fact, filters: dict) -> bool:
    for name, value in filters.items():
        if value is None or value == "":
            continue
        if name == "tag":
            if value.strip() not in (fact.tags or []):
                return False
        elif name == "q":
            text = f"{fact.content} {fact.subject} {fact.predicate}".casefold()
            if not all(word.casefold() in text for word in value.split()):
                return False
        elif getattr(fact, name) != value:
            return False
    return True


# --------------------------------------------------------------------------------------
# Active intervals of the versions of a chain
# --------------------------------------------------------------------------------------


@dataclass
class Interval:
    start: datetime
    end: datetime | None = None  # None: still active
    ended_by: str = ""  # superseded, archived, deleted, expired, withdrawn

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment and (self.end is None or moment < self.end)


@dataclass
class Lifetime:
    fact_id: int
    written_at: datetime
    intervals: list[Interval] = field(default_factory=list)

    def active_at(self, moment: datetime) -> bool:
        return any(i.contains(moment) for i in self.intervals)


def _segments(fact: Fact, own: list[Change]) -> tuple[datetime, list[tuple[datetime, dict, str]]]:
    """(written at, [(from, state, what started it)]): the fact's states in time order."""
    state = current_state(fact)
    written_at = fact.created_at
    for change in reversed(own):  # newest first: take every change back
        if change.before is None:
            written_at = change.at
            break
        state.update(change.before)
    segments = [(written_at, dict(state), "")]
    for change in own:
        if change.before is None:
            continue
        state.update(change.after)
        ended = "deleted" if change.event_type == EventType.DELETE else ""
        segments.append((change.at, dict(state), ended))
    return written_at, segments


def lifetime(fact: Fact, own: list[Change] | None = None) -> Lifetime:
    """When the fact was active: one interval per stretch, with what ended it."""
    if own is None:
        own = changes(fact_ids=[fact.pk], newest_first=False)
    own = [c for c in own if c.fact_id == fact.pk]
    written_at, segments = _segments(fact, own)
    life = Lifetime(fact.pk, written_at)
    for n, (start, state, _why) in enumerate(segments):
        following = segments[n + 1] if n + 1 < len(segments) else None
        end = following[0] if following else None
        if state["status"] != FactStatus.ACTIVE:
            continue
        expires = state.get("expires_at")
        if expires is not None and expires <= start:
            continue
        ended_by = ""
        if following is not None:
            ended_by = following[2] or ENDINGS.get(following[1]["status"], "")
        if expires is not None and (end is None or expires < end):
            end, ended_by = expires, "expired"
        _extend(life, Interval(start, end, ended_by))
    return life


def _extend(life: Lifetime, interval: Interval) -> None:
    """Consecutive active stretches (an edit in between) are one interval."""
    last = life.intervals[-1] if life.intervals else None
    if last is not None and last.end == interval.start and not last.ended_by:
        last.end, last.ended_by = interval.end, interval.ended_by
    else:
        life.intervals.append(interval)


def lifetimes(chain: list[Fact]) -> dict[int, Lifetime]:
    """Every version's lifetime, in one read of the log."""
    own = changes(fact_ids=[f.pk for f in chain], newest_first=False)
    return {f.pk: lifetime(f, own) for f in chain}
