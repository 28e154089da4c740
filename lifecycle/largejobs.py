"""The jobs that read every active fact, in the consumer or in a child process.

The contradiction scan and the nightly consolidation grow the consumer by 150-250 MB at 100k
facts while they run, and leave about 40 MB of fragmented heap behind for the rest of its
life (docs/performance.md). From JOBS_CHILD_PROCESS_FACTS active facts they run as
`python -m memsite run_job ...` (memsite.core.childjob): the child's memory goes when it exits.
Below that the job is small and runs in the consumer, which a child would cost more (a fresh
interpreter: Django, the app and jieba's dictionary, a few seconds).

A child that fails is not lost: its exit raises ChildJobFailed in the task (huey logs it with
the child's last lines), the Jobs page shows it (a consolidation's run is marked failed, a
scan's failure is the last job error), and a lock it left is released.
"""

from __future__ import annotations

import logging
import os
import threading

from django.conf import settings

from curator.models import Fact
from lifecycle import consolidate, contradictions, runs
from lifecycle.llm import record_incident
from lifecycle.models import JobKind, JobRun, RunStatus, Service, Trigger
from memsite.core import childjob

log = logging.getLogger(__name__)
COMMAND = "run_job"
CONTRADICTIONS, RECENT_CONTRADICTIONS, CONSOLIDATION = (
    "contradictions", "recent-contradictions", "consolidation",
)  # fmt: skip
JOBS = (CONTRADICTIONS, RECENT_CONTRADICTIONS, CONSOLIDATION)


def in_child_process() -> bool:
    """Whether this database is large enough for its large jobs to leave the consumer."""
    limit = settings.JOBS_CHILD_PROCESS_FACTS
    # Counted up to the limit only: at 1M facts a whole count reads 1M index entries.
    return limit <= 0 or Fact.objects.active()[:limit].count() >= limit


def find_contradictions(recent: bool = False) -> None:
    """The scan over every active fact, or (`recent`) pairs with a fact changed in the last
    day: here or in a child process."""
    job = RECENT_CONTRADICTIONS if recent else CONTRADICTIONS
    if not in_child_process():
        run_here(job)
        return
    # The child's lock is named here: one it leaves behind (killed mid-scan) is released
    # now instead of blocking every scan until it expires (30 minutes).
    holder = f"scan-child-{os.getpid()}-{threading.get_ident()}"
    try:
        childjob.run([COMMAND, job, "--holder", holder])
    except childjob.ChildJobFailed as exc:
        runs.release(contradictions.LOCK, holder)
        _record(exc, "contradiction scan")
        raise


def consolidation(trigger: str, run_id: str | None = None) -> None:
    """The nightly consolidation (or its catch-up, or "Run now" with its JobRun's id)."""
    if not in_child_process():
        consolidate.run(trigger, run_id=run_id)
        return
    # The run exists before the child starts, so a child that dies leaves a failed run
    # on the Jobs page rather than nothing.
    run_id = run_id or runs.create(JobKind.CONSOLIDATE, trigger).run_id
    try:
        childjob.run([COMMAND, CONSOLIDATION, "--trigger", trigger, "--run-id", run_id])
    except childjob.ChildJobFailed as exc:
        unfinished = JobRun.objects.filter(
            run_id=run_id, status__in=(RunStatus.QUEUED, RunStatus.RUNNING)
        )
        unfinished.update(status=RunStatus.FAILED, error=str(exc)[:4000])
        runs.release(consolidate.LOCK, run_id)
        _record(exc, "nightly consolidation")
        raise


def run_here(
    job: str, trigger: str = Trigger.SCHEDULE, run_id: str | None = None, holder: str = ""
) -> str:
    """The job in this process (the child's side of `run_job`); a line saying what it did."""
    if job == CONSOLIDATION:
        report = consolidate.run(trigger, run_id=run_id)
        status = report.run.status if report.run else "-"
        return f"consolidation {report.run.run_id if report.run else ''}: {status}"
    scan = contradictions.scan_recent if job == RECENT_CONTRADICTIONS else contradictions.scan
    report = scan(holder=holder)
    if report.skipped:
        return f"{job}: skipped ({report.skipped})"
    return f"{job}: {report.facts} facts, {report.pairs} pairs compared, {report.total} found"


def _record(exc: childjob.ChildJobFailed, what: str) -> None:
    log.error("%s failed in its child process: %s", what, exc)
    record_incident(Service.JOB, str(exc), context=f"{what} (child process)")
