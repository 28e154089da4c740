"""The onboarding wizard: three steps, a server-side draft, HTMX swaps, plain forms without JS.

All the logic lives in curator/onboarding.py (the API calls the same functions); this view
only moves between steps and shows errors in place.
"""

import logging

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django_htmx.http import HttpResponseClientRedirect

from curator import cards, onboarding
from curator.models import Actor, Owner
from memsite.web.render import render_page

log = logging.getLogger(__name__)


def _redirect(request: HttpRequest, name: str) -> HttpResponse:
    """A real redirect, or a full-page one for HTMX (the navigation changes too)."""
    if request.htmx:
        return HttpResponseClientRedirect(reverse(name))
    return redirect(name)


def wizard(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    if owner.identity_confirmed:
        messages.info(request, _("The onboarding is done. To run it again, reset it in Settings."))
        return _redirect(request, "settings")
    if request.method == "POST":
        return _post(request, owner)
    step = onboarding.current_step(owner)
    asked = request.GET.get("step", "")
    if asked.isdigit() and 1 <= int(asked) <= onboarding.reached_step(owner):
        step = int(asked)
    return paginate(request, owner, step)


def _post(request: HttpRequest, owner: Owner) -> HttpResponse:
    step = _int(request.POST.get("step"), 1, 1, onboarding.LAST_STEP)
    action = request.POST.get("action", "next")
    keys = [q.key for q in onboarding.questions(step)]
    typed = {key: request.POST[key] for key in keys if key in request.POST}
    if action == "confirm":
        onboarding.save_draft(owner, typed, step)
        return _confirm(request, owner)
    if action == "next":
        _cleaned, errors = onboarding.validate({**onboarding.answers(owner), **typed}, step)
        if errors:
            onboarding.save_draft(owner, typed, step)  # keep what was typed, even if wrong
            return paginate(request, owner, step, errors=errors)
        target = step + 1
    elif action.startswith("goto:"):
        target = _int(action[5:], step, 1, onboarding.reached_step(owner))
    else:  # "back"
        target = step - 1
    onboarding.save_draft(owner, typed, _int(target, 1, 1, onboarding.LAST_STEP))
    if request.htmx:
        return paginate(request, owner, onboarding.current_step(owner))
    return redirect("onboarding")  # post/redirect/get: a reload never resubmits


def _confirm(request: HttpRequest, owner: Owner) -> HttpResponse:
    try:
        result = onboarding.submit(onboarding.answers(owner), owner=owner, actor=Actor.PERSON)
    except Exception as exc:  # the submit undid everything; say so instead of a 500
        log.exception("onboarding confirm failed")
        reason = str(exc)[:300] or type(exc).__name__
        error = _("Nothing was saved: %(reason)s") % {"reason": reason}
        return paginate(request, owner, onboarding.LAST_STEP, error=error)
    if result.ok:
        messages.success(
            request,
            _("Welcome, %(name)s! The assistant's persona and your profile are saved.")
            % {"name": owner.display_name},
        )
        return _redirect(request, "home")
    if result.code == "invalid":
        onboarding.save_draft(owner, {}, result.step)
        return paginate(request, owner, result.step, errors=result.errors)
    if result.code == "already_confirmed":
        return _redirect(request, "home")
    return paginate(request, owner, onboarding.LAST_STEP, error=result.errors.get("__all__", ""))


def _int(value, default: int, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return min(max(number, low), high)


def paginate(request, owner, step: int, errors=None, error: str = "") -> HttpResponse:
    values = onboarding.answers(owner)
    reached = onboarding.reached_step(owner)
    context = {
        "step": step,
        "last_step": onboarding.LAST_STEP,
        "steps": [
            {"number": n, "title": title, "done": n < step, "reachable": n <= reached}
            for n, _key, title in onboarding.STEPS
        ],
        "fields": [
            {"q": q, "value": values.get(q.key, ""), "error": (errors or {}).get(q.key, "")}
            for q in onboarding.questions(step)
        ],
        "errors": errors or {},
        "error": error,
    }
    if step == onboarding.LAST_STEP:
        context.update(_summary(values))
    return render_page(request, "curator/onboarding.html", context)


def _summary(values: dict) -> dict:
    """The two cards as they will be written, and what a confirm changes."""
    cleaned, errors = onboarding.validate(values)
    if errors:
        return {"invalid": True}
    persona, user = onboarding.persona_card(cleaned), onboarding.user_card(cleaned)
    return {
        "invalid": False,
        "cards": [
            {
                "title": cards.spec(key).title,
                "path": cards.spec(key).path,
                "about": cards.spec(key).about,
                "html": cards.render(text),
                "replaces": bool(cards.read(key).strip()),
                "step": step,
            }
            for key, text, step in (("persona", persona, 1), ("user", user, 2))
        ],
        "planned_facts": onboarding.planned_facts(cleaned),
        "display_name": cleaned["address"],
    }
