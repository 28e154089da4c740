"""Home metrics: confirmation rate, wrong-write rate, backlog, facts per day, and the SVG."""

from datetime import date, timedelta

import pytest
from django.utils import timezone

from curator import writepath as wp
from curator.metrics import bar_chart, home_metrics
from curator.models import PendingItem
from curator.undo import undo_event
from curator.writepath import Candidate, propose

pytestmark = pytest.mark.django_db


def metric(key):
    return next(m for m in home_metrics() if m.key == key)


def queued(n: int) -> list[PendingItem]:
    return [
        propose(Candidate(f"候选{i}", subject="李雷", confidence=0.7), actor="agent").pending
        for i in range(n)
    ]


def test_confirmation_rate_is_confirmed_over_resolved():
    a, b, c, _d = queued(4)
    wp.confirm_pending(a.pk)
    wp.confirm_pending(b.pk)
    wp.ignore_pending(c.pk)
    m = metric("confirmation")
    assert m.headline == "67%" and m.values[-1] == pytest.approx(2 / 3)
    assert m.values[0] is None  # no resolutions that day: no bar, not a zero


def test_an_undone_confirmation_does_not_count():
    a, b = queued(2)
    result = wp.confirm_pending(a.pk)
    wp.ignore_pending(b.pk)
    undo_event(result.event.pk)
    assert metric("confirmation").headline == "0%"


def test_wrong_write_rate_counts_automatic_writes_the_person_corrected():
    facts = [
        propose(Candidate(f"事实{i}", subject="李雷", predicate=f"p{i}"), actor="agent").fact
        for i in range(4)
    ]
    propose(Candidate("人写的", subject="李雷", predicate="q"), actor="person")
    wp.edit_fact(facts[0].pk, {"content": "改正后的事实"}, actor="person")
    wp.edit_fact(facts[1].pk, {"importance": 0.9}, actor="person")  # not a correction
    wp.delete_fact(facts[2].pk, actor="person")
    m = metric("wrong_writes")
    assert m.headline == "50%" and "2 of 4" in m.detail


def test_a_replacement_the_person_vouched_for_is_a_correction():
    propose(Candidate("住在北京", subject="李雷", predicate="城市"), actor="agent")
    item = propose(
        Candidate("住在杭州", subject="李雷", predicate="城市", confidence=0.7), actor="agent"
    ).pending
    wp.confirm_pending(item.pk)
    assert metric("wrong_writes").headline == "100%"


def test_backlog_counts_waiting_items_at_each_day_end():
    items = queued(3)
    PendingItem.objects.filter(pk=items[0].pk).update(created_at=timezone.now() - timedelta(days=3))
    wp.confirm_pending(items[1].pk)
    wp.snooze_pending(items[2].pk, timezone.now() + timedelta(days=1))
    m = metric("backlog")
    assert m.headline == "2" and m.values[-1] == 2 and m.values[-4] == 1 and m.values[0] == 0


def test_facts_written_per_day():
    for i in range(3):
        propose(Candidate(f"事实{i}", subject="李雷", predicate=f"p{i}"), actor="agent")
    m = metric("written")
    assert m.values[-1] == 3 and m.headline == "3" and len(m.values) == 30


def test_the_chart_is_inline_svg_with_a_tooltip_per_day():
    days = [date(2026, 1, 1) + timedelta(days=i) for i in range(3)]
    svg = str(bar_chart([0.5, None, 1.0], days, percent=True, label="Rate <x>"))
    assert svg.startswith("<svg") and 'role="img"' in svg and 'aria-label="Rate &lt;x&gt;"' in svg
    assert svg.count("<rect") == 3 and "<title>2026-01-01: 50%</title>" in svg
    assert 'class="none"' in svg and "<script" not in svg
