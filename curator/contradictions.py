"""The contradiction inbox's records: what is open, how a finding reads, and what undo restores.

The job that finds contradictions lives in lifecycle (it reads every active fact and may ask
the LLM); resolving one is a write-path action (curator.writepath.contradictions). Findings
store codes and values; `explain` puts them into the reader's language.
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curator.models import (
    Contradiction,
    ContradictionStatus,
    FactStatus,
    Owner,
)

# The fields a resolution changes; undo restores them (like an episode's edited fields).
EDITABLE = ("status", "resolution")

SLOT_LABELS = {
    "residence": gettext_lazy("where they live"),
    "employer": gettext_lazy("where they work"),
    "school": gettext_lazy("where they study"),
    "age": gettext_lazy("their age"),
    "birthday": gettext_lazy("their birthday"),
    "native_language": gettext_lazy("their native language"),
    "phone": gettext_lazy("their phone number"),
    "email": gettext_lazy("their e-mail address"),
    "favorite": gettext_lazy("a favourite"),
    "name": gettext_lazy("a name"),
    "count": gettext_lazy("how many"),
    "preference": gettext_lazy("which they prefer"),
}
GROUP_LABELS = {
    "marital": gettext_lazy("married or not"),
    "handedness": gettext_lazy("left- or right-handed"),
    "chronotype": gettext_lazy("early riser or night owl"),
    "personality": gettext_lazy("introvert or extrovert"),
    "theme": gettext_lazy("dark or light theme"),
    "workplace": gettext_lazy("working from home or at the office"),
}


def values(item: Contradiction) -> dict:
    return {name: getattr(item, name) for name in EDITABLE}


def restore(item: Contradiction, changed: dict) -> None:
    """Undo of a resolution: back in the inbox as it was."""
    for name, value in changed.items():
        setattr(item, name, value)
    if item.status == ContradictionStatus.OPEN:
        item.resolved_at = None
    item.save()


def inbox(owner: Owner, status: str = ContradictionStatus.OPEN) -> QuerySet[Contradiction]:
    """Contradictions in a status ("all" for every one); open ones only while both facts are
    still active (one archived meanwhile makes the question moot, until it is restored)."""
    found = Contradiction.objects.filter(owner=owner).select_related("left", "right")
    if status == ContradictionStatus.OPEN:
        found = found.filter(
            status=status, left__status=FactStatus.ACTIVE, right__status=FactStatus.ACTIVE
        )
    elif status != "all":
        found = found.filter(status=status)
    return found.order_by("-found_at", "-id")


def explain(item: Contradiction) -> str:
    """Why the two cannot both be true, in the reader's language."""
    detail = item.detail or {}
    if item.rule == "same_slot":
        return _("Both give “%(subject)s / %(predicate)s”, with different values.") % {
            "subject": item.left.subject,
            "predicate": item.left.predicate,
        }
    if item.rule == "slot":
        label = SLOT_LABELS.get(detail.get("slot"), detail.get("slot", ""))
        a, b = (detail.get("values") or ["", ""])[:2]
        return _("They give two different values for %(what)s: “%(a)s” and “%(b)s”.") % {
            "what": label,
            "a": a,
            "b": b,
        }
    if item.rule == "exclusive":
        label = GROUP_LABELS.get(detail.get("group"), detail.get("group", ""))
        return _("They say two things that exclude each other (%(what)s).") % {"what": label}
    if item.rule == "negation":
        return _("One says the opposite of the other.")
    if item.rule == "llm":
        return _("The LLM judged that they cannot both be true: %(why)s") % {
            "why": detail.get("why") or "—"
        }
    return item.rule
