"""The Blocked log: what each rule stopped, by agent and over time, as masked excerpts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count
from django.db.models.functions import TruncDate
from django.utils import timezone

from curator.guard.rules import Hit
from curator.models import ConversationTurn, GuardAction, GuardHit, MemoryEvent, Owner


def record_block(
    hit: Hit, *, owner: Owner, actor: str, source: str, event: MemoryEvent | None
) -> GuardHit:
    return GuardHit.objects.create(
        owner=owner,
        rule_id=hit.rule_id,
        rule_name=hit.name,
        action=GuardAction.BLOCKED,
        source=source[:32],
        actor=actor,
        agent_id=hit.agent,
        excerpt=hit.excerpt,
        event=event,
    )


def record_redactions(turn: ConversationTurn, hits: list[Hit], *, source: str) -> None:
    GuardHit.objects.bulk_create(
        GuardHit(
            owner_id=turn.session.owner_id,
            rule_id=hit.rule_id,
            rule_name=hit.name,
            action=GuardAction.REDACTED,
            source=source[:32],
            actor="agent" if hit.agent else "",
            agent_id=hit.agent,
            excerpt=hit.excerpt,
            turn=turn,
        )
        for hit in hits
    )


@dataclass
class Row:
    label: str  # a rule's name or an agent's
    key: str | int | None
    blocked: int
    redacted: int
    last_7: int
    days: list[int]  # one count per day of the period, oldest first


def _rows(hits, by: str, days: list, labels: dict) -> list[Row]:
    totals: dict = {}
    for item in hits.values(by, "action").annotate(n=Count("pk")):
        row = totals.setdefault(item[by], Counter())
        row[item["action"]] += item["n"]
    daily: dict = {}
    week = timezone.now() - timedelta(days=7)
    recent = Counter(
        dict(hits.filter(created_at__gte=week).values_list(by).annotate(n=Count("pk")))
    )
    period = hits.filter(created_at__date__gte=days[0]).annotate(day=TruncDate("created_at"))
    for item in period.values(by, "day").annotate(n=Count("pk")):
        daily.setdefault(item[by], Counter())[item["day"]] += item["n"]
    rows = [
        Row(
            labels.get(key, str(key) if key is not None else ""),
            key,
            counts[GuardAction.BLOCKED],
            counts[GuardAction.REDACTED],
            recent[key],
            [daily.get(key, Counter())[day] for day in days],
        )
        for key, counts in totals.items()
    ]
    return sorted(rows, key=lambda r: -(r.blocked + r.redacted))


@dataclass
class Stats:
    days: list
    by_rule: list[Row]
    by_agent: list[Row]
    total: int


def stats(
    owner: Owner,
    agent_names: dict[int, str],
    rule_labels: dict[str, str] | None = None,
    period: int = 14,
) -> Stats:
    """Counts per rule and per agent: all time, the last 7 days, and per day of `period`."""
    today = timezone.localdate()
    days = [today - timedelta(days=n) for n in range(period - 1, -1, -1)]
    hits = GuardHit.objects.filter(owner=owner)
    return Stats(
        days=days,
        by_rule=_rows(hits, "rule_name", days, rule_labels or {}),
        by_agent=_rows(hits, "agent_id", days, agent_names),
        total=hits.count(),
    )
