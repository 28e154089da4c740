"""Step g of the nightly run: the Markdown cards from the active facts, then metabolism.

MEMORY.md gets the top facts by importance x recency (at most 5 per type, the whole card
within ~1,500 characters, seed 003 7.4); User.md gets the identity and preference facts
(within 2 KB, seed 000 2.2 / 003 6.3). Both only replace their generated section (between
the `<!-- generated:facts -->` markers of curator.cards), so whatever a person wrote around
it stays; every generated line carries the ids of the facts it came from. Then the cards'
metabolism (curator.metabolism) tidies User.md, archives old Project.md sections and lets
cold Insights.md items sink into facts.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime

from django.utils import translation

from curator import cards, metabolism
from curator.models import Actor, CardAuthor, Fact, FactType, Owner, Scope

SECTION = "facts"
PER_TYPE = 5
HALF_LIFE_DAYS = 30.0
MAX_CANDIDATES = 200
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


def user_facts(now: datetime) -> list[Fact]:
    types = [FactType.IDENTITY, FactType.PREFERENCE]
    facts = Fact.objects.live(now).filter(scope=Scope.USER, type__in=types)
    # 2 KB holds a few dozen lines: the most important candidates are plenty to fill it.
    ranked = facts.order_by("-importance", "pk")[:MAX_CANDIDATES]
    return sorted(ranked, key=lambda f: (types.index(f.type), -f.importance, f.pk))


def _label(fact: Fact) -> str:
    # The card is read by the agent: its labels are in the owner's agent language.
    with translation.override(Owner.default().agent_language()):
        return str(fact.get_type_display())


def fit(key: str, current: str, facts: list[Fact], labelled: bool, now) -> tuple[str, int]:
    """The card with as many facts as fit its limit (the person's text counts too)."""
    base = current if current.strip() else TITLES[key] + "\n"
    limit = cards.spec(key).limit
    lines: list[tuple[str, list[int]]] = []
    text = cards.replace_generated(base, SECTION, lines, updated=now)
    for fact in facts:
        line = f"- [{_label(fact)}] {fact.content}" if labelled else f"- {fact.content}"
        trial = cards.replace_generated(base, SECTION, [*lines, (line, [fact.pk])], updated=now)
        if limit is not None and cards.measure(key, trial).amount > limit:
            continue  # a shorter fact further down may still fit
        lines.append((line, [fact.pk]))
        text = trial
    return text, len(lines)


_STAMP = re.compile(r"(<!-- generated:[\w.-]+) updated=\S+")


def _content(text: str) -> str:
    """The card without its refresh time: an unchanged card is not rewritten every night."""
    return _STAMP.sub(r"\1", cards.normalise(text))


def _latest() -> dict[str, int | None]:
    return {key: (rev.pk if (rev := cards.latest_revision(key)) else None) for key in cards.CARDS}


def refresh(now: datetime, dry_run: bool, counts: dict) -> dict:
    """Write (or, dry, only measure) the cards; returns {card: [revision before, after]}."""
    before = _latest()
    for key, facts, labelled in (
        ("memory", memory_facts(now), True),
        ("user", user_facts(now), False),
    ):
        current = cards.read(key)
        text, n = fit(key, current, facts, labelled, now)
        counts[f"{key}_lines"] = n
        counts[f"{key}_size"] = cards.measure(key, text).amount
        if not dry_run and _content(text) != _content(current):
            cards.save(key, text, CardAuthor.JOB, base=current, note="nightly_refresh")
    plan = (
        metabolism.plan(now)
        if dry_run
        else metabolism.apply(None, author=CardAuthor.JOB, actor=Actor.JOB, now=now)
    )
    counts["metabolism_changes"] = len(plan.changes)
    counts["insights_to_facts"] = sum(len(c.new_facts) for c in plan.changes)
    after = _latest()
    return {key: [before[key], after[key]] for key in after if after[key] != before[key]}
