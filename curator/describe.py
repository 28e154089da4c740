"""Events in words: the one-line summary and the field-by-field changes the pages show.

Payloads store codes and values, not sentences, so the log reads in the language of
whoever opens it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.formats import date_format
from django.utils.safestring import SafeString
from django.utils.text import Truncator, capfirst
from django.utils.translation import gettext as _

from curator import thresholds
from curator.diff import inline_diff
from curator.guard import rules as guard
from curator.models import (
    ContradictionStatus,
    EventType,
    Fact,
    FactStatus,
    FactType,
    GuardRule,
    MemoryEvent,
    PendingReason,
    PendingStatus,
    Priority,
    Resolution,
    Scope,
    Source,
)
from curator.undo import changes_of
from memsite.core.tokens import token_names

CHOICES = {
    "status": {
        **dict(FactStatus.choices),
        **dict(PendingStatus.choices),
        **dict(ContradictionStatus.choices),
    },
    "resolution": dict(Resolution.choices),
    "type": dict(FactType.choices),
    "scope": dict(Scope.choices),
    "priority": dict(Priority.choices),
    "source": dict(Source.choices),
}


def field_label(name: str) -> str:
    extra = {
        "cooldown_until": _("snoozed until"),
        "resulting_fact": _("became fact"),
        "resolution": _("resolution"),
        "write": _("write at"),
        "pending": _("review at"),
    }
    if name in extra:
        return extra[name]
    try:
        return str(Fact._meta.get_field(name).verbose_name)
    except FieldDoesNotExist:  # a key a job added: shown as is
        return name


def show_value(name: str, value: Any) -> str:
    if value is None or value == "":
        return "—"
    if name in CHOICES:
        return str(CHOICES[name].get(value, value))
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "—"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, str) and name.endswith(("_at", "_until")):
        moment = parse_datetime(value)
        return date_format(timezone.localtime(moment), "Y-m-d H:i") if moment else value
    return str(value)


@dataclass
class FieldChange:
    kind: str
    object_id: int
    field: str
    label: str
    before: str
    after: str
    diff: SafeString | None = None


def field_changes(event: MemoryEvent) -> list[FieldChange]:
    rows = []
    for change in changes_of(event):
        before, after = change.get("before"), change.get("after") or {}
        if before is None:
            label = _("created") if change.get("kind") == "fact" else _("queued")
            rows.append(FieldChange(change["kind"], change["id"], "", label, "—", label))
            continue
        for name, new in after.items():
            old = before.get(name)
            diff = None
            if name == "content" and isinstance(old, str) and isinstance(new, str):
                diff = inline_diff(old, new)
            rows.append(
                FieldChange(
                    change["kind"],
                    change["id"],
                    name,
                    field_label(name),
                    show_value(name, old),
                    show_value(name, new),
                    diff,
                )
            )
    return rows


def _quote(text: Any) -> str:
    if not text:
        return _("(text removed)")
    return "“" + Truncator(str(text)).chars(80) + "”"


def _content(event: MemoryEvent) -> Any:
    payload = event.payload or {}
    for key in ("after", "candidate", "before", "conflicts_with"):
        if isinstance(payload.get(key), dict) and "content" in payload[key]:
            return payload[key]["content"]
    return event.fact.content if event.fact_id and event.fact else ""


DROP_REASONS = {
    "low_confidence": lambda p: (
        _("confidence %(c).2f is below %(t).2f")
        % {"c": p.get("confidence") or 0, "t": p.get("threshold") or 0}
    ),
    "rejected_before": lambda p: _("you rejected it before"),
}


def describe(event: MemoryEvent) -> str:
    """One sentence saying what happened, in the reader's language."""
    p = event.payload or {}
    kind = event.event_type
    text = _quote(_content(event))
    if kind == EventType.WRITE:
        return _("Wrote %(text)s") % {"text": text}
    if kind == EventType.SUPERSEDE:
        old = (p.get("before") or {}).get("content")
        if p.get("reverted_to"):
            return _("Brought back %(text)s as the current version") % {"text": text}
        return _("Replaced %(old)s with %(text)s") % {"old": _quote(old), "text": text}
    if kind == EventType.BOOST:
        hits = (p.get("after") or {}).get("hit_count")
        return _("Heard %(text)s again (%(n)s times now)") % {"text": text, "n": hits or "?"}
    if kind == EventType.PENDING:
        return _describe_pending(event, p, text)
    if kind == EventType.DROP:
        why = DROP_REASONS.get(p.get("reason"), lambda _p: p.get("reason", ""))(p)
        return _("Dropped %(text)s: %(why)s") % {"text": text, "why": why}
    if kind == EventType.CONFIRM:
        if p.get("outcome") == "deleted":
            return _("Removed %(text)s as the agent suggested") % {"text": text}
        return _("Confirmed %(text)s") % {"text": text}
    if kind == EventType.REJECT:
        return _("Ignored %(text)s") % {"text": _quote(_pending_content(event) or "")}
    if kind == EventType.SNOOZE:
        until = show_value("cooldown_until", p.get("until"))
        return _("Snoozed %(text)s until %(until)s") % {
            "text": _quote(_pending_content(event)),
            "until": until,
        }
    if kind == EventType.UNDO:
        undone = dict(EventType.choices).get(p.get("undone_type"), p.get("undone_type"))
        return _("Undid event #%(id)s (%(what)s)") % {"id": p.get("undoes"), "what": undone}
    if kind == EventType.PURGE:
        return _("Permanently deleted fact #%(id)s") % {"id": p.get("fact_id")}
    if kind == EventType.UPDATE:
        return _describe_update(event, p, text)
    if kind == EventType.BLOCK:
        return _("Blocked by the guardrail “%(rule)s”: %(excerpt)s") % {
            "rule": _rule_label(p),
            "excerpt": p.get("excerpt") or _("(a fact type or scope it does not allow)"),
        }
    if kind == EventType.REDACT:
        what = p.get("turn") and _("turn #%(id)s") % {"id": p["turn"]}
        return _("Masked what “%(rule)s” matches in %(what)s") % {
            "rule": p.get("rule", "?"),
            "what": what or text,
        }
    if kind == EventType.RESOLVE:
        return _describe_resolve(p)
    if kind == EventType.THRESHOLD:
        return _describe_threshold(p)
    if kind == EventType.DELETE and p.get("for_good"):
        when = parse_datetime(p.get("purge_at") or "")
        return _("Deleted %(text)s; it goes for good at %(when)s unless you undo this") % {
            "text": text,
            "when": date_format(timezone.localtime(when), "H:i") if when else "?",
        }
    simple = {
        EventType.ARCHIVE: _("Archived %(text)s"),
        EventType.DELETE: _("Deleted %(text)s"),
        EventType.EXPIRE: _("%(text)s expired"),
        EventType.DECAY: _("%(text)s decayed"),
        EventType.MERGE: _("Merged %(text)s"),
    }
    if kind in simple:
        return simple[kind] % {"text": text}
    return capfirst(
        _("%(what)s: %(text)s") % {"what": event.get_event_type_display(), "text": text}
    )


