"""The Agents page: every agent (API token), what it read and wrote, and the person's controls.

Per agent: writes and reads in the last 7 days, its recent recalls, what it proposed and how
much was confirmed; pause switches (writes, then reads too), scope limits and revoke (after a
confirmation page). Creating an agent answers with the page showing its token once, inside
the connection snippets; the token is never put in a redirect, the session or a message,
where it would be stored. Every control is a plain form: the page works without JavaScript.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from curator.models import ConversationTurn, Fact, MemoryEvent, PendingItem, PendingStatus, Scope
from memsite.core import agents as rules
from memsite.core.tokens import create_token, issue_token, revoke_token
from memsite.models import ApiToken, TokenScope
from memsite.web.connect import snippets
from memsite.web.render import render_page
from retrieval.models import RecallLog

WINDOW = timedelta(days=7)
RECENT_RECALLS = 20
RECENT_PROPOSALS = 10
EXPIRY_CHOICES = [
    ("", gettext_lazy("Never")),
    ("7", gettext_lazy("In 7 days")),
    ("30", gettext_lazy("In 30 days")),
    ("90", gettext_lazy("In 90 days")),
    ("365", gettext_lazy("In a year")),
]
# Where a recalled item opens (the recall log keeps kind and id).
ITEM_PAGES = {"fact": "fact", "episode": "episode", "turn": "turn", "attachment": "attachment"}


# -- forms ---------------------------------------------------------------------------------------


def _scope_field(label):
    return forms.MultipleChoiceField(
        label=label,
        choices=Scope.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=gettext_lazy("None ticked: every scope."),
    )


class ScopeLimitsForm(forms.Form):
    read_scopes = _scope_field(gettext_lazy("May read"))
    write_scopes = _scope_field(gettext_lazy("May write"))


class AgentForm(ScopeLimitsForm):
    name = forms.CharField(
        label=gettext_lazy("Name"),
        max_length=100,
        help_text=gettext_lazy("Who will use it, e.g. “chat assistant” or “coding agent”."),
    )
    description = forms.CharField(
        label=gettext_lazy("Description"),
        required=False,
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    scope = forms.ChoiceField(
        label=gettext_lazy("Access"),
        choices=[
            (
                TokenScope.READ_WRITE,
                gettext_lazy("Read and write (record turns, propose memories)"),
            ),
            (TokenScope.READ, gettext_lazy("Read only (search, context, lists)")),
        ],
        initial=TokenScope.READ_WRITE,
    )
    expires = forms.ChoiceField(
        label=gettext_lazy("Expires"), choices=EXPIRY_CHOICES, required=False
    )
    field_order = ["name", "description", "scope", "expires", "read_scopes", "write_scopes"]

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError(_("Give the agent a name."))
        return name

    def expires_at(self):
        days = self.cleaned_data.get("expires")
        return timezone.now() + timedelta(days=int(days)) if days else None


# -- what the page shows -------------------------------------------------------------------------


@dataclass
class Proposals:
    """Pending items the agent sent to review, by what the person did with them."""

    total: int = 0
    confirmed: int = 0
    ignored: int = 0
    waiting: int = 0
    written: int = 0  # facts of this agent written without review (confident enough)

    @property
    def confirmed_percent(self) -> int | None:
        decided = self.confirmed + self.ignored
        return round(100 * self.confirmed / decided) if decided else None


@dataclass
class AgentRow:
    agent: ApiToken
    writes: int = 0
    reads: int = 0
    proposals: Proposals = field(default_factory=Proposals)

    @property
    def state(self) -> str:
        """revoked / expired / needs_token / reads_paused / paused / active."""
        base = self.agent.state()
        if base != "active":
            return base
        if self.agent.reads_paused:
            return "reads_paused"
        return "paused" if self.agent.writes_paused else "active"

    @property
    def read_labels(self) -> list[str]:
        return _labels(self.agent.read_scopes)

    @property
    def write_labels(self) -> list[str]:
        return _labels(self.agent.write_scopes)


def _labels(scopes) -> list[str]:
    names = dict(Scope.choices)
    return [str(names.get(s, s)) for s in scopes or []]


def _counts(queryset, field_name: str = "agent_id") -> dict[int, int]:
    rows = queryset.values(field_name).annotate(n=Count("pk")).values_list(field_name, "n")
    return dict(rows)


def agent_rows(agents: list[ApiToken], now=None) -> list[AgentRow]:
    """The table's figures for these agents in a handful of grouped queries."""
    since = (now or timezone.now()) - WINDOW
    ids = [a.pk for a in agents]
    events = _counts(MemoryEvent.objects.filter(agent_id__in=ids, created_at__gte=since))
    turns = _counts(ConversationTurn.objects.filter(agent_id__in=ids, timestamp__gte=since))
    reads = _counts(RecallLog.objects.filter(agent_id__in=ids, created_at__gte=since))
    written = _counts(Fact.objects.filter(agent_id__in=ids, verified=False))
    proposals: dict[int, Proposals] = {pk: Proposals(written=written.get(pk, 0)) for pk in ids}
    pending = (
        PendingItem.objects.filter(agent_id__in=ids)
        .values("agent_id", "status")
        .annotate(n=Count("pk"))
        .values_list("agent_id", "status", "n")
    )
    for agent_id, status, n in pending:
        p = proposals[agent_id]
        p.total += n
        if status == PendingStatus.CONFIRMED:
            p.confirmed += n
        elif status == PendingStatus.REJECTED:
            p.ignored += n
        else:
            p.waiting += n
    return [
        AgentRow(a, events.get(a.pk, 0) + turns.get(a.pk, 0), reads.get(a.pk, 0), proposals[a.pk])
        for a in agents
    ]


