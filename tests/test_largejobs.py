"""The consumer's large jobs (lifecycle/largejobs.py): on a large database the contradiction
scan and the consolidation run as `python -m memsite run_job ...` in a child process, whose
memory goes when it ends. The child does what the consumer would have done, and a child that
fails is a failed job on the Jobs page, not a silence."""

import os
import subprocess
import sys

import pytest
from huey.contrib.djhuey import HUEY
from huey.signals import SIGNAL_ERROR

from curator import writepath as wp
from curator.models import Contradiction, Fact
from lifecycle import contradictions, largejobs, runs, tasks
from lifecycle.models import Incident, JobKind, JobRun, RunStatus, Service, Trigger
from memsite.core import childjob


def write(content: str, **kw) -> Fact:
    kw = {"confidence": 0.95, "priority": "permanent", **kw}
    return wp.propose(wp.Candidate(content=content, **kw), actor="agent").fact


@pytest.fixture
def child_settings(monkeypatch, settings):
    """Every large job leaves the process; the child reads the product's settings (not the
    tests', which would give it another data directory) and this test's database file."""
    settings.JOBS_CHILD_PROCESS_FACTS = 0
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "memsite.settings")
    return settings


@pytest.fixture
def contradicting(transactional_db):
    write("I drink coffee every morning")
    write("I don't drink coffee any more")
    write("用户住在杭州")
    write("用户搬到上海了")
    write("Works at Initech", subject="user", predicate="employer")
    write("Works at Globex", subject="User", predicate="Employer ")  # not a new version
    write("The user has a cat named Miso")


def found() -> set[tuple]:
    return set(Contradiction.objects.values_list("left_id", "right_id", "rule", "status"))


def test_a_scan_in_a_child_process_stores_what_the_consumer_would_store(
    contradicting, child_settings
):
    tasks.find_contradictions()  # the nightly task, as the consumer runs it
    in_child = found()
    assert len(in_child) == 3
    assert not contradictions.runs.held(contradictions.LOCK)  # the child let go of its lock

    Contradiction.objects.all().delete()
    child_settings.JOBS_CHILD_PROCESS_FACTS = 10_000  # seven facts: in this process
    tasks.find_contradictions()
    assert found() == in_child


def test_a_recent_scan_in_a_child_process_looks_only_at_changed_facts(
    contradicting, child_settings
):
    from datetime import timedelta

    from django.utils import timezone

    Fact.objects.update(updated_at=timezone.now() - timedelta(days=3))
    tasks.find_contradictions_soon()
    assert found() == set()
    tasks.find_contradictions_now()
    assert len(found()) == 3


def test_a_consolidation_in_a_child_process_records_its_run(contradicting, child_settings):
    tasks.nightly_consolidation()
    [run] = JobRun.objects.filter(kind=JobKind.CONSOLIDATE)
    assert (run.trigger, run.status) == (Trigger.SCHEDULE, RunStatus.SUCCEEDED)
    assert [step["name"] for step in run.steps][:2] == ["extract", "dedup"]


def test_run_now_in_a_child_process_completes_the_run_the_page_created(
    contradicting, child_settings
):
    created = runs.create(JobKind.CONSOLIDATE, Trigger.MANUAL)
    tasks.consolidate_now(created.run_id)
    [run] = JobRun.objects.filter(kind=JobKind.CONSOLIDATE)
    assert run.run_id == created.run_id and run.status == RunStatus.SUCCEEDED


@pytest.fixture
def broken_child(child_settings, monkeypatch, tmp_path):
    """A child that cannot open its database (a directory where the file should be): it
    exits with a traceback, as it would on any error."""
    unreadable = tmp_path / "not-a-database"
    unreadable.mkdir()
    environment = childjob.environment
    monkeypatch.setattr(
        childjob,
        "environment",
        lambda: {**environment(), childjob.DATABASE_FILE: str(unreadable)},
    )


