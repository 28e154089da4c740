"""API: the compiled profile for the system prompt, and the onboarding an agent can run in chat."""

from typing import Any

from django.utils.translation import gettext as _
from ninja import Field, Router, Schema

from curator import compiler, onboarding
from curator.models import Actor, Scope
from memsite.api.common import (
    AUTH_ERRORS,
    BODY_ERRORS,
    WRITE,
    WRITE_ERRORS,
    ErrorOut,
    owner,
    read_limits,
    require_scopes,
)
from memsite.api.errors import ApiError
from memsite.api.types import BodyIn
from memsite.models import ApiToken

router = Router(tags=["profile"])


class ProfileOut(Schema):
    identity_confirmed: bool
    display_name: str
    persona_card: str = Field(description="The persona card, compiled to its token budget.")
    user_card: str = Field(description="The user card, compiled to its token budget.")
    tokens: int
    budget: int


@router.get(
    "/profile",
    response={200: ProfileOut, **AUTH_ERRORS},
    summary="Who the assistant is and who the person is, for the system prompt",
)
def profile(request):
    return profile_for(request.auth)


def profile_for(agent: ApiToken | None) -> dict:
    """The compiled cards; a card whose scope this agent may not read comes back empty."""
    person = owner()
    compiled = compiler.compiled_profile().to_dict()
    limits = read_limits(agent)
    persona = compiled["persona_card"] if limits.fact_visible(Scope.SYSTEM) else ""
    user = compiled["user_card"] if limits.fact_visible(Scope.USER) else ""
    return {
        "identity_confirmed": person.identity_confirmed,
        "display_name": person.display_name,
        "persona_card": persona,
        "user_card": user,
        "tokens": compiled["tokens"],
        "budget": compiled["budget"],
    }


class OnboardingOut(Schema):
    identity_confirmed: bool
    display_name: str
    step: int
    steps: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    answers: dict[str, str]


class OnboardingIn(BodyIn):
    answers: dict[str, str | None] = Field(description="Question key -> answer.")
    operation_id: str | None = Field(None, max_length=200, description="Makes a retry safe.")


class SubmitOut(Schema):
    ok: bool
    replayed: bool
    facts: list[int]
    status: OnboardingOut


@router.get(
    "/onboarding",
    response={200: OnboardingOut, **AUTH_ERRORS},
    summary="Onboarding status, questions and current answers",
)
def onboarding_status(request):
    return onboarding.status(owner())


@router.post(
    "/onboarding",
    auth=WRITE,
    response={200: SubmitOut, 409: ErrorOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Submit the onboarding answers (all or nothing)",
)
def onboarding_submit(request, payload: OnboardingIn):
    """422 with one message per question when an answer is missing or too long; 409 when the
    onboarding was already confirmed (reset it in Settings) or a fact could not be written."""
    person = owner()
    require_scopes(request.auth, [Scope.SYSTEM, Scope.USER])  # the two cards it writes
    result = onboarding.submit(
        payload.answers,
        owner=person,
        actor=Actor.AGENT,
        operation_id=payload.operation_id,
        agent_id=request.auth.pk,
    )
    if result.code == "invalid":
        raise ApiError(422, "invalid", _("Some answers need attention."), result.errors)
    if not result.ok:
        detail = result.errors.get("__all__") or _("The onboarding was not saved.")
        raise ApiError(409, result.code or "conflict", detail)
    person.refresh_from_db()
    return {
        "ok": True,
        "replayed": result.replayed,
        "facts": [f.pk for f in result.facts],
        "status": onboarding.status(person),
    }
