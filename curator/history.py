"""A fact's history for its page: every version of the chain with who, why and what changed.

When it was recalled is retrieval's to say (retrieval.recalls)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from curator import timetravel
from curator.describe import FieldChange, describe, field_changes, field_label
from curator.diff import inline_diff
from curator.models import EventType, Fact, MemoryEvent
from curator.undo import changes_of

CREATING = (EventType.WRITE, EventType.SUPERSEDE, EventType.CONFIRM)


@dataclass
class Step:
    event: MemoryEvent
    summary: str
    changes: list[FieldChange]


@dataclass
class Version:
    fact: Fact
    number: int
    created: MemoryEvent | None
    why: str
    diff: SafeString | None
    steps: list[Step] = field(default_factory=list)
    current: bool = False
    intervals: list[timetravel.Interval] = field(default_factory=list)
    active_then: bool = False  # active at the moment the page was asked about
    text_then: str = ""  # its text at that moment, when edited in place since


def _created_this(event: MemoryEvent, fact: Fact) -> bool:
    if event.event_type not in CREATING:
        return False
    return any(
        c.get("kind") == "fact" and c.get("id") == fact.pk and c.get("before") is None
        for c in changes_of(event)
    )


def _why(event: MemoryEvent | None) -> str:
    """Why this version exists, in a few words (the text itself is shown above it)."""
    if event is None:
        return ""
    payload = event.payload or {}
    if event.event_type == EventType.CONFIRM:
        edited = payload.get("edits") or []
        if edited:
            names = ", ".join(field_label(name) for name in edited)
            return _("confirmed in review after editing: %(fields)s") % {"fields": names}
        return _("confirmed in review")
    confidence, threshold = payload.get("confidence"), payload.get("threshold")
    if payload.get("reverted_to"):
        return _("an older version brought back")
    what = _("replaced the previous version") if event.event_type == EventType.SUPERSEDE else ""
    if what == "":
        what = _("written")
    if confidence is not None and threshold:
        return _("%(what)s: confidence %(c).2f ≥ %(t).2f") % {
            "what": what,
            "c": confidence,
            "t": threshold,
        }
    return what


def fact_history(chain: list[Fact], as_of: datetime | None = None) -> list[Version]:
    """Oldest version first; each with its creating event, everything done to it since and
    the intervals it was active; with `as_of`, which version was active at that moment."""
    events = (
        MemoryEvent.objects.filter(fact__in=chain)
        .select_related("pending")
        .order_by("created_at", "pk")
    )
    by_fact: dict[int, list[MemoryEvent]] = {}
    for event in events:
        by_fact.setdefault(event.fact_id, []).append(event)
    versions, previous = [], None
    for number, fact in enumerate(chain, start=1):
        own = by_fact.get(fact.pk, [])
        created = next((e for e in own if _created_this(e, fact)), None)
        diff = None
        if previous is not None and previous.content:
            diff = inline_diff(previous.content, fact.content)
        version = Version(fact, number, created, _why(created), diff, current=fact is chain[-1])
        version.steps = [Step(e, describe(e), field_changes(e)) for e in own if e is not created]
        versions.append(version)
        previous = fact
    _mark_lifetimes(versions, as_of)
    return versions


def _mark_lifetimes(versions: list[Version], as_of: datetime | None) -> None:
    lives = timetravel.lifetimes([v.fact for v in versions])
    then = timetravel.states_at(as_of, fact_ids=lives) if as_of else {}
    for version in versions:
        life = lives[version.fact.pk]
        version.intervals = life.intervals
        if as_of is not None and life.active_at(as_of):
            version.active_then = True
            text = then.get(version.fact.pk, {}).get("content", version.fact.content)
            version.text_then = text if text != version.fact.content else ""
