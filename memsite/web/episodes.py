"""Episodes: the filtered list, one episode's page (action timeline, linked facts, session)
and its edit form."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from curator import episodes as svc
from curator.models import Episode, Owner
from memsite.web.forms_conversations import EpisodeEditForm, EpisodeFilterForm
from memsite.web.render import paginate, render_page
from retrieval import lookup

PER_PAGE = 25


def session_url(session) -> str:
    """The session's page (built by the sessions pages; a plain path if not routed)."""
    try:
        return reverse("session", args=[session.pk])
    except NoReverseMatch:
        return f"/sessions/{session.pk}/"


def _owned(pk: int) -> Episode:
    return get_object_or_404(
        Episode.objects.select_related("session"), pk=pk, owner=Owner.default()
    )


@require_GET
def episodes(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    filters = EpisodeFilterForm(request.GET, tools=svc.known_tools(owner))
    data = filters.cleaned_data if filters.is_valid() else {}
    page = paginate(request, lookup.filter_episodes(owner, data), PER_PAGE)
    query = {k: v for k, v in request.GET.items() if k != "page" and v}
    context = {
        "filters": filters,
        "page_obj": page,
        "query": urlencode(query),
        "filtered": bool(query),
        "any_episodes": Episode.objects.filter(owner=owner).exists(),
    }
    return render_page(request, "curator/episodes.html", context)


@require_GET
def detail(request: HttpRequest, pk: int) -> HttpResponse:
    episode = _owned(pk)
    context = {
        "ep": episode,
        "nodes": svc.timeline(episode),
        "facts": svc.linked_facts(episode)[:100],
        "session_url": session_url(episode.session) if episode.session else "",
        "attachments": episode.attachments.order_by("-created_at")[:50],
    }
    return render_page(request, "curator/episode_detail.html", context)


@require_http_methods(["GET", "POST"])
def edit(request: HttpRequest, pk: int) -> HttpResponse:
    episode = _owned(pk)
    initial = {name: getattr(episode, name) for name in svc.EDITABLE}
    initial["summary"] = episode.display_summary  # the rules' summary in the reader's words
    form = EpisodeEditForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        event = svc.edit_episode(episode.pk, form.cleaned_data)
        messages.success(request, _("Saved.") if event else _("Nothing needed to change."))
        return redirect("episode", pk=episode.pk)
    return render_page(request, "curator/episode_edit.html", {"ep": episode, "form": form})
