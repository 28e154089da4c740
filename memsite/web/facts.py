"""Facts: the list (filters, keyword search, bulk actions with undo, inline edit) and a fact's
page (its history chain as a timeline, its events, provenance, recall and expiry)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.db.models import Case, IntegerField, Q, When
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curator import retention, timetravel
from curator import writepath as wp
from curator.diff import inline_diff
from curator.history import fact_history
from curator.models import EventType, Fact, FactQuerySet, FactStatus, MemoryEvent, Owner
from curator.transcripts import provenance
from memsite.web.activity import entries
from memsite.web.common import done_banner, safe_next
from memsite.web.forms import AsOfForm, FactBulkForm, FactEditForm, FactFilterForm
from memsite.web.render import paginate, render_page
from retrieval import lookup
from retrieval.recalls import recall_history

PER_PAGE = 50
SORTS = {
    "updated": ["-updated_at", "-pk"],
    "importance": ["-importance", "-updated_at"],
    "confidence": ["-confidence", "-updated_at"],
    "recalled": ["-access_count", "-last_accessed_at", "-updated_at"],
}


def _filtered(owner: Owner, data: dict, status: str):
    names = ("type", "scope", "source", "priority", "tag", *FactQuerySet.RANGES)
    filters = {name: data.get(name) for name in names}
    if data.get("verified"):
        filters["verified"] = data["verified"] == "yes"
    return Fact.objects.filter(owner=owner).filtered(status=status, **filters)


def fact_list(owner: Owner, data: dict, status: str):
    facts = _filtered(owner, data, status).select_related("supersedes")
    query = (data.get("q") or "").strip()
    if not query:
        return facts.order_by(*SORTS.get(data.get("sort") or "updated", SORTS["updated"]))
    ids = lookup.keyword_ids(query, owner, "fact", include_inactive=True)
    facts = facts.filter(pk__in=ids)
    if data.get("sort"):
        return facts.order_by(*SORTS[data["sort"]])
    rank = Case(*[When(pk=pk, then=i) for i, pk in enumerate(ids)], output_field=IntegerField())
    return facts.order_by(rank) if ids else facts.order_by("-updated_at")


def facts_then(owner: Owner, data: dict) -> list[Fact]:
    """The facts as they stood at data["as_of"] (status: the status they had then)."""
    names = ("type", "scope", "source", "priority", "tag", "q")
    filters = {name: data.get(name) for name in names}
    if data.get("verified"):
        filters["verified"] = data["verified"] == "yes"
    status = data.get("status") or "all"
    return timetravel.facts_as_of(owner, data["as_of"], status=status, **filters)


@require_GET
def facts(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    params = request.GET.copy()
    params.setdefault("status", FactStatus.ACTIVE)  # active by default; "" means every status
    filters = FactFilterForm(params, initial={"status": FactStatus.ACTIVE})
    data = filters.cleaned_data if filters.is_valid() else {"status": FactStatus.ACTIVE}
    as_of = data.get("as_of")
    found = facts_then(owner, data) if as_of else fact_list(owner, data, data.get("status", ""))
    page = paginate(request, found, PER_PAGE)
    query = {k: v for k, v in params.items() if k not in ("page", "batch", "done")}
    context = {
        "filters": filters,
        "page_obj": page,
        "bulk": FactBulkForm(),
        "banner": done_banner(request),
        "query": urlencode({k: v for k, v in query.items() if v or k == "status"}),
        "any_facts": Fact.objects.filter(owner=owner).exists(),
        "as_of": as_of,
    }
    return render_page(request, "curator/facts.html", context)


@require_POST
def bulk(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    ids = Fact.objects.filter(owner=owner, pk__in=request.POST.getlist("ids"))
    form = FactBulkForm(request.POST, fact_ids=list(ids.values_list("pk", flat=True)))
    back = f"{reverse('facts')}?{request.POST.get('query', '')}"
    if not form.is_valid():
        for errors in form.errors.values():
            messages.error(request, " ".join(errors))
        return redirect(back)
    action = form.cleaned_data["action"]
    if action in ("scope", "priority") and not form.value():
        messages.error(request, _("Choose the new value first."))
        return redirect(back)
    try:
        batch, changed = wp.bulk_facts(form.cleaned_data["ids"], action, form.value())
    except wp.WritePathError as exc:
        messages.error(request, str(exc))
        return redirect(back)
    if not changed:
        messages.info(request, _("Nothing needed to change."))
        return redirect(back)
    return redirect(f"{back}&batch={batch}")


def _row_response(request, fact: Fact, *, status=200) -> HttpResponse:
    fact.refresh_from_db()
    return render(request, "curator/partials/fact_row.html", {"fact": fact}, status=status)


@require_GET
def row(request: HttpRequest, pk: int) -> HttpResponse:
    return _row_response(request, get_object_or_404(Fact, pk=pk))


def _edit_page(request, fact: Fact, form: FactEditForm, stale: Fact | None = None):
    inline = request.POST.get("inline") or request.GET.get("inline")
    context = {"fact": fact, "form": form, "stale": stale, "inline": inline}
    if stale is not None:
        yours = form.data.get(f"{form.prefix}-content", "")
        context["stale_diff"] = inline_diff(stale.content, yours)
    if request.htmx and inline:
        return render(request, "curator/partials/fact_edit_row.html", context)
    return render_page(request, "curator/fact_edit.html", context)


@require_http_methods(["GET", "POST"])
def edit(request: HttpRequest, pk: int) -> HttpResponse:
    fact = get_object_or_404(Fact, pk=pk)
    if request.method == "GET":
        return _edit_page(request, fact, FactEditForm.for_fact(fact))
    # Changes are computed against the current row; a stale version is refused below anyway.
    form = FactEditForm.for_fact(fact, request.POST)
    if not form.is_valid():
        return _edit_page(request, fact, form)
    try:
        wp.edit_fact(pk, form.changes(), actor="person", expected_updated_at=form.expected())
    except wp.StaleEdit as exc:
        return _stale(request, form, exc.fact)
    except wp.WritePathError as exc:
        form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        return _edit_page(request, fact, form)
    if request.htmx and request.POST.get("inline"):
        return _row_response(request, fact)
    event = MemoryEvent.objects.filter(fact=fact).order_by("-pk").first()
    messages.success(request, _("Saved."))
    return redirect(f"{reverse('fact', args=[pk])}?done={event.pk if event else ''}")


def _stale(request, form: FactEditForm, current: Fact) -> HttpResponse:
    """Refuse, show the current text, and let the person re-apply their edit knowingly."""
    data = request.POST.copy()
    data[f"{form.prefix}-expected_updated_at"] = current.updated_at.isoformat()
    fresh = FactEditForm.for_fact(current, data)
    fresh.is_valid()
    fresh.add_error(
        None,
        _(
            "This fact changed since you opened it. Its current version is shown; "
            "save again to replace it with yours."
        ),
    )
    return _edit_page(request, current, fresh, stale=current)


@require_GET
def detail(request: HttpRequest, pk: int) -> HttpResponse:
    fact = get_object_or_404(
        Fact.objects.select_related(
            "source_turn__session", "source_episode", "supersedes", "agent"
        ),
        pk=pk,
    )
    chain = fact.chain()
    moment = AsOfForm(request.GET or None)
    as_of = moment.cleaned_data.get("as_of") if moment.is_valid() else None
    events = (
        MemoryEvent.objects.filter(
            Q(fact__in=chain)
            | Q(pending__conflicts_with=fact)
            | Q(event_type=EventType.RESOLVE, payload__left__id=fact.pk)
            | Q(event_type=EventType.RESOLVE, payload__right__id=fact.pk)
        )
        .select_related("fact", "pending")
        .distinct()
        .order_by("-created_at", "-pk")
    )
    timeline = fact_history(chain, as_of)
    context = {
        "fact": fact,
        "head": chain[-1],
        "timeline": timeline,
        "none_then": as_of is not None and not any(v.active_then for v in timeline),
        "as_of_form": moment,
        "as_of": as_of,
        "events": entries(events.prefetch_related("reverted_by")[:100]),
        "recall": recall_history(fact),
        "recall_log_days": settings.RECALL_LOG_DAYS,
        "banner": done_banner(request),
        "now": timezone.now(),
        "pending": fact.pending_conflicts.filter(status__in=wp.OPEN),
        "provenance": provenance(fact),
        "lasting": retention.for_fact(fact),
    }
    return render_page(request, "curator/fact_detail.html", context)


ACTIONS = {
    "archive": wp.archive_fact,
    "restore": wp.restore_fact,
    "delete": wp.delete_fact,
    "pin": wp.pin_fact,
}


@require_POST
def action(request: HttpRequest, pk: int, name: str) -> HttpResponse:
    fact = get_object_or_404(Fact, pk=pk)
    if name not in ACTIONS and name != "revert":
        raise Http404
    back = safe_next(request, reverse("fact", args=[pk]))
    try:
        if name == "revert":
            result = wp.revert_to(pk)
            return redirect(f"{reverse('fact', args=[result.fact.pk])}?done={result.event.pk}")
        ACTIONS[name](pk, actor="person")
    except wp.WritePathError as exc:
        messages.error(request, str(exc))
        return redirect(back)
    event = MemoryEvent.objects.filter(fact=fact).order_by("-pk").first()
    separator = "&" if "?" in back else "?"
    return redirect(f"{back}{separator}done={event.pk}" if event else back)
