"""Input types every API schema shares: one way to read a date and time, strict JSON bodies.

Every datetime an agent sends goes through these types (schema fields and query parameters
alike), so the rest of the code only ever sees aware datetimes it can convert, compare, store
and show in any time zone:

- Only ISO 8601 text is a datetime ("2026-03-01", "2026-03-01T09:30:00+08:00"). Numbers, and
  digit strings pydantic would read as Unix times ("20260301" -> 1970-08-23), are refused.
- A time without an offset is read in the configured time zone (settings.TIME_ZONE).
- A point in time (a turn's timestamp, an expiry, "ask again at") must lie a day inside what
  Python can represent: UTC+-14 h would otherwise overflow when the value is stored or shown.
  Outside, 422 with the field named.
- A range bound is clamped instead: a time_to past that window means "no upper bound", a
  time_from before it "no lower bound"; bounds on the far side match nothing, as they should.
"""

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from django.utils import timezone
from django.utils.translation import gettext as _
from ninja import Schema
from ninja.schema import DjangoGetter
from pydantic import AfterValidator, BeforeValidator, model_validator
from pydantic_core import PydanticCustomError

# A day inside datetime's range: the widest offsets (+-14 h) can never push these out of it.
EARLIEST = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
LATEST = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)
_ISO_DATE = re.compile(r"\s*[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _iso_text(value: Any) -> Any:
    """Before pydantic parses: ISO text (or a datetime from Python callers) or nothing."""
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str) and _ISO_DATE.match(value):
        return value
    raise PydanticCustomError(
        "datetime_format",
        _("Give an ISO 8601 date and time, e.g. 2026-03-01T09:30:00+08:00."),
    )


def to_utc(value: datetime) -> datetime | None:
    """The value in UTC, a naive one read in the configured time zone; None on overflow."""
    if timezone.is_naive(value):
        value = timezone.make_aware(value, timezone.get_default_timezone())
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return None


def _outside(value: datetime, utc: datetime | None) -> str | None:
    """ "late" past the usable window, "early" before it, None inside it."""
    if utc is None:  # the conversion overflowed, which happens only near year 1 or 9999
        return "late" if value.year > 5000 else "early"
    if utc > LATEST:
        return "late"
    return "early" if utc < EARLIEST else None


def _moment(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    utc = to_utc(value)
    if _outside(value, utc):
        raise PydanticCustomError(
            "datetime_range",
            _("The date must lie between %(start)s and %(end)s (UTC).")
            % {"start": EARLIEST.date().isoformat(), "end": LATEST.date().isoformat()},
        )
    return utc


def _bound(open_end: str):
    """A range bound: beyond the window on its open side = no bound, on the other = the edge
    (a time_from after the end of the calendar matches nothing, as it should)."""

    def clamp(value: datetime | None) -> datetime | None:
        if value is None:
            return None
        utc = to_utc(value)
        side = _outside(value, utc)
        if side is None:
            return utc
        if side == open_end:
            return None
        return LATEST if side == "late" else EARLIEST

    return clamp


# A point in time: out of range -> 422 naming the field.
Moment = Annotated[datetime | None, BeforeValidator(_iso_text), AfterValidator(_moment)]
# Where a range starts (time_from, updated_after): far in the past = no lower bound.
RangeStart = Annotated[datetime | None, BeforeValidator(_iso_text), AfterValidator(_bound("early"))]
# Where a range ends (time_to): far in the future = no upper bound.
RangeEnd = Annotated[datetime | None, BeforeValidator(_iso_text), AfterValidator(_bound("late"))]


class BodyIn(Schema):
    """A JSON request body: an object, never a list or a scalar. Ninja's Schema reads any value
    through its attributes (for ORM objects), so `[null, null]` became "no fields given"."""

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, value: Any) -> Any:
        # Ninja's own validator runs first and wraps the input in a DjangoGetter.
        raw = value._obj if isinstance(value, DjangoGetter) else value
        if isinstance(raw, dict | Schema):
            return value
        raise PydanticCustomError(
            "object_type", _("Send a JSON object here, not a list, text or a number.")
        )
