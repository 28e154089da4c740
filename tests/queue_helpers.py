"""Running what the consumer would run: the tests' Huey is immediate (a task enqueued runs
inline), but a task scheduled for later waits in its schedule until someone reads it, as the
consumer's scheduler does every second. `run_scheduled` does that: it waits for each
scheduled task's time and runs it, until nothing is scheduled any more."""

import time
from datetime import datetime

import pytest
from huey.contrib.djhuey import HUEY

FAR = datetime(9999, 1, 1)


def run_scheduled(max_rounds: int = 50) -> list[str]:
    """Run every scheduled task at its time (and what those schedule); their names in order."""
    ran = []
    for _round in range(max_rounds):
        tasks = sorted(HUEY.read_schedule(FAR), key=lambda t: t.eta or FAR)
        if not tasks:
            return ran
        for task in tasks:
            if task.eta is not None:  # Huey keeps etas as naive UTC
                time.sleep(max(0.0, (task.eta - datetime.utcnow()).total_seconds()))
            HUEY.execute(task)
            ran.append(task.name)
    raise AssertionError(f"tasks kept scheduling themselves: {ran[-10:]}")


@pytest.fixture
def live_queue(settings):
    """An empty queue (schedule and key-value store) and a short coalescing delay."""
    settings.CARDS_REFRESH_DELAY = 0.3
    HUEY.flush()
    yield HUEY
    HUEY.flush()