@pytest.fixture
def failed_tasks():
    """The tasks huey records as failed (SIGNAL_ERROR), with their exceptions."""
    failed = []

    def record(signal, task, exc=None):
        failed.append((task.name.rsplit(".", 1)[-1], exc))

    HUEY.signal(SIGNAL_ERROR)(record)
    yield failed
    HUEY.disconnect_signal(record, SIGNAL_ERROR)


def test_a_consolidation_whose_child_fails_is_a_failed_run(
    contradicting, broken_child, failed_tasks
):
    tasks.nightly_consolidation()
    [(name, error)] = failed_tasks
    assert name == "nightly_consolidation" and "exit code 1" in str(error)
    [run] = JobRun.objects.filter(kind=JobKind.CONSOLIDATE)
    assert run.status == RunStatus.FAILED
    assert "exit code 1" in run.error and "unable to open database file" in run.error
    assert run.error == str(error)[:4000]
    assert not runs.held("consolidate")
    [incident] = Incident.objects.filter(service=Service.JOB)
    assert incident.context == "nightly consolidation (child process)"


def test_a_scan_whose_child_fails_is_reported_and_its_lock_released(
    contradicting, child_settings, monkeypatch, failed_tasks
):
    def killed(args):  # the child took the lock, then the OOM killer took the child
        holder = args[args.index("--holder") + 1]
        assert runs.acquire(contradictions.LOCK, holder)
        raise childjob.ChildJobFailed(args, -9, "")

    monkeypatch.setattr(childjob, "run", killed)
    tasks.find_contradictions()
    [(name, error)] = failed_tasks
    assert name == "find_contradictions" and "killed by signal 9" in str(error)
    assert not runs.held(contradictions.LOCK)  # the next scan need not wait 30 minutes
    [incident] = Incident.objects.filter(service=Service.JOB)
    assert "killed by signal 9" in incident.message


def test_the_jobs_page_shows_the_last_failed_background_job(chinese_client):
    Incident.objects.create(
        service=Service.JOB,
        message="`run_job contradictions` in a child process failed (killed by signal 9)",
        context="contradiction scan (child process)",
    )
    html = chinese_client.get("/jobs/").content.decode()
    assert "killed by signal 9" in html and "contradiction scan (child process)" in html
    assert "后台任务" in html


def test_a_child_killed_by_a_signal_is_a_failure_with_its_last_words(monkeypatch, db):
    code = "import os, signal, sys; print('reading every fact', file=sys.stderr, flush=True);"
    code += "os.kill(os.getpid(), signal.SIGKILL)"
    monkeypatch.setattr(childjob, "command", lambda args: [sys.executable, "-c", code])
    with pytest.raises(childjob.ChildJobFailed) as failed:
        childjob.run(["run_job", "contradictions"])
    assert failed.value.code == -9
    assert "killed by signal 9" in str(failed.value)
    assert "reading every fact" in str(failed.value)


def test_a_small_database_keeps_its_jobs_in_the_consumer(db, settings, monkeypatch):
    started = []
    monkeypatch.setattr(childjob, "run", started.append)
    settings.JOBS_CHILD_PROCESS_FACTS = 3
    write("The user has a cat named Miso")
    tasks.find_contradictions()
    assert started == []
    write("The user has a dog named Bo")
    write("The user lives in Berlin")
    tasks.find_contradictions()
    assert started and started[0][:2] == [largejobs.COMMAND, largejobs.CONTRADICTIONS]


def test_loading_the_engine_before_a_fork_starts_no_thread():
    """serve loads the engine's weights in the arbiter so the workers and the consumer share
    them; a thread started there would be copied into every child without its state."""
    from retrieval import engine

    if engine.load() is None:
        pytest.skip("the engine is not built here")
    code = (
        "import os, django\n"
        "django.setup()\n"
        "from retrieval import engine\n"
        "from retrieval.embedders import LocalEmbedder\n"
        "before = len(os.listdir('/proc/self/task'))\n"
        "LocalEmbedder().load()\n"
        "assert engine._loaded[engine.default_path()] is not None\n"
        "print(before, len(os.listdir('/proc/self/task')))\n"
    )
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("counts threads in /proc")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memsite.settings"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.split()
    assert out[0] == out[1]
