"""Episodes for the person's pages: filtering, the action timeline, linked facts, and edits.

An edit is recorded as an `episode_edit` MemoryEvent (fields before and after) and the episode
is re-indexed after the commit, so search finds it by its new words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time

from django.db import connection, transaction
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from curator import signals
from curator.models import Actor, Episode, EventType, Fact, Owner
from curator.writepath import record_edit

EDITABLE = ("summary", "goal", "outcome", "importance")
_IN_LIST = "SELECT e.id FROM curator_episode e, json_each(e.{column}) t WHERE {test}"


def json_has(column: str, value: str, exact: bool = True):
    # Tools are matched exactly (a select offers them); entities case-insensitively.
    test = "t.value = %s" if exact else "lower(t.value) = lower(%s)"
    return RawSQL(_IN_LIST.format(column=column, test=test), [value])


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def known_tools(owner: Owner) -> list[str]:
    sql = (
        "SELECT DISTINCT t.value FROM curator_episode e, json_each(e.tools_used) t "
        "WHERE e.owner_id = %s ORDER BY t.value"
    )
    with connection.cursor() as cur:
        cur.execute(sql, [owner.pk])
        return [str(row[0]) for row in cur.fetchall() if row[0]]


@dataclass
class ActionNode:
    tool: str
    params: dict
    result: str
    success: bool
    error: str
    time: datetime | None


def timeline(episode: Episode) -> list[ActionNode]:
    """The episode's action nodes (seed 003 ActionNode) in a form templates can show."""
    nodes = []
    for raw in episode.action_nodes or []:
        if not isinstance(raw, dict):
            continue
        params = raw.get("key_params")
        nodes.append(
            ActionNode(
                tool=str(raw.get("tool_name") or raw.get("tool") or "?"),
                params=params if isinstance(params, dict) else {},
                result=str(raw.get("result_summary") or ""),
                success=raw.get("success") is not False,
                error=str(raw.get("error_message") or ""),
                time=parse_datetime(str(raw.get("timestamp") or "")),
            )
        )
    return nodes


def linked_facts(episode: Episode):
    """Facts linked explicitly, learned in this episode, or from a turn of its session."""
    links = Q(episodes=episode) | Q(source_episode=episode)
    if episode.session_id:
        links |= Q(source_turn__session_id=episode.session_id)
    return Fact.objects.filter(links).distinct().order_by("-created_at", "-pk")


def values(episode: Episode) -> dict:
    """The person-editable fields, as stored in an edit event (and restored by its undo)."""
    return {name: getattr(episode, name) for name in EDITABLE}


def restore(episode: Episode, changed: dict) -> None:
    for name, value in changed.items():
        setattr(episode, name, value)
    episode.save(update_fields=list(changed))
    signals.changed("episode", episode.pk)


def edit_episode(episode_id: int, changes: dict, *, actor: str = Actor.PERSON):
    """Apply validated field values; one event with before / after; None if nothing changed."""
    with transaction.atomic():
        episode = Episode.objects.select_for_update().get(pk=episode_id)
        before = values(episode)
        if changes.get("summary") == episode.display_summary:
            changes = {**changes, "summary": episode.summary}  # shown in other words, not edited
        changed = {k: v for k, v in changes.items() if k in EDITABLE and before[k] != v}
        if not changed:
            return None
        if "summary" in changed and episode.summary_parts:
            episode.summary_parts = []  # the person's words now, shown as written
            episode.save(update_fields=["summary_parts"])
        restore(episode, changed)
        return record_edit(
            episode,
            "episode",
            EventType.EPISODE_EDIT,
            before,
            values(episode),
            changed,
            quote=(before["summary"], episode.summary),
            actor=actor,
        )
