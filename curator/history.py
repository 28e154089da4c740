"""A fact's history for its page: every version of the chain with who, why and what changed.

When it was recalled is retrieval's to say (retrieval.recalls)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

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


def fact_history(chain: list[Fact]) -> list[Version]:
    """Oldest version first; each with its creating event and everything done to it since."""
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
    return versions
