"""Reading conversations back: session summaries, transcripts, trace hits and provenance.

The sessions, transcript and trace search pages and the fact page's "Where this came from"
section use these plain functions; the views only parse requests and render.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

from django.db.models import Count, Prefetch, Q
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext_lazy as _

from curator.models import (
    ConversationTurn,
    Episode,
    EventType,
    Fact,
    MemoryEvent,
    Owner,
    PendingItem,
    Role,
    Session,
    Source,
)

EXCERPT_RADIUS = 80

# Where a trace hit was found, in the order a person reads a turn.
WHERE = {
    "content": _("in the message"),
    "tool_calls": _("in the tool calls"),
    "tool_results": _("in the tool results"),
}


# -- small helpers ---------------------------------------------------------------------------


def pretty_json(value) -> str:
    """Indented JSON with Chinese kept readable (the stored form escapes it as \\uXXXX)."""
    if value in (None, "", [], {}):
        return ""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def tool_names(calls) -> list[str]:
    """The names in tool calls of either shape ({name} or OpenAI's {function: {name}})."""
    names = []
    for call in calls if isinstance(calls, list) else [calls]:
        if isinstance(call, dict):
            fn = call.get("function") if isinstance(call.get("function"), dict) else call
            if fn.get("name"):
                names.append(str(fn["name"]))
    return list(dict.fromkeys(names))


def episode_url(pk: int) -> str:
    """An episode's own page when the episodes pages have one, else its place on the list."""
    for name in ("episode", "episode_detail"):
        try:
            return reverse(name, args=[pk])
        except NoReverseMatch:
            continue
    return f"{reverse('episodes')}#episode-{pk}"


def turn_url(turn: ConversationTurn) -> str:
    """The turn's anchor in its session's transcript: where provenance links point."""
    return f"{reverse('session', args=[turn.session_id])}#turn-{turn.pk}"


# -- sessions list and transcript -------------------------------------------------------------


def session_list():
    """The owner's sessions, newest first, with turn counts and their episodes (how many
    wait for extraction is lifecycle.turnstate's to say)."""
    episodes = Prefetch("episodes", queryset=Episode.objects.order_by("started_at", "pk"))
    return (
        Session.objects.filter(owner=Owner.default())
        .annotate(turn_count=Count("turns", distinct=True))
        .prefetch_related(episodes)
        .order_by("-started_at", "-pk")
    )


def transcript(session: Session) -> list[ConversationTurn]:
    """Every turn in order, each carrying what extraction made of it (facts, pending items,
    and for a user turn its `extraction` summary)."""
    turns = list(session.turns.select_related("episode").order_by("turn_index"))
    facts, pending = defaultdict(list), defaultdict(list)
    for fact in Fact.objects.filter(source_turn__session=session).order_by("created_at", "pk"):
        facts[fact.source_turn_id].append(fact)
    for item in PendingItem.objects.filter(source_turn__session=session).order_by("created_at"):
        pending[item.source_turn_id].append(item)
    summaries = extraction_summaries([t.pk for t in turns if t.role == Role.USER and t.extracted])
    for turn in turns:
        turn.facts = facts[turn.pk]
        turn.pending = pending[turn.pk]
        turn.extraction = summaries.get(turn.pk)
        turn.calls_pretty = pretty_json(turn.tool_calls)
        turn.results_pretty = pretty_json(turn.tool_results)
        turn.tool_names = tool_names(turn.tool_calls)
    return turns


# -- what extraction did with each user turn --------------------------------------------------

DROP_REASONS = {
    "low_confidence": _(
        "confidence %(confidence).2f is below the review threshold %(threshold).2f"
    ),
    "rejected_before": _("you ignored the same memory before"),
}


def _extract_range(turn_id: int) -> Q:
    """The events of a turn's extraction: operation ids "extract:<turn>:<extractor>:<n>"."""
    return Q(operation_id__gte=f"extract:{turn_id}:", operation_id__lt=f"extract:{turn_id};")


def _dropped(event: MemoryEvent) -> dict:
    payload = event.payload or {}
    reason = payload.get("reason", "")
    label = DROP_REASONS.get(reason)
    values = {
        "confidence": payload.get("confidence") or 0,
        "threshold": payload.get("threshold") or 0,
    }
    return {
        "reason": (label % values) if label else reason,
        "content": (payload.get("candidate") or {}).get("content", ""),
    }


def extraction_summaries(turn_ids: list[int], chunk: int = 100) -> dict[int, dict]:
    """For each extracted user turn: how many candidates the extractor proposed (with the
    facts, pending items and repeated facts they became) and what matched but was dropped;
    a turn with neither gets {"count": 0, "dropped": []}: nothing extracted."""
    out = {pk: {"count": 0, "written": [], "pending": [], "boosted": [], "dropped": []}
           for pk in turn_ids}  # fmt: skip
    for start in range(0, len(turn_ids), chunk):
        ranges = Q()
        for pk in turn_ids[start : start + chunk]:
            ranges |= _extract_range(pk)
        events = MemoryEvent.objects.filter(ranges).select_related("fact", "pending")
        for event in events.order_by("created_at", "pk"):
            summary = out.get(int(event.operation_id.split(":")[1]))
            if summary is None:
                continue
            if event.event_type == EventType.DROP:
                summary["dropped"].append(_dropped(event))
                continue
            summary["count"] += 1
            if event.event_type == EventType.BOOST and event.fact:
                summary["boosted"].append(event.fact)
            elif event.event_type == EventType.PENDING and event.pending:
                summary["pending"].append(event.pending)
            elif event.fact:
                summary["written"].append(event.fact)
    return out


# -- trace search: where a hit is, and its excerpt with the terms marked ----------------------


def _pattern(terms: list[str]) -> re.Pattern | None:
    terms = sorted({t for t in terms if t}, key=len, reverse=True)  # longest first wins
    return re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE) if terms else None


