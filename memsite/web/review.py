"""The review desk: what the agent wants to remember, one decision at a time or many at once.

Single-item actions answer an HTMX request with the item's new state (done, with an undo),
so the queue is worked through in place; without JavaScript every action is a form post
followed by a redirect back to the queue with a banner that carries the undo.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.text import Truncator
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from curator import contradictions as contradiction_inbox
from curator import generated, thresholds
from curator import writepath as wp
from curator.describe import describe
from curator.diff import diff_pair
from curator.models import (
    FactType,
    MemoryEvent,
    Owner,
    PendingItem,
    PendingReason,
    PendingStatus,
    Scope,
    Source,
)
from memsite.web.common import done_banner
from memsite.web.forms import (
    CandidateForm,
    LaterForm,
    RetentionForm,
    ReviewBulkForm,
    ReviewFilterForm,
)
from memsite.web.render import paginate, render_page

PER_PAGE = 50


@dataclass
class Row:
    """A pending item with what the page needs to explain it."""

    item: PendingItem
    moot: str | None
    old_html: str = ""
    new_html: str = ""
    excerpt: str = ""
    lasting: RetentionForm | None = None  # how long it will last, changeable before confirming

    @property
    def retention(self):
        return self.lasting.current if self.lasting else None

    @property
    def c(self) -> dict:
        return self.item.candidate or {}

    @property
    def source_label(self) -> str:
        return str(dict(Source.choices).get(self.c.get("source"), self.c.get("source") or "—"))

    @property
    def type_label(self) -> str:
        return str(dict(FactType.choices).get(self.c.get("type"), self.c.get("type") or "—"))

    @property
    def scope_label(self) -> str:
        return str(dict(Scope.choices).get(self.c.get("scope"), self.c.get("scope") or "—"))

    @property
    def why(self) -> str:
        """A suggested removal's reason, in the reader's language when a job gave it."""
        return generated.deletion_why(self.c)

    @property
    def threshold(self) -> float:
        """The write threshold of the source that proposed it (Calibration page or default)."""
        return thresholds.for_source(
            thresholds.source_key(self.c.get("source") or "", self.c.get("token_id"))
        ).write

    @property
    def percent(self) -> int:
        return round(self.item.confidence * 100)


def row(item: PendingItem, data=None) -> Row:
    r = Row(item, wp.moot_reason(item) if item.status in wp.OPEN else None)
    if item.status in wp.OPEN and (current := wp.retention_of(item)) is not None:
        r.lasting = RetentionForm.for_item(item, current, data)
    old = item.conflicts_with
    if item.reason == PendingReason.CONFLICT and old is not None:
        r.old_html, r.new_html = diff_pair(old.content, r.c.get("content") or "")
    if item.source_turn_id and item.source_turn:
        r.excerpt = Truncator(item.source_turn.content).chars(160)
    return r


def _queue(owner: Owner, data: dict):
    items = wp.due_pending(owner).select_related("conflicts_with", "source_turn__session", "agent")
    for name in ("type", "scope", "source"):
        if data.get(name):
            items = items.filter(**{f"candidate__{name}": data[name]})
    if data.get("reason"):
        items = items.filter(reason=data["reason"])
    if data.get("agent"):
        items = items.filter(agent_id=data["agent"])
    if data.get("sort") == "confidence":
        return items.order_by("-confidence", "-created_at", "-pk")
    return items.order_by("-created_at", "-pk")


def _snoozed(owner: Owner):
    return PendingItem.objects.filter(
        owner=owner, status=PendingStatus.SNOOZED, cooldown_until__gt=timezone.now()
    ).order_by("cooldown_until")


@require_GET
def review(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    filters = ReviewFilterForm(request.GET or None)
    data = filters.cleaned_data if filters.is_valid() else {}
    page = paginate(request, _queue(owner, data), PER_PAGE)
    context = {
        "filters": filters,
        "page_obj": page,
        "rows": [row(item) for item in page],
        "snoozed": [row(item) for item in _snoozed(owner)],
        "later_choices": LaterForm.PRESETS,
        "bulk_actions": ReviewBulkForm.ACTIONS,
        "banner": done_banner(request),
        "query": urlencode({k: v for k, v in request.GET.items() if k != "page" and v}),
        "tab": "queue",
        "contradiction_count": contradiction_inbox.inbox(owner).count(),
    }
    return render_page(request, "curator/review.html", context)


def _back(request: HttpRequest, **params) -> HttpResponse:
    """Back to the queue (keeping its filters), with the banner that offers the undo."""
    query = request.POST.get("query", "")
    extra = urlencode({k: v for k, v in params.items() if v})
    return redirect(f"{reverse('review')}?{'&'.join(p for p in (query, extra) if p)}")


def item_response(request, item: PendingItem, *, event=None, error: str = "", status=200):
    """HTMX: the item's card (new state or in-place error) plus the nav badge, out of band."""
    item.refresh_from_db()
    context = {
        "r": row(item),
        "event": event,
        "summary": describe(event) if event else "",
        "error": error,
        "later_choices": LaterForm.PRESETS,
        "oob_badge": True,
        "review_count": wp.due_pending(item.owner).count(),
        # The heading's count follows too, so it never disagrees with the badge.
        "review_total": _filtered_total(item.owner, request.POST.get("query", "")),
        "query": request.POST.get("query", ""),
    }
    return render(request, "curator/partials/review_item.html", context, status=status)


