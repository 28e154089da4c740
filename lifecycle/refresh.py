"""The Markdown cards from the active facts: within seconds of a change, and nightly.

MEMORY.md gets the top facts by importance x recency (at most 5 per type, the whole card
within ~1,500 characters, seed 003 7.4); User.md gets every profile fact in the priority
order of curator.profile (within 2 KB and the user card's token budget). Both only replace
their generated section (between the `<!-- generated:facts -->` markers of curator.cards),
so whatever a person wrote around it stays, and neither repeats a line the card already
holds; every generated line carries the ids of the facts it came from.

`refresh_cards` is what the coalesced live refresh runs after facts changed (lifecycle.tasks:
a burst of changes gives one refresh a few seconds after the last); the nightly run (step g)
calls `refresh`, which does the same and then the cards' metabolism (curator.metabolism:
tidies User.md, archives old Project.md sections, lets cold Insights.md items sink into facts).
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime

from django.utils import translation

from curator import cards, metabolism, profile
from curator.models import Actor, CardAuthor, Fact, Owner, Scope

SECTION = "facts"
PER_TYPE = 5
HALF_LIFE_DAYS = 30.0
TITLES = {"memory": "# MEMORY.md", "user": "# User.md"}


def _recency(fact: Fact, now: datetime) -> float:
    seen = max(fact.last_accessed_at or fact.created_at, fact.created_at)
    return 0.5 ** (max(0.0, (now - seen).total_seconds() / 86400) / HALF_LIFE_DAYS)


def memory_facts(now: datetime) -> list[Fact]:
    fields = ("pk", "type", "content", "importance", "created_at", "last_accessed_at")
    facts = Fact.objects.live(now).exclude(scope=Scope.SYSTEM).only(*fields)
    ranked = sorted(facts, key=lambda f: (-f.importance * _recency(f, now), f.pk))
    per_type: Counter[str] = Counter()
    chosen = []
    for fact in ranked:
        if per_type[fact.type] < PER_TYPE:
            per_type[fact.type] += 1
            chosen.append(fact)
    return chosen


def _label(fact: Fact) -> str:
    # The card is read by the agent: its labels are in the owner's agent language.
    with translation.override(Owner.default().agent_language()):
        return str(fact.get_type_display())


def fit(key: str, current: str, facts: list[Fact], labelled: bool, now) -> tuple[str, int]:
    """The card with as many facts as fit its limit (the person's text counts too), none
    of them repeating a line the card already holds."""
    base = current if current.strip() else TITLES[key] + "\n"
    limit = cards.spec(key).limit
    held = cards.held_lines(base, skip_section=SECTION)
    lines: list[tuple[str, list[int]]] = []
    text = cards.replace_generated(base, SECTION, lines, updated=now)
    for fact in facts:
        if cards.repeats(fact.content, held):
            continue
        line = f"- [{_label(fact)}] {fact.content}" if labelled else f"- {fact.content}"
        trial = cards.replace_generated(base, SECTION, [*lines, (line, [fact.pk])], updated=now)
        if limit is not None and cards.measure(key, trial).amount > limit:
            continue  # a shorter fact further down may still fit
        lines.append((line, [fact.pk]))
        held.add(cards.line_key(fact.content))
        text = trial
    return text, len(lines)


def _built(key: str, current: str, now: datetime) -> tuple[str, int]:
    if key == "user":
        plan = profile.plan(now, current)
        return plan.text, len(plan.lines)
    return fit(key, current, memory_facts(now), True, now)


_STAMP = re.compile(r"(<!-- generated:[\w.-]+) updated=\S+")


def _content(text: str) -> str:
    """The card without its refresh time: an unchanged card is not rewritten every night."""
    return _STAMP.sub(r"\1", cards.normalise(text))


def _latest() -> dict[str, int | None]:
    return {key: (rev.pk if (rev := cards.latest_revision(key)) else None) for key in cards.CARDS}


def refresh_cards(now: datetime, counts: dict, *, dry_run=False, note="nightly_refresh"):
    """Rebuild the generated sections of MEMORY.md and User.md (the person's text stays)."""
    for key in ("memory", "user"):
        current = cards.read(key)
        text, n = _built(key, current, now)
        counts[f"{key}_lines"] = n
        counts[f"{key}_size"] = cards.measure(key, text).amount
        if not dry_run and _content(text) != _content(current):
            cards.save(key, text, CardAuthor.JOB, base=current, note=note)


def refresh(now: datetime, dry_run: bool, counts: dict) -> dict:
    """Write (or, dry, only measure) the cards; returns {card: [revision before, after]}."""
    before = _latest()
    refresh_cards(now, counts, dry_run=dry_run)
    plan = (
        metabolism.plan(now)
        if dry_run
        else metabolism.apply(None, author=CardAuthor.JOB, actor=Actor.JOB, now=now)
    )
    counts["metabolism_changes"] = len(plan.changes)
    counts["insights_to_facts"] = sum(len(c.new_facts) for c in plan.changes)
    after = _latest()
    return {key: [before[key], after[key]] for key in after if after[key] != before[key]}
