"""Sessions (list and transcript) and the level-2 trace search over raw turns."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from curator.conversations import terms, trace_queryset
from curator.models import Owner, Role, Session
from curator.transcripts import episode_url, session_list, trace_hit, transcript
from lifecycle import turnstate
from memsite.web.forms import DateInput
from memsite.web.render import paginate, render_page

SESSIONS_PER_PAGE = 25
TRACES_PER_PAGE = 20


def sessions(request: HttpRequest) -> HttpResponse:
    page_obj = paginate(request, turnstate.with_waiting(session_list()), SESSIONS_PER_PAGE)
    for session in page_obj:
        session.episode_links = [(ep, episode_url(ep.pk)) for ep in session.episodes.all()]
    return render_page(request, "curator/sessions.html", {"page_obj": page_obj})


def session(request: HttpRequest, pk: int) -> HttpResponse:
    current = get_object_or_404(Session, pk=pk, owner=Owner.default())
    turns = turnstate.mark(transcript(current))
    episodes = [(ep, episode_url(ep.pk)) for ep in current.episodes.order_by("started_at", "pk")]
    context = {
        "session": current,
        "turns": turns,
        "episodes": episodes,
        "waiting": turnstate.waiting_count(turns),
        "fact_count": sum(len(t.facts) for t in turns),
        "pending_count": sum(len(t.pending) for t in turns),
    }
    return render_page(request, "curator/session.html", context)


class TraceFilterForm(forms.Form):
    q = forms.CharField(label=_("Words"), required=False, max_length=500)
    session = forms.CharField(label=_("Session id"), required=False, max_length=200)
    role = forms.ChoiceField(
        label=_("Role"), required=False, choices=[("", _("any")), *Role.choices]
    )
    date_from = forms.DateField(label=_("From"), required=False, widget=DateInput())
    date_to = forms.DateField(label=_("To"), required=False, widget=DateInput())


def _day_start(day) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def trace_filters(data: dict) -> dict:
    """Form data -> search_traces arguments; a "to" date includes that whole day."""
    return {
        "q": data.get("q") or "",
        "session_id": data.get("session") or None,
        "role": data.get("role") or None,
        "time_from": _day_start(data["date_from"]) if data.get("date_from") else None,
        "time_to": (
            _day_start(data["date_to"] + timedelta(days=1)) - timedelta(microseconds=1)
            if data.get("date_to")
            else None
        ),
    }


def traces(request: HttpRequest) -> HttpResponse:
    form = TraceFilterForm(request.GET or None)
    searched = form.is_bound and form.is_valid() and any(form.cleaned_data.values())
    context = {"form": form, "searched": searched, "page_obj": None, "hits": []}
    if searched:
        filters = trace_filters(form.cleaned_data)
        page_obj = paginate(request, trace_queryset(**filters), TRACES_PER_PAGE)
        words = terms(filters["q"])
        query = request.GET.copy()
        query.pop("page", None)
        context.update(
            page_obj=page_obj,
            hits=[trace_hit(turn, words) for turn in page_obj],
            query=query.urlencode(),
        )
    return render_page(request, "curator/traces.html", context)