def _filtered_total(owner: Owner, query: str) -> int:
    """How many items the queue shows under the page's filters (the heading's count)."""
    filters = ReviewFilterForm(QueryDict(query))
    return _queue(owner, filters.cleaned_data if filters.is_valid() else {}).count()


def _refused(request, item: PendingItem, message: str) -> HttpResponse:
    if request.htmx:
        return item_response(request, item, error=message)
    messages.error(request, message)
    return _back(request)


@require_POST
def confirm(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(PendingItem, pk=pk)
    edits = {}
    if "edit" in request.POST:
        form = CandidateForm.for_item(item, request.POST)
        if not form.is_valid():
            return _edit_response(request, item, form)
        edits = form.edits()
    if f"r{pk}-retention" in request.POST and (lasting := row(item, request.POST).lasting):
        if not lasting.is_valid():
            return _refused(request, item, " ".join(lasting.non_field_errors() or ["?"]))
        edits.update(lasting.edits())  # what the card said it would last, or the change
    try:
        result = wp.confirm_pending(pk, edits=edits or None, force=bool(request.POST.get("force")))
    except wp.InvalidCandidate as exc:
        form = CandidateForm.for_item(item, request.POST)
        form.is_valid()
        form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        return _edit_response(request, item, form)
    except wp.WritePathError as exc:
        return _refused(request, item, str(exc))
    if result.outcome == wp.BLOCKED:  # a guardrail matches it: nothing was written
        return _refused(request, item, describe(result.event))
    return _done(request, item, result.event)


def _done(request, item: PendingItem, event: MemoryEvent) -> HttpResponse:
    if request.htmx:
        return item_response(request, item, event=event)
    messages.success(request, describe(event))
    return _back(request, done=event.pk)


@require_POST
def ignore(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(PendingItem, pk=pk)
    try:
        result = wp.ignore_pending(pk)
    except wp.WritePathError as exc:
        return _refused(request, item, str(exc))
    return _done(request, result.pending, result.event)


@require_POST
def later(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(PendingItem, pk=pk)
    form = LaterForm(request.POST)
    if not form.is_valid():
        return _refused(request, item, " ".join(form.non_field_errors() or form.errors))
    try:
        result = wp.snooze_pending(pk, form.cleaned_data["when"])
    except wp.WritePathError as exc:
        return _refused(request, item, str(exc))
    return _done(request, result.pending, result.event)


def _edit_response(request, item: PendingItem, form: CandidateForm) -> HttpResponse:
    data = request.POST if request.method == "POST" else None
    context = {"r": row(item, data), "form": form, "query": request.POST.get("query", "")}
    if request.htmx:
        return render(request, "curator/partials/review_edit.html", context)
    return render(request, "curator/review_edit.html", context)


@require_GET
def edit(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(PendingItem, pk=pk, status__in=wp.OPEN)
    return _edit_response(request, item, CandidateForm.for_item(item))


@require_GET
def item(request: HttpRequest, pk: int) -> HttpResponse:
    """One item's card: the HTMX "cancel" of an inline edit, or a page of its own when a link
    (a session transcript, a fact's provenance) opens it directly."""
    item = get_object_or_404(PendingItem, pk=pk)
    if request.htmx:
        return item_response(request, item)
    context = {"r": row(item), "later_choices": LaterForm.PRESETS}
    return render(request, "curator/review_item_page.html", context)


@require_POST
def bulk(request: HttpRequest) -> HttpResponse:
    """Several items at once, under one batch id so the whole decision can be undone."""
    owner = Owner.default()
    ids = list(wp.due_pending(owner).values_list("pk", flat=True))
    ids += list(_snoozed(owner).values_list("pk", flat=True))
    form = ReviewBulkForm(request.POST, item_ids=ids)
    if not form.is_valid():
        for errors in form.errors.values():
            messages.error(request, " ".join(errors))
        return _back(request)
    batch, skipped = _apply_bulk(form.cleaned_data)
    if skipped:
        messages.warning(
            request,
            _("%(n)d item(s) were left alone because they changed meanwhile: %(why)s")
            % {"n": len(skipped), "why": " ".join(skipped)},
        )
    return _back(request, batch=batch)


def _apply_bulk(data: dict) -> tuple[str, list[str]]:
    batch, skipped = wp.new_batch(), []
    action = data["action"]
    for pk in data["ids"]:
        try:
            with transaction.atomic():
                if action == "confirm":
                    wp.confirm_pending(pk, batch=batch)
                elif action == "ignore":
                    wp.ignore_pending(pk, batch=batch)
                else:
                    wp.snooze_pending(pk, data["when"], batch=batch)
        except wp.WritePathError as exc:
            skipped.append(f"#{pk}{generated.colon()}{exc}")
    return batch, skipped