def _rule_label(payload: dict) -> str:
    """A detector's name in the reader's language; a person's rule as they named it."""
    name = str(payload.get("rule") or "?")
    detector = GuardRule.objects.filter(pk=payload.get("rule_id")).values_list(
        "detector", flat=True
    )
    return guard.label(name, detector.first() or "")


def _pending_content(event: MemoryEvent) -> str:
    if event.pending_id and event.pending:
        return (event.pending.candidate or {}).get("content") or ""
    return ""


def _describe_pending(event, p, text) -> str:
    if p.get("repeat"):
        return _("Proposed %(text)s again; it is already waiting for review") % {"text": text}
    reason = p.get("reason")
    target = event.fact_id
    if reason == PendingReason.CONFLICT:
        return _("Queued %(text)s for review: it would replace fact #%(id)s") % {
            "text": text,
            "id": target,
        }
    if reason == PendingReason.DELETION:
        return _("Queued for review: the agent suggests removing fact #%(id)s") % {"id": target}
    return _("Queued %(text)s for review: confidence %(c).2f") % {
        "text": text,
        "c": p.get("confidence") or 0,
    }


def _describe_update(event, p, text) -> str:
    if p.get("action") == "pin":
        return _("Kept %(text)s forever") % {"text": text}
    if p.get("action") == "redact":
        rule = p.get("rule")
        return _("Masked what “%(rule)s” matches in %(text)s") % {"rule": rule, "text": text}
    names = sorted({row.label for row in field_changes(event) if row.field})
    if (p.get("after") or {}).get("status") == "active" and "status" in {
        row.field for row in field_changes(event)
    }:
        return _("Restored %(text)s") % {"text": text}
    return _("Edited %(fields)s of %(text)s") % {"fields": ", ".join(names), "text": text}


def _describe_resolve(p: dict) -> str:
    left = _quote((p.get("left") or {}).get("content"))
    right = _quote((p.get("right") or {}).get("content"))
    action = p.get("action")
    if action == Resolution.KEEP_LEFT:
        return _("Kept %(kept)s and archived %(other)s (a contradiction)") % {
            "kept": left,
            "other": right,
        }
    if action == Resolution.KEEP_RIGHT:
        return _("Kept %(kept)s and archived %(other)s (a contradiction)") % {
            "kept": right,
            "other": left,
        }
    if action == Resolution.MERGE:
        merged = _quote((p.get("after") or {}).get("content"))
        return _("Merged %(a)s and %(b)s into %(text)s") % {"a": left, "b": right, "text": merged}
    return _("Marked %(a)s and %(b)s as both true") % {"a": left, "b": right}


def source_label(key: str) -> str:
    """A calibration source as people read it: an agent by its token's name, an extractor."""
    token = thresholds.token_of(key or "")
    if token is not None:
        name = token_names().get(token, f"#{token}")
        return _("agent “%(name)s”") % {"name": name}
    return str(CHOICES["source"].get(key, key))


def _describe_threshold(p: dict) -> str:
    after = p.get("after") or {}

    def shown(value) -> str:
        return _("default") if value is None else f"{value:.2f}"

    return _("Set the thresholds of %(source)s: write at %(write)s, review at %(pending)s") % {
        "source": source_label(p.get("source", "")),
        "write": shown(after.get("write")),
        "pending": shown(after.get("pending")),
    }
