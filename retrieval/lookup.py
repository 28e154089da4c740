"""Finding items by their words for the lists of the pages and the API.

One keyword lookup serves facts, episodes and attachments: the keyword index (jieba words and
CJK grams, as search ranks them), best match first, plus a literal match so an item whose
indexing is still queued is found by its words. Looking is not recalling: no access
counters, no recall log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time

from django.db.models import Case, IntegerField, Q, When
from django.utils import timezone

from curator.attachments import TYPE_GROUPS
from curator.episodes import json_has
from curator.models import Attachment, Episode, Owner
from retrieval.backends import Filters, keyword_hits
from retrieval.search import SearchRequest, search

SEARCH_LIMIT = 1000
SUGGESTIONS = 5


def keyword_ids(q: str, owner: Owner, kind: str, *, include_inactive: bool = False) -> list[int]:
    """Ids of the owner's items of one kind that the keyword index matches, best first."""
    scope = Filters(owner.pk, kinds=(kind,), include_inactive=include_inactive)
    hits = keyword_hits(q, owner.pk, SEARCH_LIMIT, filters=scope)
    return [hit.object_id for hit in hits if hit.kind == kind]


def ranked(queryset, ids: list[int]):
    """The rows of `ids` in that order."""
    rank = Case(*[When(pk=pk, then=i) for i, pk in enumerate(ids)], output_field=IntegerField())
    return queryset.filter(pk__in=ids).order_by(rank)


def _literal(fields: tuple[str, ...], q: str) -> Q:
    found = Q()
    for name in fields:
        found |= Q(**{f"{name}__icontains": q})
    return found


# -- episodes -----------------------------------------------------------------------------------


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def filter_episodes(owner: Owner, data: dict):
    """Episodes under the list filters: time range (overlap), outcome, tool, entity, text."""
    found = Episode.objects.filter(owner=owner).select_related("session")
    if data.get("time_from"):
        found = found.filter(ended_at__gte=_day_start(data["time_from"]))
    if data.get("time_to"):
        day_after = _day_start(data["time_to"]) + timezone.timedelta(days=1)
        found = found.filter(started_at__lt=day_after)
    if data.get("outcome"):
        found = found.filter(outcome=data["outcome"])
    if data.get("tool"):
        found = found.filter(pk__in=json_has("tools_used", data["tool"]))
    if data.get("entity"):
        found = found.filter(pk__in=json_has("entities", data["entity"].strip(), exact=False))
    q = (data.get("q") or "").strip()
    if q:
        ids = keyword_ids(q, owner, "episode")
        found = found.filter(Q(pk__in=ids) | _literal(("summary", "goal"), q))
    return found.order_by("-started_at", "-id")


# -- attachments --------------------------------------------------------------------------------

ATTACHMENT_TEXT = ("original_name", "description", "transcription", "extracted_text")


@dataclass
class Found:
    items: object  # a queryset, best match first
    suggestions: list = field(default_factory=list)  # closest by meaning when no word matched
    degraded: str = ""


def find_attachments(owner: Owner, q: str = "", direction: str = "", kind: str = "") -> Found:
    """Attachments by words; when none matched, the closest by meaning as suggestions.

    Only keyword matches are listed: the vector channel always returns its nearest items,
    however unrelated, so those are shown apart.
    """
    found = Attachment.objects.filter(owner=owner).select_related("session")
    if direction:
        found = found.filter(direction=direction)
    if kind in TYPE_GROUPS:
        found = found.filter(TYPE_GROUPS[kind])
    q = q.strip()
    if not q:
        return Found(found.order_by("-created_at", "-id"))
    request = SearchRequest(
        q, owner=owner, kinds=["attachment"], limit=50, record=False, caller="page"
    )
    result = search(request)
    matched = [i.id for i in result.items if i.found_by in ("keyword", "both")]
    literal = found.filter(_literal(ATTACHMENT_TEXT, q)).exclude(pk__in=matched)
    ids = matched + list(literal.values_list("pk", flat=True))
    suggestions = []
    if not ids:
        nearest = [i.id for i in result.items if i.found_by == "vector"][:SUGGESTIONS]
        suggestions = list(ranked(found, nearest))
    return Found(ranked(found, ids), suggestions, result.degraded_reason)
