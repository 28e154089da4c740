"""What the Jobs page shows: queue, schedule, runs, failures, last errors (read-only)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from huey.contrib.djhuey import HUEY

from curator.models import MemoryEvent
from lifecycle import consolidate, llm, schedule, turnstate
from lifecycle.models import (
    DeadLetter,
    DeadStatus,
    ExtractionItem,
    Incident,
    JobKind,
    JobRun,
    QueueStatus,
    RunStatus,
    Service,
)

STEP_TITLES = {
    "extract": _("a. Extract waiting turns"),
    "dedup": _("b. Duplicates"),
    "decay": _("c. Decay"),
    "expire": _("d. Expiry"),
    "reviews": _("e. Reviews"),
    "attachments": _("f. Attachment files"),
    "cards": _("g. Cards"),
    "extract_turn": _("Extraction"),
    "end_session": _("Session end"),
}
COUNT_LABELS = {
    "retries_due": _("retries due"),
    "turns": _("turns"),
    "written": _("written"),
    "pending": _("to review"),
    "boosted": _("repeated"),
    "superseded": _("replaced"),
    "dropped": _("dropped"),
    "deferred": _("deferred"),
    "vectors": _("vectors"),
    "queried": _("new vectors queried"),
    "exact_groups": _("exact duplicate groups"),
    "merged": _("merged"),
    "proposed": _("merges proposed"),
    "facts_decayed": _("facts decayed"),
    "episodes_decayed": _("episodes decayed"),
    "episodes_archived": _("episodes archived"),
    "archived": _("archived"),
    "demoted": _("demoted to transient"),
    "expired": _("expired"),
    "promote_asked": _("“keep as core?” asked"),
    "removal_asked": _("“keep or remove?” asked"),
    "kept_reset": _("kept facts reset"),
    "retention_days": _("retention (days, 0 = keep)"),
    "files": _("files removed"),
    "bytes": _("bytes freed"),
    "memory_lines": _("MEMORY.md lines"),
    "memory_size": _("MEMORY.md characters"),
    "user_lines": _("User.md lines"),
    "user_size": _("User.md bytes"),
    "metabolism_changes": _("cards tidied"),
    "insights_to_facts": _("insights turned into facts"),
    "turn": _("turn"),
    "session": _("session"),
    "episode": _("episode"),
    "actions": _("actions"),
}
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


@dataclass
class StepView:
    name: str
    title: str
    counts: list[tuple[str, object]]
    error: str
    seconds: float | None


def steps_of(run: JobRun) -> list[StepView]:
    out = []
    for step in run.steps or []:
        counts = [(str(COUNT_LABELS.get(k, k)), v) for k, v in (step.get("counts") or {}).items()]
        name = step.get("name", "")
        title = str(STEP_TITLES.get(name, name))
        out.append(StepView(name, title, counts, step.get("error", ""), step.get("seconds")))
    return out


@dataclass
class RunView:
    run: JobRun
    steps: list[StepView]
    events: int

    @property
    def undoable(self) -> bool:
        changed = self.events or any(s.get("cards") or s.get("episodes") for s in self.run.steps)
        return self.run.finished and self.run.status != RunStatus.UNDONE and bool(changed)


def run_view(run: JobRun) -> RunView:
    return RunView(run, steps_of(run), MemoryEvent.objects.filter(job_run=run.run_id).count())


def progress(run: JobRun) -> dict:
    p = run.progress or {}
    total = p.get("total") or len(consolidate.STEPS)
    index = p.get("index") or 0
    percent = round(100 * max(0, index - 1) / total) if total else 0
    if p.get("of"):
        percent += round(100 / total * (p.get("done") or 0) / p["of"])
    return {
        "step": str(STEP_TITLES.get(p.get("step"), p.get("step") or "")),
        "index": index,
        "total": total,
        "done": p.get("done"),
        "of": p.get("of"),
        "percent": 100 if run.finished else min(99, percent),
    }


def queue() -> dict:
    try:
        waiting, scheduled = HUEY.pending_count(), HUEY.scheduled_count()
    except Exception:  # the queue file is unreadable: say so rather than fail the page
        waiting = scheduled = None
    return {
        "waiting": waiting,
        "scheduled": scheduled,
        "unextracted": turnstate.awaiting().count(),  # the count Sessions shows too
        "extraction_retries": ExtractionItem.objects.filter(status=QueueStatus.WAITING).count(),
        "dead_letters": DeadLetter.objects.filter(status=DeadStatus.OPEN).count(),
    }


def overview(now=None) -> dict:
    now = now or timezone.now()
    consolidations = list(JobRun.objects.filter(kind=JobKind.CONSOLIDATE)[:10])
    active = next((r for r in consolidations if r.status in ACTIVE), None)
    return {
        "consumer": schedule.consumer(),
        "last_beat": schedule.last_beat(),
        "queue": queue(),
        "schedule": [(p, p.next_run(now)) for p in schedule.periodic()],
        "active": active,
        "active_progress": progress(active) if active else None,
        "runs": [run_view(r) for r in consolidations],
        "other_runs": [run_view(r) for r in JobRun.objects.exclude(kind=JobKind.CONSOLIDATE)[:15]],
        "dead_letters": list(DeadLetter.objects.filter(status=DeadStatus.OPEN)[:50]),
        "retries": list(
            ExtractionItem.objects.filter(status=QueueStatus.WAITING)
            .select_related("turn__session")
            .order_by("next_attempt_at")[:20]
        ),
        "last_llm": Incident.objects.filter(service=Service.LLM).first(),
        "last_embedding": Incident.objects.filter(service=Service.EMBEDDING).first(),
        "last_job": Incident.objects.filter(service=Service.JOB).first(),
        "llm_configured": llm.configured(),
        "llm_model": settings.LLM_MODEL,
        "catch_up_due": consolidate.catch_up_due(now),
    }
