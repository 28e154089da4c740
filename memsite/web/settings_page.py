"""The Settings page (sections; API tokens join later) and the onboarding reset."""

from datetime import datetime

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from curator import onboarding
from curator.models import Owner
from memsite.web.guide import guide
from memsite.web.home import _render


def settings_page(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    context = {"owner": owner, "onboarding": _onboarding_context(owner), "guide": guide(owner)}
    return _render(request, "curator/settings.html", context)


def _onboarding_context(owner: Owner) -> dict:
    draft = owner.onboarding_draft or {}
    return {
        "confirmed": owner.identity_confirmed,
        "submitted_at": _parse_time(draft.get("submitted_at")),
        "in_progress": not owner.identity_confirmed and bool(draft.get("answers")),
    }


def _parse_time(value):
    try:
        return datetime.fromisoformat(value) if value else None
    except (TypeError, ValueError):
        return None


@require_http_methods(["GET", "POST"])
def onboarding_reset(request: HttpRequest) -> HttpResponse:
    """GET says exactly what a reset changes; only the POST does it."""
    owner = Owner.default()
    if request.method == "POST":
        onboarding.reset(owner)
        messages.info(
            request,
            _("The onboarding starts again. Nothing changes until you confirm the summary."),
        )
        return redirect("onboarding")
    context = {"owner": owner, "effects": onboarding.reset_effects(owner)}
    return _render(request, "curator/onboarding_reset.html", context)
