"""Recording job runs (start, end, per-step counts, errors, progress) and the run lock.

A run's id is the `job_run` of every MemoryEvent its changes produce, which is what lets a
person see them together and undo the run as a whole.
"""

from __future__ import annotations

import logging
import time
import uuid
from contextlib import contextmanager
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from lifecycle.models import JobLock, JobRun, RunStatus

log = logging.getLogger(__name__)
LOCK_TTL = timedelta(minutes=30)  # refreshed at every step; a crashed run frees it by itself


def new_run_id(kind: str) -> str:
    return f"{kind}-{timezone.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def create(kind: str, trigger: str, run_id: str | None = None) -> JobRun:
    return JobRun.objects.create(run_id=run_id or new_run_id(kind), kind=kind, trigger=trigger)


# --------------------------------------------------------------------------------------
# The lock
# --------------------------------------------------------------------------------------


def acquire(name: str, holder: str, ttl: timedelta = LOCK_TTL) -> bool:
    """Take the named lock unless someone holds it (an expired hold is taken over)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            JobLock.objects.filter(name=name, expires_at__lt=now).delete()
            JobLock.objects.create(name=name, holder=holder, acquired_at=now, expires_at=now + ttl)
    except IntegrityError:
        return False
    return True


def refresh(name: str, holder: str, ttl: timedelta = LOCK_TTL) -> None:
    JobLock.objects.filter(name=name, holder=holder).update(expires_at=timezone.now() + ttl)


def release(name: str, holder: str) -> None:
    JobLock.objects.filter(name=name, holder=holder).delete()


def held(name: str) -> JobLock | None:
    return JobLock.objects.filter(name=name, expires_at__gte=timezone.now()).first()


# --------------------------------------------------------------------------------------
# Recording a run
# --------------------------------------------------------------------------------------


class Recorder:
    """Writes a run's progress as it goes, so the Jobs page can poll it (HTMX)."""

    def __init__(self, run: JobRun | None, lock: str = ""):
        self.run, self.lock = run, lock
        self.steps: list[dict] = []
        self.failed = False

    @property
    def run_id(self) -> str:
        return self.run.run_id if self.run else ""

    def start(self, total_steps: int) -> None:
        if self.run is None:
            return
        self.run.status, self.run.started_at = RunStatus.RUNNING, timezone.now()
        self.run.progress = {"step": "", "index": 0, "total": total_steps}
        self.run.save(update_fields=["status", "started_at", "progress"])

    def progress(self, step: str, index: int, done: int | None = None, of: int | None = None):
        if self.run is None:
            return
        self.run.progress = {**self.run.progress, "step": step, "index": index}
        self.run.progress.update(done=done, of=of)
        JobRun.objects.filter(pk=self.run.pk).update(progress=self.run.progress)
        if self.lock:
            refresh(self.lock, self.run_id)

    @contextmanager
    def step(self, name: str, index: int):
        """Time one step and keep its counts; an error is recorded and the run goes on."""
        record = {"name": name, "counts": {}, "error": "", "started_at": timezone.now().isoformat()}
        self.steps.append(record)
        self.progress(name, index)
        began = time.monotonic()
        try:
            yield record["counts"]
        except Exception as exc:  # one failing step must not stop expiry, cards ...
            log.exception("step %s of %s failed", name, self.run_id)
            record["error"] = f"{type(exc).__name__}: {exc}"
            self.failed = True
        record["seconds"] = round(time.monotonic() - began, 3)
        record["finished_at"] = timezone.now().isoformat()
        if self.run is not None:
            JobRun.objects.filter(pk=self.run.pk).update(steps=self.steps)

    def finish(self, error: str = "") -> JobRun | None:
        if self.run is None:
            return None
        status = RunStatus.SUCCEEDED
        if error:
            status = RunStatus.FAILED
        elif self.failed:
            status = RunStatus.PARTIAL
        self.run.status, self.run.error = status, error[:4000]
        self.run.finished_at, self.run.steps = timezone.now(), self.steps
        self.run.progress = {**self.run.progress, "step": "", "done": None, "of": None}
        self.run.save(update_fields=["status", "error", "finished_at", "steps", "progress"])
        return self.run


def skip(run: JobRun, why: str) -> JobRun:
    run.status, run.error = RunStatus.SKIPPED, why
    run.started_at = run.finished_at = timezone.now()
    run.save(update_fields=["status", "error", "started_at", "finished_at"])
    return run


def record_single(kind: str, trigger: str, run_id: str, counts: dict, began) -> JobRun:
    """A run of a one-step job (extraction of a turn, a session end), recorded once done."""
    now = timezone.now()
    step = {
        "name": "extract_turn" if kind == "extract" else kind,
        "counts": counts,
        "error": "",
        "started_at": began.isoformat(),
        "finished_at": now.isoformat(),
        "seconds": round((now - began).total_seconds(), 3),
    }
    return JobRun.objects.create(
        run_id=run_id,
        kind=kind,
        trigger=trigger,
        status=RunStatus.SUCCEEDED,
        created_at=began,
        started_at=began,
        finished_at=now,
        steps=[step],
    )
