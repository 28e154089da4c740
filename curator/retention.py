"""How long a memory lasts, in the three forms a person can choose between (issue 19).

- permanent: kept until the person removes it (priority "permanent", no expiry, no decay);
- expires: gone on a date (seed 001's transient / short / long term, or a date the person picks);
- decays: no date, but its importance fades while it is not used (x0.95 per idle week after
  the first, lifecycle.decay), so after about HALF_LIFE_DAYS unused it has halved and the
  nightly run asks the person whether to keep it.

A confirmed (verified) memory never decays, except one the person chose to let decay (long
term with no expiry date): so the choice on the review card is what happens.
`for_candidate` says what confirming a waiting candidate would give, from the same
`Clean.retention` the write path uses; `for_fact` says it for a stored fact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from django.utils.translation import gettext as _

from curator.models import Fact, Priority, Scope

KINDS = ("permanent", "expires", "decays")
# The fact decay of lifecycle.decay (seed 004): x0.95 per whole idle week, after a grace week.
FACT_FACTOR = 0.95
GRACE_DAYS = 7
HALF_LIFE_DAYS = GRACE_DAYS + 7 * math.ceil(math.log(0.5) / math.log(FACT_FACTOR))  # 105 days


@dataclass(frozen=True)
class Retention:
    kind: str  # permanent | expires | decays
    priority: str
    expires_at: datetime | None = None
    half_life_days: int | None = None

    @property
    def label(self) -> str:
        if self.kind == "permanent":
            return _("permanent")
        if self.kind == "expires" and self.expires_at is not None:
            when = timezone.localtime(self.expires_at).strftime("%Y-%m-%d %H:%M")
            return _("expires on %(when)s") % {"when": when}
        return _("decays: importance halves after about %(days)d days unused") % {
            "days": self.half_life_days or HALF_LIFE_DAYS
        }

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "priority": self.priority,
            "expires_at": self.expires_at,
            "half_life_days": self.half_life_days,
            "label": self.label,
        }


def describe(priority: str, expires_at: datetime | None, *, exempt: bool = False) -> Retention:
    """Permanent, expiring or decaying; `exempt`: something else keeps it from decaying."""
    if expires_at is not None:
        return Retention("expires", priority, expires_at)
    if priority == Priority.PERMANENT or exempt:
        return Retention("permanent", priority)
    return Retention("decays", priority, None, HALF_LIFE_DAYS)


def decays_when_verified(priority: str, expires_at) -> bool:
    """A verified fact decays only when the person chose that: long term, no expiry date."""
    return priority == Priority.LONG_TERM and expires_at is None


def for_fact(fact: Fact) -> Retention:
    exempt = (
        fact.scope == Scope.SYSTEM
        or "core" in (fact.tags or [])
        or (fact.verified and not decays_when_verified(fact.priority, fact.expires_at))
    )
    return describe(fact.priority, fact.expires_at, exempt=exempt)


def for_clean(clean, now: datetime | None = None) -> Retention:
    """What confirming this (cleaned) candidate now gives: confirming verifies it."""
    priority, expires_at = clean.retention(now)
    exempt = not decays_when_verified(priority, expires_at)
    return describe(priority, expires_at, exempt=exempt)


def edits(kind: str, expires_at: datetime | None = None) -> dict:
    """The candidate fields a retention chosen at review time sets (pages and API alike);
    every one is given, so an extractor's guessed duration cannot outlive the choice."""
    if kind == "permanent":
        return {
            "priority": Priority.PERMANENT,
            "duration": None,
            "expires_at": None,
            "decays": False,
        }
    if kind == "decays":
        return {
            "priority": Priority.LONG_TERM,
            "duration": None,
            "expires_at": None,
            "decays": True,
        }
    return {"priority": None, "duration": None, "expires_at": expires_at, "decays": False}
