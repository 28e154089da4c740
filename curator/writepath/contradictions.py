"""Resolving a contradiction: keep one side, both are true, or merge into one edited fact.

One action is one event (`resolve`) holding every change it made: the archived fact, the
edited text of a merge and the contradiction's new status, so one undo in the Activity log
puts the facts and the inbox back together.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from curator import contradictions as records
from curator.models import (
    Actor,
    Contradiction,
    ContradictionStatus,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    Resolution,
)
from curator.writepath.clean import check_actor, clean_content
from curator.writepath.core import AlreadyResolved, InvalidCandidate, MootPending, Work, snapshot

ACTIONS = tuple(Resolution.values)


def _archive(fact: Fact, work: Work) -> None:
    before = snapshot(fact)
    fact.status = FactStatus.ARCHIVED
    fact.save()
    work.fact(fact, before)


def _rewrite(fact: Fact, text: str, work: Work) -> None:
    """The person wrote the merged text: it is theirs now (verified, certain)."""
    before = snapshot(fact)
    fact.content, fact.verified, fact.confidence = text, True, 1.0
    fact.save()
    work.fact(fact, before)


def _check(item: Contradiction, action: str, text: str) -> str:
    if action not in ACTIONS:
        raise InvalidCandidate(
            _("Unknown action “%(value)s”; use one of: %(allowed)s.")
            % {"value": action, "allowed": ", ".join(ACTIONS)},
            code="invalid_action",
            field="action",
        )
    if item.status != ContradictionStatus.OPEN:
        raise AlreadyResolved(
            _("This contradiction was already handled (%(status)s).")
            % {"status": item.get_status_display()}
        )
    for fact in (item.left, item.right):
        if fact.status != FactStatus.ACTIVE:
            raise MootPending(
                _("Fact #%(id)s is no longer active (%(status)s); nothing is left to decide.")
                % {"id": fact.pk, "status": fact.get_status_display()}
            )
    if action == Resolution.MERGE:
        return clean_content(text)
    return ""


def resolve_contradiction(
    contradiction_id: int, action: str, *, text: str = "", actor: str = Actor.PERSON
) -> MemoryEvent:
    """Apply the person's decision through the write path, as one undoable event."""
    check_actor(actor)
    with transaction.atomic():
        item = Contradiction.objects.select_related("owner", "left", "right").get(
            pk=contradiction_id
        )
        merged = _check(item, action, text)
        work = Work(item.owner, actor)
        before = records.values(item)
        # Shaped like the log's other quotes ({"id", "content"}), so a purge blanks them.
        quoted = {
            side: {"id": fact.pk, "content": fact.content}
            for side, fact in (("left", item.left), ("right", item.right))
        }
        kept = {Resolution.KEEP_LEFT: item.left, Resolution.KEEP_RIGHT: item.right}.get(action)
        if action == Resolution.KEEP_LEFT:
            _archive(item.right, work)
        elif action == Resolution.KEEP_RIGHT:
            _archive(item.left, work)
        elif action == Resolution.MERGE:
            _rewrite(item.left, merged, work)
            _archive(item.right, work)
            kept = item.left
        item.status = (
            ContradictionStatus.COMPATIBLE
            if action == Resolution.BOTH
            else ContradictionStatus.RESOLVED
        )
        item.resolution, item.resolved_at = action, timezone.now()
        item.save()
        work.record("contradiction", item.pk, before, records.values(item))
        # The event belongs to the fact whose state changed: the archived one, or the one
        # a merge rewrote (both facts' pages find it through `left` / `right` ids too).
        changed = {
            Resolution.KEEP_LEFT: item.right,
            Resolution.KEEP_RIGHT: item.left,
        }.get(action, item.left)
        return work.event(
            EventType.RESOLVE,
            fact=changed,
            contradiction=item.pk,
            action=action,
            after={"id": kept.pk, "content": kept.content} if kept else None,
            **quoted,
        )