def highlight(text: str, terms: list[str]) -> SafeString:
    """text escaped, with every occurrence of a term wrapped in <mark>."""
    pattern = _pattern(terms)
    if pattern is None:
        return escape(text)
    parts, last = [], 0
    for match in pattern.finditer(text):
        parts.append(escape(text[last : match.start()]))
        parts.append(f"<mark>{escape(match.group())}</mark>")
        last = match.end()
    parts.append(escape(text[last:]))
    return mark_safe("".join(parts))  # every piece of user text above went through escape()


def excerpt(text: str, terms: list[str], radius: int = EXCERPT_RADIUS) -> SafeString:
    """The part of text around the first match (or its start), highlighted."""
    pattern = _pattern(terms)
    match = pattern.search(text) if pattern else None
    start = max(0, match.start() - radius) if match else 0
    end = min(len(text), (match.end() if match else 0) + 2 * radius)
    piece = highlight(text[start:end], terms)
    return mark_safe(f"{'…' if start else ''}{piece}{'…' if end < len(text) else ''}")


def trace_hit(turn: ConversationTurn, terms: list[str]) -> dict:
    """Which part of the turn matched and an excerpt of it (the message when nothing does)."""
    texts = {
        "content": turn.content,
        "tool_calls": pretty_json(turn.tool_calls),
        "tool_results": pretty_json(turn.tool_results),
    }
    pattern = _pattern(terms)
    where = next((k for k, text in texts.items() if pattern and pattern.search(text)), "content")
    return {
        "turn": turn,
        "where": WHERE[where] if pattern else "",
        "code": where != "content",
        "excerpt": excerpt(texts[where], terms),
        "url": turn_url(turn),
        "tool_names": tool_names(turn.tool_calls),
    }


# -- provenance: fact -> turn -> session -> episode ------------------------------------------

BY_HAND = (Source.MANUAL, Source.ONBOARDING)


def provenance(fact: Fact) -> dict:
    """The walk from a fact back to where it was said, each step with its link."""
    turn = fact.source_turn
    session = turn.session if turn else None
    episode = (turn.episode if turn else None) or fact.source_episode
    if episode is None and session is not None:
        episode = session.episodes.order_by("-ended_at", "-pk").first()
    if session is None and episode is not None:
        session = episode.session
    reviewed = PendingItem.objects.filter(resulting_fact=fact).order_by("-updated_at").first()
    return {
        "turn": turn,
        "turn_url": turn_url(turn) if turn else "",
        "session": session,
        "episode": episode,
        "episode_url": episode_url(episode.pk) if episode else "",
        "by_hand": fact.source in BY_HAND,
        "reviewed": reviewed,
        "known": bool(turn or episode),
    }
