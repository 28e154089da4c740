"""The nightly consolidation (seed 001 section 7, seed 003 7.4): steps a-g, locked, recorded.

    a. extract    turns still unextracted, and extraction retries that are due
    b. dedup      exact duplicates merged, near duplicates proposed for review
    c. decay      weekly decay of facts and episodes, then the archive / demote thresholds
    d. expire     facts past expires_at become `expired` (never deleted)
    e. reviews    "keep as core?" and "keep or remove?" items for the person
    f. attachments  files of attachments past their retention are removed (records stay)
    g. cards      MEMORY.md and User.md refreshed from the facts, then metabolism

Each step reports counts; a failing step records its error and the run goes on. Every
change goes through the write path with the run id as `job_run`, so the activity log shows
the run's events together and the whole run can be undone (lifecycle.undo). `dry_run`
computes the same counts and changes nothing (no LLM calls either).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.files.storage import default_storage
from django.utils import timezone

from curator.models import Attachment, ConversationTurn, EventType, Fact, FactStatus
from curator.writepath import change_fact
from lifecycle import decay, dedup, refresh, runs
from lifecycle.extraction.extract import ExtractionDeferred, due_items, extract_turn, pending_turns
from lifecycle.models import LOCKED, JobKind, JobRun, RunStatus, Trigger

log = logging.getLogger(__name__)
LOCK = "consolidate"
STEPS = ("extract", "dedup", "decay", "expire", "reviews", "attachments", "cards")
REVIEWS_PER_RUN = 50  # the review queue must stay answerable; the rest waits a night


@dataclass
class Ctx:
    now: datetime
    dry_run: bool
    run_id: str
    recorder: runs.Recorder
    notes: dict = field(default_factory=dict)

    def progress(self, step: str, done: int, of: int) -> None:
        if done == of or done % 50 == 0:
            self.recorder.progress(step, STEPS.index(step) + 1, done, of)


# --------------------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------------------


def step_extract(ctx: Ctx, counts: dict) -> None:
    counts["retries_due"] = due_items(ctx.now).count()
    ids = list(pending_turns(ctx.now).values_list("pk", flat=True))
    counts["turns"] = len(ids)
    if ctx.dry_run:
        return
    for n, pk in enumerate(ids, start=1):
        turn = ConversationTurn.objects.select_related("session__owner").get(pk=pk)
        try:
            for result in extract_turn(turn, job_run=ctx.run_id):
                counts[result.outcome] = counts.get(result.outcome, 0) + 1
        except ExtractionDeferred:
            counts["deferred"] = counts.get("deferred", 0) + 1
        ctx.progress("extract", n, len(ids))


def step_dedup(ctx: Ctx, counts: dict) -> None:
    found = dedup.find(since=_last_step_start("dedup", ctx.run_id))
    counts["vectors"] = found.vectors
    counts["queried"] = found.queried
    counts["exact_groups"] = len(found.exact)
    counts["merged"] = sum(len(group) - 1 for group in found.exact)
    counts["proposed"] = len(found.near)
    if ctx.dry_run:
        return
    for group in found.exact:
        dedup.merge(group, ctx.run_id)
    for n, (sim, keep, drop) in enumerate(found.near, start=1):
        dedup.propose_merge(sim, keep, drop, ctx.run_id, ctx.run_id)
        ctx.progress("dedup", n, len(found.near))


def _last_step_start(name: str, exclude_run: str) -> datetime | None:
    """When this step last started without an error (None: never, so everything is new)."""
    done = JobRun.objects.filter(
        kind=JobKind.CONSOLIDATE, status__in=[RunStatus.SUCCEEDED, RunStatus.PARTIAL]
    ).exclude(run_id=exclude_run)
    for run in done.order_by("-started_at")[:20]:
        for step in run.steps:
            if step.get("name") == name and not step.get("error") and step.get("started_at"):
                return datetime.fromisoformat(step["started_at"])
    return None


def last_decay(exclude_run: str = "") -> datetime | None:
    """When the decay last ran (its `as_of`), so this run applies only the weeks since."""
    done = JobRun.objects.filter(
        kind=JobKind.CONSOLIDATE, status__in=[RunStatus.SUCCEEDED, RunStatus.PARTIAL]
    ).exclude(run_id=exclude_run)
    for run in done.order_by("-started_at")[:20]:
        for step in run.steps:
            if step.get("name") == "decay" and not step.get("error") and step.get("as_of"):
                return datetime.fromisoformat(step["as_of"])
    return None


def step_decay(ctx: Ctx, counts: dict) -> None:
    since = last_decay(ctx.run_id)
    facts = decay.plan_fact_decay(ctx.now, since)
    episodes = decay.plan_episode_decay(ctx.now, since)
    archive, demote = decay.plan_thresholds(
        ctx.now, decay.Reviews.load(), {pk: after for pk, _b, after, _s in facts}
    )
    counts.update(
        facts_decayed=len(facts),
        episodes_decayed=sum(
            1 for e in episodes if e["after"]["importance"] != e["before"]["importance"]
        ),
        episodes_archived=sum(1 for e in episodes if "tags" in e["after"]),
        archived=len(archive),
        demoted=len(demote),
    )
    if ctx.dry_run:
        return
    decay.apply_fact_decay(facts, ctx.run_id, lambda d, o: ctx.progress("decay", d, o))
    decay.apply_episode_decay(episodes)
    decay.apply_thresholds(archive, demote, ctx.now, ctx.run_id)
    ctx.notes.update(as_of=ctx.now.isoformat(), episodes=episodes)


def step_expire(ctx: Ctx, counts: dict) -> None:
    ids = list(Fact.objects.active().filter(expires_at__lte=ctx.now).values_list("pk", flat=True))
    counts["expired"] = len(ids)
    if ctx.dry_run:
        return
    for n, pk in enumerate(ids, start=1):
        change_fact(
            pk, {"status": FactStatus.EXPIRED}, event_type=EventType.EXPIRE, actor="job",
            job_run=ctx.run_id,
        )  # fmt: skip
        ctx.progress("expire", n, len(ids))


def step_reviews(ctx: Ctx, counts: dict) -> None:
    promote, ask, reset = decay.plan_reviews(ctx.now, decay.Reviews.load())
    promote, ask = promote[:REVIEWS_PER_RUN], ask[: max(0, REVIEWS_PER_RUN - len(promote))]
    counts.update(promote_asked=len(promote), removal_asked=len(ask), kept_reset=len(reset))
    if ctx.dry_run:
        return
    for fact in promote:
        decay.ask_promotion(fact, ctx.run_id)
    for fact in ask:
        decay.ask_removal(fact, ctx.run_id, ctx.run_id)
    for fact in reset:
        decay.keep_reset(fact, ctx.run_id)


def step_attachments(ctx: Ctx, counts: dict) -> None:
    days = settings.ATTACHMENT_RETENTION_DAYS
    counts["retention_days"] = days
    if days <= 0:
        return
    due = Attachment.objects.filter(created_at__lt=ctx.now - timedelta(days=days)).exclude(file="")
    removed = []
    for att in due:
        counts["files"] = counts.get("files", 0) + 1
        counts["bytes"] = counts.get("bytes", 0) + att.size
        if ctx.dry_run:
            continue
        name = att.file.name
        default_storage.delete(name)
        Attachment.objects.filter(pk=att.pk).update(file="")
        removed.append({"id": att.pk, "file": name})
    ctx.notes["removed_files"] = removed


def step_cards(ctx: Ctx, counts: dict) -> None:
    ctx.notes["cards"] = refresh.refresh(ctx.now, ctx.dry_run, counts)


RUNNERS = {
    "extract": step_extract,
    "dedup": step_dedup,
    "decay": step_decay,
    "expire": step_expire,
    "reviews": step_reviews,
    "attachments": step_attachments,
    "cards": step_cards,
}


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------


@dataclass
class Report:
    run: JobRun | None
    steps: list[dict]
    dry_run: bool
    skipped: str = ""


def _steps(ctx: Ctx, only=None) -> None:
    for index, name in enumerate(STEPS, start=1):
        if only and name not in only:
            continue
        ctx.notes = {}
        with ctx.recorder.step(name, index) as counts:
            RUNNERS[name](ctx, counts)
        ctx.recorder.steps[-1].update(ctx.notes)


def run(
    trigger: str = Trigger.COMMAND,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    run_id: str | None = None,
    only=None,
) -> Report:
    """Run the consolidation (or, dry, only count); a run already going means a skip."""
    now = now or timezone.now()
    if dry_run:
        recorder = runs.Recorder(None)
        _steps(Ctx(now, True, "dry-run", recorder), only)
        return Report(None, recorder.steps, True)
    job = JobRun.objects.filter(run_id=run_id).first() if run_id else None
    job = job or runs.create(JobKind.CONSOLIDATE, trigger, run_id)
    if not runs.acquire(LOCK, job.run_id):
        holder = runs.held(LOCK)
        # A code the Jobs page words in its reader's language (JobRun.error_text).
        why = f"{LOCKED}{holder.holder if holder else '?'}"
        return Report(runs.skip(job, why), [], False, why)
    recorder = runs.Recorder(job, LOCK)
    try:
        recorder.start(len(STEPS))
        _steps(Ctx(now, False, job.run_id, recorder), only)
        recorder.finish()
    except BaseException as exc:  # recorded, then re-raised: the lock is released below
        recorder.finish(error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        runs.release(LOCK, job.run_id)
    return Report(job, recorder.steps, False)


# --------------------------------------------------------------------------------------
# Schedule: 03:00 in the configured time zone, and catching up after a missed night
# --------------------------------------------------------------------------------------


def local_zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def last_slot(now: datetime) -> datetime:
    """The most recent scheduled start (CONSOLIDATE_HOUR:00 local) at or before `now`."""
    local = now.astimezone(local_zone())
    slot = local.replace(hour=settings.CONSOLIDATE_HOUR, minute=0, second=0, microsecond=0)
    return slot if slot <= local else slot - timedelta(days=1)


def catch_up_due(now: datetime | None = None) -> bool:
    """A machine asleep at 03:00 still consolidates: no run since the last slot, an hour late."""
    now = now or timezone.now()
    slot = last_slot(now)
    if now - slot < timedelta(hours=1):
        return False
    started = JobRun.objects.filter(kind=JobKind.CONSOLIDATE, created_at__gte=slot)
    return not started.exclude(status=RunStatus.SKIPPED).exists()
