"""Decay arithmetic at its boundaries, and the schedule in the configured time zone."""

from datetime import UTC, datetime, timedelta

import pytest

from lifecycle import consolidate, schedule
from lifecycle.decay import decayed, steps_due, weekly_steps

DAY = timedelta(days=1)
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("idle_days", "steps"),
    [(0, 0), (6.99, 0), (7, 1), (13.99, 1), (14, 2), (20.99, 2), (21, 3), (70, 10)],
)
def test_weekly_steps_start_after_seven_idle_days(idle_days, steps):
    assert weekly_steps(idle_days) == steps


def test_decay_multiplies_per_step():
    assert decayed(0.8, 0.95, 0) == 0.8
    assert decayed(0.8, 0.95, 1) == pytest.approx(0.76)
    assert decayed(0.5, 0.8, 2) == pytest.approx(0.32)


def test_only_the_steps_since_the_previous_run_are_due():
    assert steps_due(T0, T0 + 15 * DAY, None) == 2  # first run: all owed steps
    assert steps_due(T0, T0 + 15 * DAY, T0 + 14 * DAY) == 0  # already applied yesterday
    assert steps_due(T0, T0 + 21 * DAY, T0 + 20 * DAY) == 1
    assert steps_due(T0, T0 + 30 * DAY, T0 + 13 * DAY) == 3  # nights skipped: caught up


def test_daily_runs_add_up_to_one_run_at_the_end():
    since, total = None, 0
    for day in range(1, 50):
        now = T0 + day * DAY
        total += steps_due(T0, now, since)
        since = now
    assert total == steps_due(T0, T0 + 49 * DAY, None) == 7


def test_a_recall_after_the_previous_run_starts_the_clock_again():
    recalled = T0 + 10 * DAY
    assert steps_due(recalled, T0 + 16 * DAY, T0 + 15 * DAY) == 0
    assert steps_due(recalled, T0 + 17 * DAY, T0 + 16 * DAY) == 1


def test_the_nightly_check_fires_at_three_in_the_configured_zone(settings):
    settings.TIME_ZONE = "Asia/Shanghai"  # UTC+8: 03:00 there is 19:00 UTC
    check = schedule.at_local(3)
    assert check(datetime(2026, 11, 22, 19, 0))  # huey passes naive UTC
    assert not check(datetime(2026, 11, 22, 3, 0))
    assert not check(datetime(2026, 11, 22, 19, 1))


def test_the_next_nightly_run_is_shown_in_utc_for_the_page(settings):
    settings.TIME_ZONE = "Asia/Shanghai"
    (nightly,) = [p for p in schedule.periodic() if p.task == "nightly_consolidation"]
    assert nightly.next_run(datetime(2026, 11, 22, 20, 0, tzinfo=UTC)) == datetime(
        2026, 11, 23, 19, 0, tzinfo=UTC
    )


@pytest.mark.django_db
def test_a_missed_night_is_caught_up_an_hour_after_the_slot(settings):
    settings.TIME_ZONE = "Europe/Berlin"  # 03:00 local = 02:00 UTC in winter
    assert consolidate.last_slot(datetime(2026, 11, 22, 1, 0, tzinfo=UTC)).day == 21
    assert not consolidate.catch_up_due(datetime(2026, 11, 22, 2, 30, tzinfo=UTC))
    assert consolidate.catch_up_due(datetime(2026, 11, 22, 3, 30, tzinfo=UTC))
