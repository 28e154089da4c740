"""The daily metrics snapshot: one row per day, refreshed in place, and a dry run."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from curator.writepath import Candidate, propose
from lifecycle import metrics, tasks
from lifecycle.models import MetricsSnapshot
from tests.lifecycle_helpers import fact

pytestmark = pytest.mark.django_db


def test_a_snapshot_holds_the_home_metrics_and_the_state_of_the_day():
    propose(Candidate("用户喜欢拉面", confidence=0.95), actor="agent")
    propose(Candidate("用户可能喜欢爵士乐", confidence=0.7), actor="agent")
    (row,) = metrics.snapshot()
    assert row.date == timezone.localdate()
    values = row.values
    assert values["facts_active"] == 1 and values["pending"] == 1 and values["written"] == 1
    assert {"confirmation", "wrong_writes", "backlog", "dead_letters", "turns"} <= set(values)


def test_refreshing_updates_todays_row_instead_of_adding_one():
    metrics.snapshot()
    fact("another")
    metrics.snapshot()
    assert MetricsSnapshot.objects.get().values["facts_active"] == 1


def test_each_day_gets_its_own_row_and_the_series_is_oldest_first():
    now = timezone.now()
    metrics.snapshot(now - timedelta(days=1))
    metrics.snapshot(now)
    days = [row.date for row in metrics.series()]
    assert days == sorted(days) and len(days) == 2


def test_a_dry_run_saves_nothing():
    out = StringIO()
    call_command("metrics_snapshot", "--dry-run", stdout=out)
    assert "not saved" in out.getvalue() and MetricsSnapshot.objects.count() == 0


def test_the_hourly_task_takes_the_snapshot(monkeypatch):
    monkeypatch.setattr("lifecycle.consolidate.catch_up_due", lambda now=None: False)
    tasks.hourly_upkeep.call_local()
    assert MetricsSnapshot.objects.count() == 1
