"""The activity log: every MemoryEvent, newest first, with its changes and an undo where
undo is possible (single events and whole batches), and the guarded hard purge."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curator import writepath as wp
from curator.describe import FieldChange, describe, field_changes
from curator.models import EventType, FactStatus, MemoryEvent, Owner
from curator.undo import UndoRefused, undo_batch, undo_blocker, undo_event
from lifecycle.models import JobRun
from lifecycle.undo import undo_run
from memsite.web.common import safe_next
from memsite.web.forms import ActivityFilterForm
from memsite.web.render import paginate, render_page
from memsite.web.review import item_response

PER_PAGE = 50


@dataclass
class Entry:
    event: MemoryEvent
    summary: str
    changes: list[FieldChange]
    blocker: str | None
    batch_size: int = 0

    @property
    def group(self) -> str:
        return self.event.batch or self.event.job_run

    @property
    def purgeable(self) -> bool:
        fact = self.event.fact
        return (
            self.event.event_type in (EventType.DELETE, EventType.ARCHIVE)
            and fact is not None
            and fact.status != FactStatus.ACTIVE
        )


def entry(event: MemoryEvent, sizes: dict | None = None) -> Entry:
    size = (sizes or {}).get(event.batch or event.job_run, 0)
    return Entry(event, describe(event), field_changes(event), undo_blocker(event), size)


def entries(events) -> list[Entry]:
    """Rows for a list of events, each knowing how many changes its batch or run made."""
    events = list(events)
    sizes = _group_sizes(events)
    return [entry(e, sizes) for e in events]


def _events(owner: Owner, data: dict):
    events = MemoryEvent.objects.filter(owner=owner)
    if data.get("actor"):
        events = events.filter(actor=data["actor"])
    if data.get("agent"):
        events = events.filter(agent_id=data["agent"])
    if data.get("type"):
        events = events.filter(event_type=data["type"])
    if data.get("fact"):
        events = events.filter(fact_id=data["fact"])
    if data.get("date_from"):
        events = events.filter(created_at__date__gte=data["date_from"])
    if data.get("date_to"):
        events = events.filter(created_at__date__lte=data["date_to"])
    if data.get("batch"):
        events = events.filter(Q(batch=data["batch"]) | Q(job_run=data["batch"]))
    return events.select_related("fact", "pending", "agent").prefetch_related("reverted_by")


def _group_sizes(events) -> dict[str, int]:
    keys = {e.batch for e in events if e.batch} | {e.job_run for e in events if e.job_run}
    sizes = dict(
        MemoryEvent.objects.filter(batch__in=keys)
        .values("batch")
        .annotate(n=Count("pk"))
        .values_list("batch", "n")
    )
    runs = (
        MemoryEvent.objects.filter(job_run__in=keys)
        .values("job_run")
        .annotate(n=Count("pk"))
        .values_list("job_run", "n")
    )
    for key, n in runs:
        sizes[key] = max(sizes.get(key, 0), n)
    return sizes


@require_GET
def activity(request: HttpRequest) -> HttpResponse:
    filters = ActivityFilterForm(request.GET or None)
    data = filters.cleaned_data if filters.is_valid() else {}
    page = paginate(request, _events(Owner.default(), data), PER_PAGE)
    sizes = _group_sizes(list(page))
    context = {
        "filters": filters,
        "page_obj": page,
        "entries": [entry(e, sizes) for e in page],
        "query": request.GET.urlencode(),
    }
    return render_page(request, "curator/activity.html", context)


@require_POST
def undo(request: HttpRequest, pk: int) -> HttpResponse:
    event = get_object_or_404(MemoryEvent, pk=pk)
    try:
        done = undo_event(pk)
    except UndoRefused as exc:
        if request.htmx and request.POST.get("from") == "review" and event.pending_id:
            return item_response(request, event.pending, event=event, error=str(exc))
        messages.error(request, _("Cannot undo: %(why)s") % {"why": exc})
        return redirect(safe_next(request, reverse("activity")))
    if request.htmx and request.POST.get("from") == "review" and done.pending_id:
        return item_response(request, done.pending)
    messages.success(request, _("Undone: %(what)s") % {"what": describe(event)})
    return redirect(safe_next(request, reverse("activity")))


@require_POST
def undo_group(request: HttpRequest, key: str) -> HttpResponse:
    try:
        count = _undo_group(key)
    except UndoRefused as exc:
        messages.error(request, _("Cannot undo this batch: %(why)s") % {"why": exc})
    else:
        messages.success(request, _("Undone: %(n)d changes.") % {"n": count})
    return redirect(safe_next(request, reverse("activity")))


def _undo_group(key: str) -> int:
    """A job run also changed cards and episodes: its own undo restores those with the events."""

    if JobRun.objects.filter(run_id=key).exists():
        return undo_run(key).events
    return len(undo_batch(key))


@require_http_methods(["GET", "POST"])
def purge(request: HttpRequest, pk: int) -> HttpResponse:
    """A hard delete, only after a confirmation page that says what will be lost."""
    event = get_object_or_404(MemoryEvent.objects.select_related("fact"), pk=pk)
    item = entry(event)
    if not item.purgeable:
        messages.error(request, _("Only a deleted or archived fact can be purged."))
        return redirect("activity")
    if request.method == "POST":
        fact_id = event.fact_id
        try:
            wp.purge_fact(fact_id)
        except wp.WritePathError as exc:
            messages.error(request, str(exc))
            return redirect("activity")
        messages.success(request, _("Fact #%(id)s was permanently deleted.") % {"id": fact_id})
        return redirect("activity")
    context = {"entry": item, "fact": event.fact}
    return render(request, "curator/activity_purge.html", context)
