"""Confidence thresholds per source: which candidates are written, queued or dropped.

The environment's MEMSITE_CONFIDENCE_WRITE / _PENDING are the defaults; the Calibration
page stores a source's own values (SourceThreshold), which the write path asks for on every
proposal. A source is an API token (the agent that proposed, "token:<id>") or the Source
a job gave its candidate (rules, llm, onboarding, consolidation ...).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from curator.models import Source, SourceThreshold

TOKEN = "token:"


def source_key(source: str, token_id: int | None = None) -> str:
    """The key calibration and thresholds use: an API token when one proposed it."""
    if source == Source.API and token_id:
        return f"{TOKEN}{token_id}"
    return source or Source.API


def token_of(key: str) -> int | None:
    if key.startswith(TOKEN) and key[len(TOKEN) :].isdigit():
        return int(key[len(TOKEN) :])
    return None


@dataclass(frozen=True)
class Thresholds:
    write: float
    pending: float
    own_write: float | None = None  # stored for this source (None: the default applies)
    own_pending: float | None = None

    @property
    def custom(self) -> bool:
        return self.own_write is not None or self.own_pending is not None


def defaults() -> Thresholds:
    return Thresholds(settings.CONFIDENCE_WRITE, settings.CONFIDENCE_PENDING)


def for_source(key: str) -> Thresholds:
    """The thresholds that route this source's candidates (one indexed read per proposal:
    a change on the Calibration page applies to the very next one, in every process)."""
    with connection.cursor() as cur:  # raw: compiling the ORM's query cost more than the read
        cur.execute(_OWN, [key])
        own = cur.fetchone()
    if own is None:
        return defaults()
    write = settings.CONFIDENCE_WRITE if own[0] is None else own[0]
    pending = settings.CONFIDENCE_PENDING if own[1] is None else own[1]
    return Thresholds(write, min(pending, write), own[0], own[1])


_OWN = f"SELECT write, pending FROM {SourceThreshold._meta.db_table} WHERE source = %s"


def all_stored() -> dict[str, Thresholds]:
    return {row.source: for_source(row.source) for row in SourceThreshold.objects.all()}


def values(row: SourceThreshold) -> dict:
    """What an undo restores (like an edited episode's fields)."""
    return {"write": row.write, "pending": row.pending}


def restore(row: SourceThreshold, changed: dict) -> None:
    for name, value in changed.items():
        setattr(row, name, value)
    row.save()
