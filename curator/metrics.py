"""Seed 000's health metrics over time, and the small SVG charts the home page draws.

- confirmation rate: confirmed / resolved review items (confirmed + ignored), per day;
- wrong-write rate: of the facts the agent or a job wrote, how many were later rejected or
  corrected by the person (undone, edited, deleted, or replaced by a version the person
  vouched for), by the day they were written;
- pending backlog: items waiting (pending or snoozed) at the end of each day;
- facts written per day.
Undone confirmations and ignores do not count: the person took them back.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Max
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from curator.generated import colon
from curator.models import (
    Actor,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    Owner,
    PendingItem,
    PendingStatus,
)

WINDOW_DAYS = 30
WIDTH, HEIGHT, GAP = 300, 64, 2


@dataclass
class Metric:
    key: str
    title: str
    values: list[float | None]
    days: list[date]
    headline: str  # the number beside the chart
    detail: str
    percent: bool = False

    @property
    def svg(self) -> SafeString:
        return bar_chart(self.values, self.days, percent=self.percent, label=self.title)


def _days(today: date, n: int) -> list[date]:
    return [today - timedelta(days=n - 1 - i) for i in range(n)]


def _day(moment: datetime) -> date:
    return timezone.localtime(moment).date()


def _end_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min))


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{round(value * 100)}%"


def _live_events(owner: Owner, types, since: datetime):
    return MemoryEvent.objects.filter(
        owner=owner, event_type__in=types, created_at__gte=since, reverted_by__isnull=True
    )


def confirmation(owner: Owner, days: list[date], since: datetime) -> Metric:
    confirmed, resolved = Counter(), Counter()
    for kind, at in _live_events(owner, [EventType.CONFIRM, EventType.REJECT], since).values_list(
        "event_type", "created_at"
    ):
        day = _day(at)
        resolved[day] += 1
        confirmed[day] += kind == EventType.CONFIRM
    total_c, total_r = sum(confirmed.values()), sum(resolved.values())
    return Metric(
        "confirmation",
        _("Confirmation rate"),
        [_rate(confirmed[d], resolved[d]) for d in days],
        days,
        _pct(_rate(total_c, total_r)),
        _("%(c)d confirmed of %(r)d resolved") % {"c": total_c, "r": total_r},
        percent=True,
    )


def _corrected_ids(fact_ids: set[int]) -> set[int]:
    """Facts the person rejected, edited, deleted, or replaced with a vouched version."""
    wrong = set(
        Fact.objects.filter(pk__in=fact_ids, status=FactStatus.REJECTED).values_list(
            "pk", flat=True
        )
    )
    wrong |= set(
        Fact.objects.filter(supersedes_id__in=fact_ids, verified=True).values_list(
            "supersedes_id", flat=True
        )
    )
    for fact_id, kind, payload in MemoryEvent.objects.filter(
        fact_id__in=fact_ids,
        actor=Actor.PERSON,
        event_type__in=[EventType.UPDATE, EventType.DELETE],
        reverted_by__isnull=True,
    ).values_list("fact_id", "event_type", "payload"):
        changed = {k for c in payload.get("changes", []) for k in (c.get("after") or {})}
        if kind == EventType.DELETE or changed & {"content", "subject", "predicate"}:
            wrong.add(fact_id)
    return wrong


def wrong_writes(owner: Owner, days: list[date], since: datetime) -> Metric:
    written_on: dict[int, date] = {}
    for fact_id, at in MemoryEvent.objects.filter(
        owner=owner,
        event_type__in=[EventType.WRITE, EventType.SUPERSEDE],
        actor__in=[Actor.AGENT, Actor.JOB],
        created_at__gte=since,
        fact__isnull=False,
    ).values_list("fact_id", "created_at"):
        written_on.setdefault(fact_id, _day(at))
    wrong = _corrected_ids(set(written_on))
    per_day, wrong_per_day = Counter(written_on.values()), Counter()
    for fact_id in wrong:
        wrong_per_day[written_on[fact_id]] += 1
    return Metric(
        "wrong_writes",
        _("Wrong-write rate"),
        [_rate(wrong_per_day[d], per_day[d]) for d in days],
        days,
        _pct(_rate(len(wrong), len(written_on))),
        _("%(w)d of %(n)d automatic writes were later corrected")
        % {"w": len(wrong), "n": len(written_on)},
        percent=True,
    )


def backlog(owner: Owner, days: list[date]) -> Metric:
    """Waiting at the end of each day: created by then and not yet resolved by then."""
    resolved_at = dict(
        MemoryEvent.objects.filter(
            owner=owner,
            event_type__in=[EventType.CONFIRM, EventType.REJECT],
            pending__isnull=False,
            reverted_by__isnull=True,
        )
        .values("pending_id")
        .annotate(at=Max("created_at"))
        .values_list("pending_id", "at")
    )
    open_states = (PendingStatus.PENDING, PendingStatus.SNOOZED)
    items = []
    for pk, status, created, updated in PendingItem.objects.filter(owner=owner).values_list(
        "pk", "status", "created_at", "updated_at"
    ):
        done = None if status in open_states else resolved_at.get(pk, updated)
        items.append((created, done))
    ends = [_end_of(d) for d in days]
    values = [sum(c < end and (d is None or d >= end) for c, d in items) for end in ends]
    now_waiting = sum(d is None for _c, d in items)
    return Metric(
        "backlog",
        _("Pending backlog"),
        values,
        days,
        str(now_waiting),
        _("waiting now (pending or snoozed)"),
    )


def written_per_day(owner: Owner, days: list[date], since: datetime) -> Metric:
    per_day = Counter(
        _day(at)
        for at in Fact.objects.filter(owner=owner, created_at__gte=since).values_list(
            "created_at", flat=True
        )
    )
    total = sum(per_day[d] for d in days)
    return Metric(
        "written",
        _("Facts written per day"),
        [per_day[d] for d in days],
        days,
        str(total),
        _("in the last %(n)d days") % {"n": len(days)},
    )


def home_metrics(owner: Owner | None = None, *, days: int = WINDOW_DAYS, now=None) -> list:
    owner = owner or Owner.default()
    today = timezone.localtime(now or timezone.now()).date()
    window = _days(today, days)
    since = timezone.make_aware(datetime.combine(window[0], time.min))
    return [
        confirmation(owner, window, since),
        wrong_writes(owner, window, since),
        backlog(owner, window),
        written_per_day(owner, window, since),
    ]


def bar_chart(values, days, *, percent: bool = False, label: str = "") -> SafeString:
    """A small bar chart as inline SVG: one bar per day, a tooltip per bar, no script."""
    known = [v for v in values if v is not None]
    top = 1.0 if percent else max([*known, 1])
    width = (WIDTH - GAP * (len(values) - 1)) / max(len(values), 1)
    bars = []
    for i, (value, day) in enumerate(zip(values, days, strict=True)):
        x = i * (width + GAP)
        shown = "—" if value is None else (_pct(value) if percent else str(value))
        tip = f"{day:%Y-%m-%d}{colon()}{shown}"
        if value is None:
            bars.append(
                f'<rect class="none" x="{x:.1f}" y="{HEIGHT - 2}" width="{width:.1f}" '
                f'height="2"><title>{escape(tip)}</title></rect>'
            )
            continue
        h = max(1.5, (value / top) * (HEIGHT - 4)) if value else 1
        bars.append(
            f'<rect x="{x:.1f}" y="{HEIGHT - h:.1f}" width="{width:.1f}" height="{h:.1f}">'
            f"<title>{escape(tip)}</title></rect>"
        )
    return mark_safe(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(label)}" preserveAspectRatio="none">'
        f'<line class="axis" x1="0" y1="{HEIGHT - 0.5}" x2="{WIDTH}" y2="{HEIGHT - 0.5}"/>'
        + "".join(bars)
        + "</svg>"
    )
