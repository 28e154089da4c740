"""The person's pages. Each view renders a full page, or its named partial for HTMX."""

from django.core.paginator import Paginator
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _

from curator.models import (
    Attachment,
    Episode,
    Fact,
    FactStatus,
    FactType,
    Owner,
    PendingItem,
    PendingStatus,
)
from memsite.api import queue_pending
from retrieval.indexing import vector_state


def _page(request: HttpRequest, queryset, per_page: int = 25):
    return Paginator(queryset, per_page).get_page(request.GET.get("page"))


def _render(request: HttpRequest, template: str, context: dict, partial: str = "content"):
    """The full page normally; only the named partial when HTMX swaps it in."""
    name = f"{template}#{partial}" if request.htmx and not request.htmx.boosted else template
    return render(request, name, context)


def home(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    counts = {
        "facts": Fact.objects.filter(owner=owner).live().count(),
        "pending": PendingItem.objects.filter(owner=owner, status=PendingStatus.PENDING).count(),
        "episodes": Episode.objects.filter(owner=owner).count(),
        "attachments": Attachment.objects.filter(owner=owner).count(),
    }
    context = {
        "owner": owner,
        "counts": counts,
        "index": index_status(),
        "empty": not any(counts.values()),
    }
    return _render(request, "curator/home.html", context)


def index_status() -> dict:
    """What the home page and the banner say about search."""
    try:
        state = vector_state()
    except DatabaseError as exc:
        return {"fts": False, "vector": False, "model": "", "reason": str(exc), "queue": 0}
    return {
        "fts": True,
        "vector": state.ok,
        "model": state.model,
        "reason": state.reason,
        "queue": queue_pending(),
    }


def facts(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status") or FactStatus.ACTIVE
    fact_type = request.GET.get("type", "")
    queryset = Fact.objects.filter(owner=Owner.default(), status=status).order_by("-updated_at")
    if fact_type:
        queryset = queryset.filter(type=fact_type)
    context = {
        "page_obj": _page(request, queryset),
        "status": status,
        "fact_type": fact_type,
        "statuses": FactStatus.choices,
        "types": FactType.choices,
    }
    return _render(request, "curator/facts.html", context)


def review(request: HttpRequest) -> HttpResponse:
    queryset = PendingItem.objects.filter(
        owner=Owner.default(), status=PendingStatus.PENDING
    ).select_related("conflicts_with")
    return _render(request, "curator/review.html", {"page_obj": _page(request, queryset)})


def episodes(request: HttpRequest) -> HttpResponse:
    queryset = Episode.objects.filter(owner=Owner.default()).select_related("session")
    return _render(request, "curator/episodes.html", {"page_obj": _page(request, queryset)})


def attachments(request: HttpRequest) -> HttpResponse:
    queryset = Attachment.objects.filter(owner=Owner.default())
    return _render(request, "curator/attachments.html", {"page_obj": _page(request, queryset)})


COMING = {
    "cards": (
        _("Cards"),
        _(
            "The Markdown cards the assistant reads every turn (persona, User.md, "
            "Project.md, Insights.md, MEMORY.md) with an editor, revisions and diffs."
        ),
    ),
    "debugger": (
        _("Retrieval debugger"),
        _(
            "Type a query and see every candidate with its "
            "score breakdown: why it was recalled, and why something else was not."
        ),
    ),
    "jobs": (
        _("Jobs"),
        _(
            "Extraction, embedding, session end and the nightly consolidation: "
            "their runs, retries and dead letters, with undo for a whole run."
        ),
    ),
    "settings": (
        _("Settings"),
        _("API tokens for your agents, the onboarding reset and the configuration in use."),
    ),
}


def coming(request: HttpRequest, page: str) -> HttpResponse:
    title, what = COMING[page]
    return _render(request, "curator/coming.html", {"title": title, "what": what, "page": page})
