"""The Settings page (sections), the onboarding reset and the "pause all memory writes" switch."""

from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import get_language_info
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from curator import onboarding
from curator.models import Owner
from memsite.core import agents
from memsite.models import ApiToken
from memsite.web import playground
from memsite.web.guide import guide
from memsite.web.render import render_page


def settings_page(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    context = {
        "owner": owner,
        "onboarding": _onboarding_context(owner),
        "guide": guide(owner),
        "writes_paused": agents.writes_paused(),
        "agent_count": ApiToken.objects.filter(revoked_at__isnull=True).count(),
    }
    context.update(_language_context(owner))
    context.update(playground.settings_context())
    context["proxy_base"] = request.build_absolute_uri("/llm/v1")
    return render_page(request, "curator/settings.html", context)


@require_POST
def memory_pause(request: HttpRequest) -> HttpResponse:
    """Pause or resume every agent's memory writes (the person's own edits still work)."""
    paused = request.POST.get("paused") == "1"
    agents.set_writes_paused(paused)
    if paused:
        messages.warning(
            request, _("All memory writes are paused: agents' writes are refused (423).")
        )
    else:
        messages.success(request, _("Memory writes are open again."))
    return redirect(reverse("settings") + "#memory-pause")


def _language_context(owner: Owner) -> dict:
    """Each language named in itself, as the switcher does."""
    choices = [(code, get_language_info(code)["name_local"]) for code, _name in settings.LANGUAGES]
    own = owner.language or settings.LANGUAGE_CODE
    return {"language_choices": choices, "owner_language_name": dict(choices).get(own, own)}


@require_POST
def context_language(request: HttpRequest) -> HttpResponse:
    code = request.POST.get("context_language", "")
    if code and code not in dict(settings.LANGUAGES):
        messages.error(request, _("Choose one of the listed languages."))
        return redirect("settings")
    Owner.objects.filter(pk=Owner.default().pk).update(context_language=code)
    messages.success(request, _("Saved: the agent's context is now written in that language."))
    return redirect(reverse("settings") + "#language-settings")


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
    return render_page(request, "curator/onboarding_reset.html", context)
