"""Getting started: the steps a newcomer takes, each ticked by what has really happened.

Nothing is ticked by hand: onboarding is done when the identity is confirmed, an agent is
connected once a token has been used for an API call, the first review once the person
confirmed or ignored an item, the first search once the debugger ran a query. The panel
stays on the home page until every step is done; Settings can bring it back.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from curator.models import Actor, EventType, MemoryEvent, Owner
from memsite.models import ApiToken


@dataclass
class Step:
    key: str
    title: str
    done: bool
    hint: str
    url: str
    action: str


@dataclass
class Guide:
    steps: list[Step]
    has_token: bool
    shown: bool

    @property
    def done_count(self) -> int:
        return sum(step.done for step in self.steps)

    @property
    def complete(self) -> bool:
        return all(step.done for step in self.steps)


def _usable_tokens():
    """Tokens an agent could still call with (not revoked, not expired)."""
    now = timezone.now()
    return ApiToken.objects.filter(revoked_at__isnull=True).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )


def _reviewed(owner: Owner) -> bool:
    return MemoryEvent.objects.filter(
        owner=owner, actor=Actor.PERSON, event_type__in=[EventType.CONFIRM, EventType.REJECT]
    ).exists()


def _connect_step(has_token: bool, called: bool) -> Step:
    """Three states: no token yet, a token nobody has used, an agent that has called."""
    if called:
        hint = _("An agent has called the API.")
    elif has_token:
        hint = _("A token exists, but no agent has called the API with it yet.")
    else:
        hint = _(
            "Connect your agent: create it on the Agents page and paste the snippet it shows "
            "(MCP for Claude Desktop or Cursor, curl, or Python)."
        )
    action = _("Agents") if has_token else _("Connect an agent")
    return Step("connect", _("Connect an agent"), called, hint, reverse("agents"), action)


def guide(owner: Owner) -> Guide:
    has_token = _usable_tokens().exists()
    # Any token's use counts, even one revoked since: an agent did connect.
    called = ApiToken.objects.filter(last_used_at__isnull=False).exists()
    steps = [
        Step(
            "onboarding",
            _("Onboarding"),
            owner.identity_confirmed,
            _("Tell the assistant who it is and who you are: three short steps."),
            reverse("onboarding"),
            _("Start the onboarding"),
        ),
        _connect_step(has_token, called),
        Step(
            "review",
            _("Your first review"),
            _reviewed(owner),
            _("Confirm or ignore what your agent proposed to remember."),
            reverse("review"),
            _("Open the review desk"),
        ),
        Step(
            "search",
            _("Your first search"),
            owner.first_search_at is not None,
            _("Ask the debugger a question and see why each memory was recalled."),
            reverse("debugger"),
            _("Open the debugger"),
        ),
    ]
    result = Guide(steps, has_token, shown=False)
    result.shown = owner.show_guide or not result.complete
    return result


def note_first_search(owner: Owner) -> None:
    """The debugger ran a query: tick the guide's last step (one UPDATE, only the first time)."""
    if owner.first_search_at is None:
        Owner.objects.filter(pk=owner.pk, first_search_at__isnull=True).update(
            first_search_at=timezone.now()
        )


@require_POST
def toggle(request: HttpRequest) -> HttpResponse:
    """Settings reopens the guide; the home page folds it away again once all is done."""
    show = request.POST.get("show") == "1"
    Owner.objects.filter(pk=Owner.default().pk).update(show_guide=show)
    return redirect("home")