def recent_recalls(agent: ApiToken, limit: int = RECENT_RECALLS) -> list[dict]:
    """The agent's latest searches: query, what came back (with links), when."""
    logs = list(RecallLog.objects.filter(agent=agent).order_by("-created_at", "-id")[:limit])
    fact_ids = {i.get("id") for log in logs for i in log.results or [] if i.get("kind") == "fact"}
    texts = dict(Fact.objects.filter(pk__in=fact_ids).values_list("pk", "content"))
    return [
        {"log": log, "items": [_recalled(item, texts) for item in log.results or []]}
        for log in logs
    ]


def _recalled(item: dict, texts: dict[int, str]) -> dict:
    kind, pk = str(item.get("kind", "")), item.get("id")
    try:
        url = reverse(ITEM_PAGES[kind], args=[pk]) if kind in ITEM_PAGES else ""
    except NoReverseMatch:
        url = ""
    text = texts.get(pk, "") if kind == "fact" else ""
    return {"kind": kind, "id": pk, "url": url, "rank": item.get("rank"), "text": text}


# -- views ---------------------------------------------------------------------------------------


def _list_context(form=None, new_agent=None, new_secret: str = "", request=None) -> dict:
    agents = list(ApiToken.objects.all())
    context = {
        "rows": agent_rows(agents),
        "form": form or AgentForm(),
        "new_agent": new_agent,
        "writes_paused": rules.writes_paused(),
    }
    if new_agent is not None and request is not None:
        context["snippets"] = snippets(request.build_absolute_uri("/"), new_secret)
        context["new_secret"] = new_secret
    return context


@require_http_methods(["GET", "POST"])
def agents(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return render_page(request, "memsite/agents.html", _list_context())
    form = AgentForm(request.POST)
    if not form.is_valid():
        return render_page(request, "memsite/agents.html", _list_context(form=form))
    data = form.cleaned_data
    agent, secret = create_token(data["name"], data["scope"], form.expires_at())
    agent.description = data["description"].strip()
    agent.save(update_fields=["description"])
    rules.set_scopes(agent, read=data["read_scopes"], write=data["write_scopes"])
    context = _list_context(new_agent=agent, new_secret=secret, request=request)
    return render_page(request, "memsite/agents.html", context)


def agent(request: HttpRequest, pk: int) -> HttpResponse:
    found = get_object_or_404(ApiToken, pk=pk)
    (row,) = agent_rows([found])
    context = {
        "row": row,
        "agent": found,
        "recalls": recent_recalls(found),
        "proposals": PendingItem.objects.filter(agent=found).order_by("-created_at", "-pk")[
            :RECENT_PROPOSALS
        ],
        "scopes_form": ScopeLimitsForm(
            initial={"read_scopes": found.read_scopes, "write_scopes": found.write_scopes}
        ),
        "writes_paused": rules.writes_paused(),
    }
    return render_page(request, "memsite/agent.html", context)


PAUSE_ACTIONS = {
    "pause": {"writes": True},
    "pause_reads": {"writes": True, "reads": True},
    "resume": {"writes": False},
}


@require_POST
def pause(request: HttpRequest, pk: int) -> HttpResponse:
    found = get_object_or_404(ApiToken, pk=pk)
    action = request.POST.get("action", "")
    if action not in PAUSE_ACTIONS:
        messages.error(request, _("Choose pause, pause reads too, or resume."))
        return redirect("agent", pk=pk)
    rules.set_paused(found, **PAUSE_ACTIONS[action])
    messages.success(request, _pause_message(found))
    return redirect("agent", pk=pk)


def _pause_message(found: ApiToken) -> str:
    if found.reads_paused:
        return _("“%(name)s” is paused: its reads and writes are refused.") % {"name": found.name}
    if found.writes_paused:
        return _("“%(name)s” is paused: its writes are refused, nothing is stored.") % {
            "name": found.name
        }
    return _("“%(name)s” is active again.") % {"name": found.name}


@require_POST
def scopes(request: HttpRequest, pk: int) -> HttpResponse:
    found = get_object_or_404(ApiToken, pk=pk)
    form = ScopeLimitsForm(request.POST)
    if form.is_valid():
        rules.set_scopes(
            found, read=form.cleaned_data["read_scopes"], write=form.cleaned_data["write_scopes"]
        )
        messages.success(
            request, _("The scope limits of “%(name)s” are saved.") % {"name": found.name}
        )
    else:
        messages.error(request, _("Those scopes do not exist."))
    return redirect("agent", pk=pk)


@require_POST
def new_token(request: HttpRequest, pk: int) -> HttpResponse:
    """One click gives an agent restored from an archive (which carries no secrets) a token;
    the page shows it once, as for a new agent."""
    found = get_object_or_404(ApiToken, pk=pk)
    if not found.needs_token:
        messages.error(request, _("“%(name)s” already has a token.") % {"name": found.name})
        return redirect("agent", pk=pk)
    secret = issue_token(found)
    context = _list_context(new_agent=found, new_secret=secret, request=request)
    return render_page(request, "memsite/agents.html", context)


@require_http_methods(["GET", "POST"])
def revoke(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for a confirmation (what revoking changes); only the POST revokes."""
    found = get_object_or_404(ApiToken, pk=pk)
    if request.method == "POST":
        revoke_token(found.pk)
        messages.success(
            request,
            _("“%(name)s” is revoked; calls with its token now get 401.") % {"name": found.name},
        )
        return redirect("agents")
    return render_page(request, "memsite/agent_revoke.html", {"agent": found})
