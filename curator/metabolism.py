"""Card metabolism (seed 000 section 6): the cards stay small enough to inject every turn.

- User.md stays card-like (<= 2 KB): duplicates and blank runs go; if it is still too big,
  the page says so (nothing is cut by guesswork).
- Project.md over 100 lines: the oldest sections move to a dated archive file and a line
  in the card's "archive" section says what went where (newest sections stay).
- Insights.md keeps its 10 hottest items; the rest sink into the fact store (items already
  linked to facts are just taken off the card).
- MEMORY.md and the scratchpad are measured and reported; the nightly refresh writes them.

`plan()` says what would change without changing anything; `apply()` re-plans, refuses if
the cards changed since the preview (the fingerprint), and applies it all or nothing.
The nightly consolidation (lifecycle) calls the same `apply()` with author/actor "job".
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curator import card_journal, cards, writepath
from curator.models import Actor, CardAuthor, Fact, FactType, Owner, Priority, Scope, Source
from curator.writepath import Candidate

RULES = {
    "user": gettext_lazy("at most 2 KB: over it, repeated lines and blank runs go"),
    "project": gettext_lazy("over 100 lines: the oldest sections move to a dated archive file"),
    "insights": gettext_lazy("at most 10 items: the coldest items become facts"),
    "memory": gettext_lazy("about 1,500 characters: rewritten by the nightly refresh"),
    "scratchpad": gettext_lazy("about 2,000 characters: rewritten when a session ends"),
}
ARCHIVE_SECTION = "archive"


@dataclass
class RuleState:
    key: str
    title: str | Promise
    rule: str | Promise
    usage: cards.Usage


@dataclass
class Change:
    key: str
    before: str
    after: str
    summary: str
    archive: tuple[Path, str] | None = None
    new_facts: list[str] = field(default_factory=list)
    warning: str = ""

    @property
    def diff(self) -> cards.Diff:
        return cards.diff(self.before, self.after)

    @property
    def title(self):
        return cards.spec(self.key).title

    @property
    def archive_name(self) -> str:
        return str(self.archive[0].relative_to(settings.MEMORY_DIR)) if self.archive else ""


@dataclass
class Plan:
    changes: list[Change]
    warnings: list[str]
    fingerprint: str

    @property
    def empty(self) -> bool:
        return not self.changes


class StalePlan(Exception):
    """The cards changed between the preview and the apply: preview again."""


def state() -> list[RuleState]:
    return [
        RuleState(key, cards.spec(key).title, rule, cards.measure(key, cards.read(key)))
        for key, rule in RULES.items()
    ]


def _fingerprint(texts: dict[str, str]) -> str:
    raw = "\0".join(f"{k}\0{cards.normalise(v)}" for k, v in sorted(texts.items()))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def plan(now=None) -> Plan:
    now = now or timezone.now()
    texts = {key: cards.read(key) for key in ("user", "project", "insights")}
    changes: list[Change] = []
    warnings: list[str] = []
    for key, planner in (("user", _plan_user), ("project", _plan_project)):
        change = planner(texts[key], now)
        if change is not None:
            changes.append(change)
    if (change := _plan_insights(texts["insights"])) is not None:
        changes.append(change)
    for change in changes:
        if change.warning:
            warnings.append(change.warning)
    if cards.measure("user", texts["user"]).over and not any(c.key == "user" for c in changes):
        warnings.append(_("User.md is over 2 KB and has nothing to tidy: shorten it by hand."))
    changes = [c for c in changes if cards.normalise(c.before) != cards.normalise(c.after)]
    return Plan(changes, warnings, _fingerprint(texts))


# --------------------------------------------------------------------------------------
# User.md
# --------------------------------------------------------------------------------------


def _plan_user(text: str, now) -> Change | None:
    usage = cards.measure("user", text)
    if not usage.over:
        return None
    seen, out = set(), []
    for line in cards.normalise(text).splitlines():
        key = line.strip()
        if key and not key.startswith("<!--") and not key.startswith("#") and key in seen:
            continue
        if not key and out and not out[-1].strip():
            continue
        seen.add(key)
        out.append(line)
    after = cards.normalise("\n".join(out))
    still = cards.measure("user", after)
    warning = ""
    if still.over:
        warning = _("User.md is still %(n)d bytes after tidying: shorten it by hand.") % {
            "n": still.amount
        }
    summary = _("%(before)d → %(after)d bytes") % {"before": usage.amount, "after": still.amount}
    return Change("user", text, after, summary, warning=warning)


# --------------------------------------------------------------------------------------
# Project.md
# --------------------------------------------------------------------------------------


def _blocks(text: str) -> tuple[list[str], list[list[str]]]:
    """The preamble (title and intro) and the `## ` sections, generated blocks kept whole."""
    lines = cards.normalise(text).splitlines()
    preamble, sections, current = [], [], None
    inside = False
    for line in lines:
        if line.startswith("<!-- generated:"):
            inside = True
        elif line.startswith("<!-- /generated:"):
            inside = False
        if line.startswith("## ") and not inside:
            current = [line]
            sections.append(current)
        elif current is None:
            preamble.append(line)
        else:
            current.append(line)
    return preamble, sections


def _archive_path(now) -> Path:
    folder = Path(settings.MEMORY_DIR) / "shared" / "archive"
    base = f"Project-{now:%Y-%m-%d}"
    path, n = folder / f"{base}.md", 2
    while path.exists():
        path, n = folder / f"{base}-{n}.md", n + 1
    return path


def _plan_project(text: str, now) -> Change | None:
    usage = cards.measure("project", text)
    if not usage.over:
        return None
    keep_budget = usage.limit // 2
    preamble, sections = _blocks(text)
    pinned = [s for s in sections if any("<!-- generated:" in line for line in s)]
    movable = [s for s in sections if s not in pinned]
    kept: list[list[str]] = []
    size = len(preamble) + sum(len(s) for s in pinned)
    for section in reversed(movable):  # newest sections are at the end of a running log
        if kept and size + len(section) > keep_budget:
            break
        kept.insert(0, section)
        size += len(section)
    archived = movable[: len(movable) - len(kept)]
    if not archived:
        return Change(
            "project",
            text,
            text,
            "",
            warning=_("Project.md is over 100 lines but has one long section: split it by hand."),
        )
    path = _archive_path(now)
    archived_lines = [line for s in archived for line in s]
    headings = ", ".join(s[0][3:].strip() for s in archived)
    rel = path.relative_to(Path(settings.MEMORY_DIR) / "shared")
    with translation.override(Owner.default().agent_language()):  # a line of the card
        note = _("%(date)s: %(n)d lines archived to %(path)s (%(headings)s)") % {
            "date": f"{now:%Y-%m-%d}",
            "n": len(archived_lines),
            "path": rel,
            "headings": headings,
        }
    lines = [*_archive_lines(text), (f"- {note}", [])]
    while preamble and not preamble[-1].strip():
        preamble = preamble[:-1]
    if not any(line.startswith(f"<!-- generated:{ARCHIVE_SECTION} ") for line in preamble):
        # The archive log lives under the title, where it is never archived itself.
        preamble = [*preamble, "", *cards.replace_generated("", ARCHIVE_SECTION, []).splitlines()]
    body = [line for s in pinned + kept for line in s]
    after = cards.replace_generated(
        cards.normalise("\n".join(preamble + [""] + body)), ARCHIVE_SECTION, lines, updated=now
    )
    archive_text = cards.normalise(
        "\n".join([f"# Project.md · {now:%Y-%m-%d}", "", *archived_lines])
    )
    return Change("project", text, after, note, archive=(path, archive_text))


def _archive_lines(text: str) -> list[tuple[str, list[int]]]:
    for seg in cards.segments(cards.normalise(text)):
        if seg.kind == "generated" and seg.name == ARCHIVE_SECTION:
            return [(line, []) for line in seg.text.splitlines() if line.strip()]
    return []


# --------------------------------------------------------------------------------------
# Insights.md
# --------------------------------------------------------------------------------------

_ITEM = re.compile(r"^ {0,1}(?:[-*+]|\d{1,3}[.)])\s+(?P<text>\S.*)$")


@dataclass
class _Item:
    start: int
    end: int  # exclusive: the item with its nested lines
    text: str
    fact_ids: list[int]
    heat: tuple = ()


def _items(lines: list[str]) -> list[_Item]:
    items, inside = [], False
    for index, line in enumerate(lines):
        if line.startswith("<!-- generated:"):
            inside = True
        elif line.startswith("<!-- /generated:"):
            inside = False
        elif not inside and (m := _ITEM.match(line)):
            refs = cards.FACT_REFS.search(line)
            ids = [int(i) for i in re.findall(r"\d+", refs["ids"])] if refs else []
            text = cards.FACT_REFS.sub("", m["text"]).strip()
            items.append(_Item(index, index + 1, text, ids))
        elif items and not inside and line.startswith(("  ", "\t")) and items[-1].end == index:
            items[-1].end = index + 1  # a nested line belongs to the item above
    return items


def _plan_insights(text: str) -> Change | None:
    usage = cards.measure("insights", text)
    if not usage.over:
        return None
    lines = cards.normalise(text).splitlines()
    items = _items(lines)
    stats = {
        f.pk: (f.access_count, f.last_accessed_at.timestamp() if f.last_accessed_at else 0)
        for f in Fact.objects.filter(pk__in=[i for item in items for i in item.fact_ids])
    }
    for position, item in enumerate(items):
        heat = max((stats.get(i, (0, 0)) for i in item.fact_ids), default=(0, 0))
        item.heat = (heat[0], heat[1], -position)  # recalled more, recently, then card order
    limit = usage.limit - (usage.amount - len(items))  # items inside generated parts stay
    keep = sorted(items, key=lambda item: item.heat, reverse=True)[: max(0, limit)]
    drop = [item for item in items if item not in keep]
    gone = {n for item in drop for n in range(item.start, item.end)}
    after = cards.normalise("\n".join(line for n, line in enumerate(lines) if n not in gone))
    new_facts = [item.text for item in drop if not item.fact_ids]
    summary = _("%(n)d items leave the card, %(f)d become new facts") % {
        "n": len(drop),
        "f": len(new_facts),
    }
    return Change("insights", text, after, summary, new_facts=new_facts)


# --------------------------------------------------------------------------------------
# Apply
# --------------------------------------------------------------------------------------


def apply(
    fingerprint: str | None,
    *,
    author: str = CardAuthor.PERSON,
    actor: str = Actor.PERSON,
    now=None,
    operation_id: str | None = None,
) -> Plan:
    """Apply what `plan()` shows, if the cards are still what the preview was made from.

    fingerprint=None skips that check (the nightly job plans and applies in one go).
    """

    now = now or timezone.now()
    owner = Owner.default()
    current = plan(now)
    if fingerprint is not None and fingerprint != current.fingerprint:
        raise StalePlan(_("The cards changed since the preview; look at the new preview."))
    op = operation_id or f"metabolism:{current.fingerprint}"
    archives = [c.archive[0] for c in current.changes if c.archive]
    with (
        cards.rollback_files([c.key for c in current.changes]),
        _remove_on_error(archives),
        transaction.atomic(),
    ):
        for change in current.changes:
            for index, content in enumerate(change.new_facts):
                writepath.propose(
                    Candidate(
                        content=content,
                        type=FactType.EXPERIENCE,
                        scope=Scope.INSIGHT,
                        confidence=0.9,
                        priority=Priority.PERMANENT,
                        source=Source.CONSOLIDATION,
                    ),
                    actor=actor,
                    owner=owner,
                    operation_id=f"{op}:insight:{index}",
                )
            revision = cards.save(
                change.key, change.after, author, base=change.before, note="metabolism"
            )
            if change.archive and revision is not None:
                _write_archive(*change.archive, revision)
    return current


def _write_archive(path: Path, text: str, revision) -> None:
    """The archive file, journaled with the revision that cut its lines from the card: a
    kill -9 before that commit leaves a record the next start uses to remove the file."""
    entry = card_journal.begin(revision.card, path, revision.pk, None, text, revision.content)
    cards.atomic_write(path, text)
    transaction.on_commit(entry.forget, robust=True)


class _remove_on_error:
    """Archive files are new: if anything fails they must not be left behind."""

    def __init__(self, paths: list[Path]):
        self.paths = paths

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            for path in self.paths:
                path.unlink(missing_ok=True)
        return False
