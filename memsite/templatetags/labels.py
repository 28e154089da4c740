"""Readable, translated labels for the internal codes the pages show (stages, kinds, sections).

The codes stay stable in the API and in the database; only the pages translate them. An unknown
code is shown as it is, so a new stage appears (untranslated) instead of disappearing.
"""

from django import template
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from curator import generated, retention
from curator.guard import rules as guard
from curator.models import FactStatus
from retrieval.models import Kind

register = template.Library()

LABELS = {
    # search stages (timings)
    "segmentation": _("segmentation"),
    "fts": _("keyword search"),
    "embedding": _("query embedding"),
    "knn": _("vector search"),
    "load": _("loading items"),
    "scoring": _("scoring"),
    "total": _("total"),
    # context sections
    "cards": _("core cards"),
    "turns": _("recent turns"),
    "evidence": _("long-term evidence"),
    "reserve": _("reserve for the answer"),
    # channel states
    "ok": pgettext_lazy("index state", "working"),
    "off": pgettext_lazy("index state", "not used"),
    "failed": pgettext_lazy("index state", "failed"),
    # how a card was compiled
    "rules": _("compiled by rules"),
    **{value: label for value, label in Kind.choices},
    **{value: label for value, label in FactStatus.choices},
    # what ended a fact version's activity (curator.timetravel)
    "deleted": _("deleted"),
    "withdrawn": _("withdrawn"),
    # why a replayed recall no longer returns an item (retrieval.recalls)
    "ranked_lower": _("no longer in the top results"),
    # the chat proxy: an injected card, and why a chat was not recorded
    "card": _("card"),
    "read_only_token": _("the token is read-only"),
    "memory_paused": _("memory writes are paused"),
    "agent_paused": _("the agent is paused"),
    "degraded": _("the curator failed (see the log)"),
    # search modes
    "hybrid": _("hybrid"),
    "keyword": _("keyword only"),
    "semantic": _("vector only"),
}


@register.filter
def codelabel(code) -> str:
    """`{{ t.name|codelabel }}`; an LLM method "llm:<model>" reads "compiled by <model>"."""
    code = str(code or "")
    if code.startswith("llm:"):
        return _("compiled by %(model)s") % {"model": code[4:]}
    return LABELS.get(code, code)


@register.simple_tag
def colon() -> str:
    """The colon after a label in the reader's language: "Goal: x" but "目标：x"."""
    return generated.colon()


# The "via:<how>" tags the demo (and an import) put on a fact: how it was first found.
VIA = {
    "llm": _("found in a conversation by the language model"),
    "rules": _("found in a conversation by the built-in rules"),
    "manual": _("written down by hand"),
    "onboarding": _("answered in the first-run questions"),
    "consolidation": _("inferred by the nightly consolidation"),
}


@register.filter
def tagtitle(tag) -> str:
    """A tooltip for a tag: "#via:llm" says what it means; any other tag filters the list."""
    tag = str(tag or "")
    if tag.startswith("via:"):
        how = VIA.get(tag[4:], tag[4:])
        return _("How this memory first came in: %(how)s") % {"how": how}
    return _("Show the facts with this tag")


@register.filter
def lasts(fact) -> str:
    """How long a fact really lasts, short, for a table: its priority's name ("long term
    (30 days)") is only where its expiry started; a fact the person verified may instead
    last until removed or fade when unused (curator.retention)."""
    lasting = retention.for_fact(fact)
    if lasting.kind == "expires" and lasting.expires_at is not None:
        day = timezone.localtime(lasting.expires_at).strftime("%Y-%m-%d")
        return _("until %(day)s") % {"day": day}
    return _("permanent") if lasting.kind == "permanent" else _("fades when unused")


@register.filter
def guardrail_label(name: str) -> str:
    """A guardrail's stored name (a detector's is English) in the reader's language."""
    return guard.detector_labels().get(name, name) if name else ""
