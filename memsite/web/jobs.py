"""The Jobs page: queue, schedule, runs (with their events and undo), dead letters, errors."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from curator.describe import describe
from curator.models import MemoryEvent
from curator.undo import UndoRefused
from lifecycle import deadletters, runs, schedule, status, tasks
from lifecycle.models import DeadLetter, JobKind, JobRun, RunStatus, Trigger
from lifecycle.undo import undo_run
from memsite.web.home import index_status
from memsite.web.render import render_page

EVENTS_PER_PAGE = 50


@require_GET
def jobs(request: HttpRequest) -> HttpResponse:
    return render_page(request, "lifecycle/jobs.html", _overview())


def _overview() -> dict:
    """The queue and runs, and the state of the search indexes (not Home's business)."""
    return {**status.overview(), "index": index_status()}


@require_POST
def run_now(request: HttpRequest) -> HttpResponse:
    """Queue a consolidation; the page then follows its progress."""
    active = JobRun.objects.filter(kind=JobKind.CONSOLIDATE, status__in=status.ACTIVE).first()
    if active is not None:
        messages.info(request, _("A consolidation is already queued or running."))
        return redirect("jobs")
    run = runs.create(JobKind.CONSOLIDATE, Trigger.MANUAL)
    tasks.consolidate_now(run.run_id)
    run.refresh_from_db()
    if not run.finished and schedule.consumer() is None:
        messages.warning(
            request,
            _(
                "Queued, but no task consumer is running: it starts when you run "
                "“make run” (or manage.py serve)."
            ),
        )
    elif run.status == RunStatus.SKIPPED:
        messages.warning(request, _("Not run: %(why)s.") % {"why": run.error})
    return redirect("jobs")


@require_GET
def run_progress(request: HttpRequest, run_id: str) -> HttpResponse:
    """Polled by the page (HTMX, every second) while the run is queued or running."""
    run = get_object_or_404(JobRun, run_id=run_id)
    if run.finished and request.htmx:
        # Done: the whole page changes (its run list, queue, cards), so swap it all once.
        response = render_page(request, "lifecycle/jobs.html", _overview())
        response["HX-Retarget"], response["HX-Reswap"] = "#main", "innerHTML"
        return response
    context = {"active": run, "active_progress": status.progress(run)}
    return render_page(request, "lifecycle/partials/progress.html", context, partial="progress")


@require_GET
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    run = get_object_or_404(JobRun, run_id=run_id)
    events = MemoryEvent.objects.filter(job_run=run.run_id).select_related("fact")
    page = Paginator(events.order_by("created_at", "pk"), EVENTS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "view": status.run_view(run),
        "page_obj": page,
        "events": [(e, describe(e)) for e in page],
    }
    partial = "events" if request.GET.get("part") == "events" else "content"
    return render_page(request, "lifecycle/run.html", context, partial=partial)


@require_POST
def run_undo(request: HttpRequest, run_id: str) -> HttpResponse:
    get_object_or_404(JobRun, run_id=run_id)
    try:
        done = undo_run(run_id)
    except UndoRefused as exc:
        messages.error(request, _("Cannot undo this run: %(why)s") % {"why": exc})
    else:
        text = _("Run undone: %(n)d changes reversed.") % {"n": done.events}
        if done.files_lost:
            text += " " + _("%(n)d removed attachment files cannot come back.") % {
                "n": done.files_lost
            }
        messages.success(request, text)
    back = request.POST.get("back") == "run"
    return redirect(reverse("job_run", args=[run_id]) if back else reverse("jobs"))


@require_POST
def letter_retry(request: HttpRequest, pk: int) -> HttpResponse:
    letter = get_object_or_404(DeadLetter, pk=pk)
    deadletters.retry_letter(letter.pk)
    messages.success(
        request,
        _("%(kind)s %(id)s is queued again.") % {"kind": letter.item_kind, "id": letter.object_id},
    )
    return redirect("jobs")


@require_POST
def letter_discard(request: HttpRequest, pk: int) -> HttpResponse:
    letter = get_object_or_404(DeadLetter, pk=pk)
    deadletters.discard_letter(letter.pk)
    messages.success(
        request,
        _("Discarded: %(kind)s %(id)s will not be retried.")
        % {"kind": letter.item_kind, "id": letter.object_id},
    )
    return redirect("jobs")
