"""API: do-not-store rules (guardrails). The built-in detectors are listed with the person's
own rules; they can be switched on or off, never deleted or changed in what they match."""

from datetime import datetime
from typing import Literal

from django.utils.translation import gettext as _
from ninja import Field, Router, Schema, Status
from pydantic import StrictBool

from curator.guard import rules as guard
from curator.models import FactType, GuardRule, Scope
from memsite.api.common import (
    AUTH_ERRORS,
    BODY_ERRORS,
    WRITE,
    WRITE_ERRORS,
    ErrorOut,
    Id,
    not_found,
    owner,
)
from memsite.api.errors import ApiError
from memsite.api.types import BodyIn

router = Router()
TypeName = Literal[tuple(FactType.values)]
ScopeName = Literal[tuple(Scope.values)]
DetectorName = Literal[tuple(guard.DETECTOR_NAMES)]


class RuleOut(Schema):
    id: int
    name: str
    detector: str | None = Field(description="The built-in detector, or null for your own rule.")
    category: str | None = Field(description="secret or personal, for a detector.")
    words: list[str]
    pattern: str
    fact_types: list[str]
    scopes: list[str]
    agents: list[int] = Field(description="API token ids it is limited to; empty: every source.")
    enabled: bool
    redact_turns: bool
    action: Literal["block", "review"] = Field(
        description="block: a matching memory is never stored; review: it waits for the person."
    )
    created_at: datetime
    updated_at: datetime


def rule_dict(rule: GuardRule) -> dict:
    detector = guard.DETECTORS.get(rule.detector) if rule.detector else None
    return {
        "id": rule.pk,
        "name": rule.name,
        "detector": rule.detector or None,
        "category": detector.category if detector else None,
        "words": rule.words or [],
        "pattern": rule.pattern,
        "fact_types": rule.fact_types or [],
        "scopes": rule.scopes or [],
        "agents": rule.agents or [],
        "enabled": rule.enabled,
        "redact_turns": rule.redact_turns,
        "action": rule.action,
        "created_at": rule.created_at,
        "updated_at": rule.updated_at,
    }


class RulesOut(Schema):
    items: list[RuleOut]


class RuleIn(BodyIn):
    name: str = Field(min_length=1, max_length=100)
    words: list[str] = Field(default_factory=list, max_length=guard.MAX_WORDS)
    pattern: str = Field("", max_length=guard.MAX_PATTERN)
    fact_types: list[TypeName] = Field(default_factory=list)
    scopes: list[ScopeName] = Field(default_factory=list)
    agents: list[int] = Field(default_factory=list, max_length=100)
    enabled: StrictBool = True
    redact_turns: StrictBool = Field(False, description="Also mask its matches in incoming turns.")
    action: Literal["block", "review"] = Field(
        "block", description="block: never stored; review: sent to the review desk instead."
    )


class RulePatch(BodyIn):
    name: str | None = Field(None, min_length=1, max_length=100)
    words: list[str] | None = Field(None, max_length=guard.MAX_WORDS)
    pattern: str | None = Field(None, max_length=guard.MAX_PATTERN)
    fact_types: list[TypeName] | None = None
    scopes: list[ScopeName] | None = None
    agents: list[int] | None = Field(None, max_length=100)
    enabled: StrictBool | None = None
    redact_turns: StrictBool | None = None
    action: Literal["block", "review"] | None = None


def rule_error(exc: guard.RuleError) -> ApiError:
    if exc.code == "builtin_rule":
        return ApiError(409, exc.code, str(exc))
    fields = {exc.field: str(exc)} if exc.field else None
    return ApiError(422, exc.code, str(exc), fields)


def _rule(rule_id: int) -> GuardRule:
    guard.all_rules(owner())  # the detectors exist before anyone asks for one
    rule = GuardRule.objects.filter(owner=owner(), pk=rule_id).first()
    if rule is None:
        raise not_found(_("rule"))
    return rule


@router.get(
    "/rules",
    response={200: RulesOut, **AUTH_ERRORS},
    summary="List the guardrails: built-in detectors first, then your own rules",
    tags=["rules"],
)
def list_rules(request):
    return {"items": [rule_dict(r) for r in guard.all_rules(owner())]}


@router.post(
    "/rules",
    auth=WRITE,
    response={201: RuleOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Add a do-not-store rule (words, a regular expression, fact types, scopes)",
    tags=["rules"],
)
def create_rule(request, payload: RuleIn):
    """A candidate memory the rule matches is never written or queued (outcome blocked);
    with redact_turns, its matches in incoming turns are masked before they are stored."""
    try:
        rule = guard.create_rule(payload.dict(), owner())
    except guard.RuleError as exc:
        raise rule_error(exc) from None
    return Status(201, rule_dict(rule))


# Before /rules/{rule_id}: Django would take "test" for a rule id.
class TrialIn(BodyIn):
    text: str = Field(min_length=1, max_length=100_000)
    detector: DetectorName | None = None
    words: list[str] = Field(default_factory=list, max_length=guard.MAX_WORDS)
    pattern: str = Field("", max_length=guard.MAX_PATTERN)


class TrialOut(Schema):
    matches: int
    masked: str = Field(description="The text with every match masked.")


@router.post(
    "/rules/test",
    auth=WRITE,
    response={200: TrialOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Try a rule (words, a pattern or a detector) on sample text without saving it",
    tags=["rules"],
)
def test_rule(request, payload: TrialIn):
    values = payload.dict()
    text = values.pop("text")
    try:
        _matcher, spans = guard.trial(values, text, owner())
    except guard.RuleError as exc:
        raise rule_error(exc) from None
    return {"matches": len(spans), "masked": guard.mask(text, spans)}


@router.get(
    "/rules/{rule_id}",
    response={200: RuleOut, 404: ErrorOut, **AUTH_ERRORS},
    summary="One guardrail",
    tags=["rules"],
)
def get_rule(request, rule_id: Id):
    return rule_dict(_rule(rule_id))


@router.patch(
    "/rules/{rule_id}",
    auth=WRITE,
    response={200: RuleOut, 404: ErrorOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Change a rule, or switch a built-in detector on or off",
    tags=["rules"],
)
def edit_rule(request, rule_id: Id, payload: RulePatch):
    """A built-in detector takes enabled, redact_turns, agents, fact_types and scopes only."""
    rule = _rule(rule_id)
    changes = payload.dict(exclude_unset=True)
    nulls = [name for name, value in changes.items() if value is None]
    if nulls:
        raise ApiError(
            422, "invalid", _("%(f)s cannot be null.") % {"f": nulls[0]}, {nulls[0]: "null"}
        )
    try:
        rule = guard.update_rule(rule, changes)
    except guard.RuleError as exc:
        raise rule_error(exc) from None
    return rule_dict(rule)


@router.delete(
    "/rules/{rule_id}",
    auth=WRITE,
    response={204: None, 404: ErrorOut, 409: ErrorOut, **WRITE_ERRORS},
    summary="Delete one of your rules (a built-in detector is switched off instead: 409)",
    tags=["rules"],
)
def delete_rule(request, rule_id: Id):
    try:
        guard.delete_rule(_rule(rule_id))
    except guard.RuleError as exc:
        raise rule_error(exc) from None
    return Status(204, None)
