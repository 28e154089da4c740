"""Validation and normalisation of a candidate before it is routed."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.utils import timezone
from django.utils.translation import gettext as _

from curator.models import (
    Actor,
    ConversationTurn,
    Fact,
    FactStatus,
    FactType,
    Owner,
    Priority,
    Scope,
    Session,
    Source,
    expiry_for,
)
from curator.normalize import content_key, normalise_label, normalise_text
from curator.thresholds import source_key
from curator.writepath.core import (
    DEFAULT_RETENTION,
    DURATIONS,
    MAX_CONTENT,
    MAX_LABEL,
    MAX_TAG,
    MAX_TAGS,
    Candidate,
    InvalidCandidate,
)

# --------------------------------------------------------------------------------------
# Validation and normalisation
# --------------------------------------------------------------------------------------


@dataclass
class Clean:
    """A validated, normalised candidate."""

    content: str
    subject: str
    predicate: str
    type: str
    scope: str
    confidence: float
    importance: float
    priority: str | None
    duration: str | None
    tags: list[str]
    source: str
    source_turn: ConversationTurn | None
    verified: bool
    delete_fact: Fact | None
    why: str = ""
    expires_at: datetime | None = None
    decays: bool = False
    why_code: str = ""
    why_params: dict = field(default_factory=dict)
    token_id: int | None = None

    @cached_property
    def key(self) -> str:  # content never changes once cleaned; routing asks several times
        return content_key(self.content)

    @property
    def origin(self) -> str:
        """Where it came from, as calibration and per-source thresholds name it."""
        return source_key(self.source, self.token_id)

    def retention(self, start: datetime | None = None) -> tuple[str, datetime | None]:
        """(priority, expires_at) as of `start`; computed when written, not when proposed.

        A chosen date or "decays" wins; a chosen "permanent" never expires, whatever
        duration an extractor guessed (a rule confirmed as permanent once kept the "24h" of
        its extractor and silently expired the next day)."""
        start = start or timezone.now()
        if self.decays:
            return Priority.LONG_TERM, None
        if self.expires_at is not None:
            return self.priority or priority_for(self.expires_at - start), self.expires_at
        if self.priority == Priority.PERMANENT:
            return Priority.PERMANENT, None
        duration = self.duration
        if self.priority is None and duration is None:
            duration = DEFAULT_RETENTION.get(self.type)
            if duration is None:
                return Priority.LONG_TERM, expiry_for(Priority.LONG_TERM, start)
        if duration is not None:
            priority, span = DURATIONS[duration]
            return self.priority or priority, None if span is None else start + span
        return self.priority, expiry_for(self.priority, start)

    def as_json(self) -> dict[str, Any]:
        """The candidate as a PendingItem stores it (confirm rebuilds it from this)."""
        chosen = {"expires_at": self.expires_at.isoformat()} if self.expires_at else {}
        if self.decays:
            chosen["decays"] = True
        return {
            **chosen,
            "content": self.content,
            "content_key": self.key,
            "subject": self.subject,
            "predicate": self.predicate,
            "type": self.type,
            "scope": self.scope,
            "confidence": self.confidence,
            "importance": self.importance,
            "priority": self.priority,
            "duration": self.duration,
            "tags": self.tags,
            "source": self.source,
            "source_turn_id": self.source_turn.pk if self.source_turn else None,
            "verified": self.verified,
            **({"token_id": self.token_id} if self.token_id else {}),
        }


def priority_for(span: timedelta) -> str:
    """The retention class a span until the expiry falls in (seed 001: 1 day, 3 days, more)."""
    if span <= timedelta(days=1):
        return Priority.TRANSIENT
    return Priority.SHORT_TERM if span <= timedelta(days=3) else Priority.LONG_TERM


def _field_label(name: str, capital: bool = False) -> str:
    """The field's translated name ("置信度", not "confidence"); the code stays in `field`."""
    try:
        label = str(Fact._meta.get_field(name).verbose_name)
    except FieldDoesNotExist:
        label = name
    return label[:1].upper() + label[1:] if capital else label


def clean_choice(value: Any, choices, name: str) -> str:
    if value not in choices.values:
        allowed = ", ".join(choices.values)
        raise InvalidCandidate(
            _("Unknown %(field)s “%(value)s”; use one of: %(allowed)s.")
            % {"field": _field_label(name), "value": value, "allowed": allowed},
            code=f"invalid_{name}",
            field=name,
        )
    return value


