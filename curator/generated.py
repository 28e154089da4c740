"""Text the product writes itself, kept as codes and values and put into words when shown.

An episode summary written by the rules, a card revision's note, the reason a job gives for
suggesting a removal: each is stored as a code with its values, so a page renders it in
the reader's language and switching language switches it. Rows stored before this (plain
text) are shown as they are.

No model imports here: models.py uses these functions for its display properties.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext

# --------------------------------------------------------------------------------------
# Punctuation that differs between the languages
# --------------------------------------------------------------------------------------


def sentence_end() -> str:
    return pgettext("between sentences", ". ")


def list_separator() -> str:
    return pgettext("between list items", ", ")


def colon() -> str:
    """A label's colon: ": " in English, "：" in Chinese."""
    return pgettext("after a label", ": ")


# --------------------------------------------------------------------------------------
# Episode summaries written by the rules
# --------------------------------------------------------------------------------------


def _summary_part(part: dict) -> str:
    code = part.get("code")
    if code == "goal":
        return _("Goal: %(text)s") % {"text": part.get("text", "")}
    if code == "tools":
        n, failed = int(part.get("n") or 0), int(part.get("failed") or 0)
        tools = list_separator().join(map(str, part.get("tools") or []))
        return ngettext(
            "%(n)d tool call (%(tools)s), %(failed)d failed",
            "%(n)d tool calls (%(tools)s), %(failed)d failed",
            n,
        ) % {"n": n, "tools": tools, "failed": failed}
    if code == "files":
        return _("Files: %(files)s") % {"files": ", ".join(map(str, part.get("files") or []))}
    if code == "last_answer":
        return _("Last answer: %(text)s") % {"text": part.get("text", "")}
    if code == "turns":
        n = int(part.get("n") or 0)
        return ngettext("%(n)d turn", "%(n)d turns", n) % {"n": n}
    return str(part.get("text", ""))


ENDINGS = ("。", ".", "？", "?", "！", "!", "…")


def episode_summary(parts: list[dict]) -> str:
    """The rules' summary in the active language: its sentences, each ended once.

    A sentence that already ends with its own mark (a quoted goal, a last answer) keeps it
    instead of getting another ("…吗？" never becomes "…吗？.")."""
    end = sentence_end()
    stop, space = end.rstrip(), end[len(end.rstrip()) :]
    sentences = []
    for part in parts:
        if isinstance(part, dict):
            text = _summary_part(part).rstrip()
            sentences.append(text if text.endswith(ENDINGS) else text + stop)
    return space.join(sentences)


# --------------------------------------------------------------------------------------
# Card revision notes
# --------------------------------------------------------------------------------------

CARD_NOTES = {
    "onboarding": gettext_lazy("onboarding"),
    "session_end": gettext_lazy("session end"),
    "nightly_refresh": gettext_lazy("nightly refresh"),
    "live_refresh": gettext_lazy("refreshed after a change"),
    "metabolism": gettext_lazy("metabolism"),
    "outside_change": gettext_lazy("found changed outside the app"),
    "undo_run": gettext_lazy("undo of a job run"),
    "restored": gettext_lazy("restored revision #%(id)s"),
    "merged_live_refresh": gettext_lazy("merged with the live refresh"),
}


def card_note(code: str, params: dict | None = None) -> str:
    """A revision's note in the active language; an unknown code is an old stored text."""
    label = CARD_NOTES.get(code)
    if label is None:
        return code
    return str(label) % (params or {}) if params else str(label)


# --------------------------------------------------------------------------------------
# Why a job suggests removing a fact
# --------------------------------------------------------------------------------------


def _near_duplicate() -> str:
    return _(
        "Near-duplicate of #%(id)s “%(content)s” (similarity %(sim).3f): confirm to keep "
        "only #%(id)s, ignore to keep both."
    )


def _faded() -> str:
    return _(
        "Importance fell to %(value).2f after weeks without use. Keep it (ignore this "
        "suggestion) or remove it (confirm)."
    )


DELETION_WHYS = {"near_duplicate": _near_duplicate, "faded": _faded}


def deletion_why(candidate: dict) -> str:
    """The reason stored with a suggested removal: a job's code, or the agent's own words."""
    template = DELETION_WHYS.get(candidate.get("why_code") or "")
    if template is not None:
        try:
            return template() % (candidate.get("why_params") or {})
        except (KeyError, TypeError, ValueError):  # values missing: the stored text instead
            pass
    return str(candidate.get("why") or "")
