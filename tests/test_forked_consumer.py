"""The consumer `serve` forks (memsite/core/consumer.py) as its code sees it: it ranks
keywords in SQLite (one copy of the postings per machine: the web processes'), and the handle
`serve` holds reports its exit like subprocess.Popen."""

import os
import signal
import subprocess
import sys

import pytest

from memsite.core import consumer
from retrieval import backends


def test_the_consumer_ranks_keywords_in_sqlite_instead_of_holding_postings(settings, monkeypatch):
    monkeypatch.setenv("MEMSITE_SEARCH_KEYWORD_INDEX", "1")
    settings.SEARCH_KEYWORD_INDEX = True
    assert backends.keywords_usable()
    consumer.use_no_keyword_index()
    assert not backends.keywords_usable()
    assert os.environ["MEMSITE_SEARCH_KEYWORD_INDEX"] == "0"


def test_a_started_consumer_ranks_keywords_in_sqlite_too():
    assert consumer.environment()["MEMSITE_SEARCH_KEYWORD_INDEX"] == "0"


def _child(code: str) -> consumer.ForkedConsumer:
    return consumer.ForkedConsumer(subprocess.Popen([sys.executable, "-c", code]).pid)


def test_the_handle_reports_a_child_still_running_then_its_exit_code():
    child = _child("import sys, time; time.sleep(0.5); sys.exit(3)")
    assert child.poll() is None
    assert child.wait(10) == 3
    assert child.poll() == 3


def test_the_handle_times_out_like_popen_and_stops_the_child():
    child = _child("import time; time.sleep(60)")
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(0.2)
    child.terminate()
    assert child.wait(10) == -signal.SIGTERM
    child.kill()  # already gone: no signal reaches a pid that may be another process's now


def test_a_child_reaped_by_another_waiter_counts_as_exited():
    """gunicorn's arbiter collects every child that exits, the consumer included."""
    child = _child("pass")
    os.waitpid(child.pid, 0)
    assert child.poll() == 0


def test_after_a_task_that_grew_the_process_its_freed_memory_is_given_back(monkeypatch):
    """A job that read every fact leaves its peak behind unless the consumer trims."""
    monkeypatch.setattr(consumer, "_trimmed_at", 0)
    resident = [200 << 20]
    monkeypatch.setattr(consumer, "resident_bytes", lambda: resident[0])
    collected = []
    monkeypatch.setattr("gc.collect", lambda: collected.append(1))
    assert consumer.trim_if_grown() and collected == [1]
    resident[0] += consumer.TRIM_GROWTH // 2  # a little growth: not worth a collection
    assert not consumer.trim_if_grown() and collected == [1]
    resident[0] += consumer.TRIM_GROWTH
    assert consumer.trim_if_grown() and collected == [1, 1]


def test_the_consumer_checks_after_every_task_finished_or_failed(monkeypatch):
    from huey.api import MemoryHuey

    checks = []
    monkeypatch.setattr(consumer, "trim_if_grown", lambda: checks.append(1))
    huey = MemoryHuey(immediate=True)
    consumer.give_back_memory_after_tasks(huey)

    @huey.task()
    def job(fail):
        if fail:
            raise ValueError("failed")

    job(False)
    assert checks == [1]
    with pytest.raises(Exception):  # noqa: B017 (huey wraps the task's error)
        job(True)()
    assert checks == [1, 1]