def clean_unit(value: Any, name: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or math.isnan(value) or not 0 <= value <= 1:
        raise InvalidCandidate(
            _("%(field)s must be a number between 0 and 1.") % {"field": _field_label(name, True)},
            code=f"invalid_{name}",
            field=name,
        )
    return float(value)


def clean_label(value: Any, name: str) -> str:
    text = normalise_label(str(value or ""))
    if len(text) > MAX_LABEL:
        raise InvalidCandidate(
            _("%(field)s is too long (at most %(max)d characters).")
            % {"field": _field_label(name, True), "max": MAX_LABEL},
            code=f"{name}_too_long",
            field=name,
        )
    return text


def clean_content(value: Any, keep_punctuation: bool = False) -> str:
    text = normalise_text(str(value or ""), keep_punctuation)
    if not text:
        raise InvalidCandidate(
            _("The memory is empty: write what should be remembered."),
            code="empty_content",
            field="content",
        )
    if len(text) > MAX_CONTENT:
        raise InvalidCandidate(
            _("The memory is too long: %(n)d characters, at most %(max)d.")
            % {"n": len(text), "max": MAX_CONTENT},
            code="content_too_long",
            field="content",
        )
    return text


def clean_tags(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, list | tuple):
        message = _("Tags must be a list of words.")
        raise InvalidCandidate(message, code="invalid_tags", field="tags")
    tags = list(dict.fromkeys(t for t in (normalise_label(str(v)) for v in value) if t))
    if len(tags) > MAX_TAGS or any(len(t) > MAX_TAG for t in tags):
        raise InvalidCandidate(
            _("At most %(n)d tags of at most %(max)d characters each.")
            % {"n": MAX_TAGS, "max": MAX_TAG},
            code="invalid_tags",
            field="tags",
        )
    return tags


def _retention_choice(priority: Any, duration: Any) -> tuple[str | None, str | None]:
    if priority not in (None, ""):
        clean_choice(priority, Priority, "priority")
    if duration not in (None, "") and duration not in DURATIONS:
        raise InvalidCandidate(
            _("Unknown duration “%(value)s”; use one of: %(allowed)s.")
            % {"value": duration, "allowed": ", ".join(DURATIONS)},
            code="invalid_duration",
            field="duration",
        )
    return priority or None, duration or None


def _chosen_expiry(value: Any, decays: Any, priority: str | None) -> tuple[datetime | None, bool]:
    """A retention chosen by the person: a future expiry (datetime or ISO text), or decay."""
    decays = bool(decays)
    if value in (None, ""):
        expires = None
    else:
        expires = value if isinstance(value, datetime) else _parse_time(value)
        if expires is not None and timezone.is_naive(expires):  # read in the configured zone
            expires = timezone.make_aware(expires)
        if expires is None or expires <= timezone.now():
            raise InvalidCandidate(
                _("The expiry must be a date and time in the future."),
                code="invalid_expires_at",
                field="expires_at",
            )
    if decays and (expires is not None or priority == Priority.PERMANENT):
        raise InvalidCandidate(
            _("A memory that decays has no expiry date and is not permanent."),
            code="invalid_retention",
            field="expires_at",
        )
    return expires, decays


def _parse_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _turn(turn_id: Any, owner: Owner) -> ConversationTurn | None:
    if turn_id in (None, ""):
        return None
    turn_id = ConversationTurn._meta.pk.get_prep_value(turn_id)  # as filter(pk=...) takes it
    # Raw: every extracted memory asks, and compiling the ORM's query cost more than the read.
    turn = next(iter(ConversationTurn.objects.raw(_OWN_TURN, [turn_id, owner.pk])), None)
    if turn is None:
        raise InvalidCandidate(
            _("Conversation turn %(id)s does not exist.") % {"id": turn_id},
            code="unknown_turn",
            field="source_turn_id",
        )
    return turn


_OWN_TURN = (
    f"SELECT t.* FROM {ConversationTurn._meta.db_table} t "
    f"JOIN {Session._meta.db_table} s ON s.id = t.session_id WHERE t.id = %s AND s.owner_id = %s"
)


def _deletion_target(fact_id: Any, owner: Owner) -> Fact | None:
    if fact_id in (None, ""):
        return None
    fact = Fact.objects.filter(pk=fact_id, owner=owner).first()
    if fact is None or fact.status != FactStatus.ACTIVE:
        raise InvalidCandidate(
            _("Fact %(id)s does not exist or is no longer active.") % {"id": fact_id},
            code="unknown_fact",
            field="delete_fact_id",
        )
    return fact


def clean_candidate(candidate: Candidate, owner: Owner, actor: str = "") -> Clean:
    """Normalise and validate, or raise InvalidCandidate before anything is written.

    The person's own words (written or confirmed by them, or their onboarding answers
    relayed by an agent) keep their punctuation as typed."""
    target = _deletion_target(candidate.delete_fact_id, owner)
    persons = actor == Actor.PERSON or candidate.source == Source.ONBOARDING
    why = ""
    if target is not None:
        # A deletion is about the target; the agent's own text (if any) is its reason.
        why = normalise_text(str(candidate.content or ""))[:MAX_CONTENT]
        content = target.content
    else:
        content = clean_content(candidate.content, keep_punctuation=persons)
    priority, duration = _retention_choice(candidate.priority, candidate.duration)
    expires_at, decays = _chosen_expiry(candidate.expires_at, candidate.decays, priority)
    return Clean(
        content=content,
        subject=clean_label(candidate.subject, "subject"),
        predicate=clean_label(candidate.predicate, "predicate"),
        type=clean_choice(candidate.type, FactType, "type"),
        scope=clean_choice(candidate.scope, Scope, "scope"),
        confidence=clean_unit(candidate.confidence, "confidence"),
        importance=clean_unit(candidate.importance, "importance"),
        priority=priority,
        duration=duration,
        tags=clean_tags(candidate.tags),
        source=clean_choice(candidate.source, Source, "source"),
        source_turn=_turn(candidate.source_turn_id, owner),
        verified=bool(candidate.verified),
        delete_fact=target,
        why=why if why != normalise_text(content) else "",
        expires_at=expires_at,
        decays=decays,
        why_code=str(candidate.why_code or "")[:40] if target is not None else "",
        why_params=dict(candidate.why_params or {}) if target is not None else {},
        token_id=candidate.token_id if isinstance(candidate.token_id, int) else None,
    )


def check_actor(actor: str) -> None:
    if actor not in Actor.values:
        raise InvalidCandidate(
            _("Unknown actor “%(value)s”.") % {"value": actor}, code="invalid_actor", field="actor"
        )
