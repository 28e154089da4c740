"""A new rule applied to what is already stored: find the matches, then archive or redact
them in one batch (undone whole from the activity log), and, once the person is sure,
forget the originals for good.

Matches are looked for in the facts (every status: a superseded version holds the text as
much as the current one), the open review items and the conversation turns. A rule limited
to fact types or scopes only looks at facts. Its agents are not taken into account here:
what is stored does not say which agent wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils.translation import gettext as _

from curator.guard import turns as turn_records
from curator.guard.rules import Matcher, RuleError, mask, mask_value
from curator.models import (
    Actor,
    ConversationTurn,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    Owner,
    PendingItem,
)
from curator.normalize import content_key
from curator.writepath import (
    ARCHIVABLE,
    OPEN,
    Work,
    archive_fact,
    change_fact,
    ignore_pending,
    new_batch,
    pending_snapshot,
)

ARCHIVE, REDACT = "archive", "redact"
FACT_TEXT = ("content", "subject", "predicate")
CANDIDATE_TEXT = ("content", "subject", "predicate")


@dataclass
class Found:
    facts: list[Fact] = field(default_factory=list)
    pending: list[PendingItem] = field(default_factory=list)
    turns: list[ConversationTurn] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.facts) + len(self.pending) + len(self.turns)


def _fact_matches(rule: Matcher, fact: Fact) -> bool:
    if rule.fact_types and fact.type not in rule.fact_types:
        return False
    if rule.scopes and fact.scope not in rule.scopes:
        return False
    if not rule.has_text:
        return True
    texts = [getattr(fact, name) for name in FACT_TEXT] + [" ".join(fact.tags or [])]
    return any(rule.spans(text) for text in texts)


def _pending_matches(rule: Matcher, item: PendingItem) -> bool:
    candidate = item.candidate or {}
    if rule.fact_types and candidate.get("type") not in rule.fact_types:
        return False
    if rule.scopes and candidate.get("scope") not in rule.scopes:
        return False
    if not rule.has_text:
        return True
    return any(rule.spans(str(candidate.get(name) or "")) for name in CANDIDATE_TEXT)


def _turn_matches(rule: Matcher, turn: ConversationTurn) -> bool:
    if not rule.has_text or rule.fact_types or rule.scopes:
        return False
    if rule.spans(turn.content):
        return True
    return any(mask_value(v, [rule]) != v for v in (turn.tool_calls, turn.tool_results) if v)


def find(rule: Matcher, owner: Owner | None = None) -> Found:
    """Everything stored that the rule matches (whatever its agents)."""
    owner = owner or Owner.default()
    found = Found()
    facts = Fact.objects.filter(owner=owner).exclude(status=FactStatus.REJECTED)
    found.facts = [
        f for f in facts.order_by("-updated_at", "-pk").iterator() if _fact_matches(rule, f)
    ]
    items = PendingItem.objects.filter(owner=owner, status__in=OPEN).order_by("-created_at")
    found.pending = [i for i in items if _pending_matches(rule, i)]
    turns = ConversationTurn.objects.filter(session__owner=owner).select_related("session")
    found.turns = [
        t for t in turns.order_by("-timestamp", "-pk").iterator() if _turn_matches(rule, t)
    ]
    return found


@dataclass
class Applied:
    batch: str
    facts: int = 0
    pending: int = 0
    turns: int = 0

    @property
    def total(self) -> int:
        return self.facts + self.pending + self.turns


def apply(rule: Matcher, mode: str, owner: Owner | None = None) -> Applied:
    """One batch, all or nothing. ARCHIVE archives the facts and ignores the review items;
    REDACT masks the matched spans in both. Turns cannot be archived: both modes mask them."""
    if mode not in (ARCHIVE, REDACT):
        raise RuleError(_("Choose to archive or to redact."), field="mode")
    if mode == REDACT and not rule.has_text:
        raise RuleError(
            _("This rule matches fact types or scopes, not words: there is nothing to mask."),
            field="mode",
        )
    owner = owner or Owner.default()
    done = Applied(new_batch("guard"))
    with transaction.atomic():
        found = find(rule, owner)
        for fact in found.facts:
            done.facts += _apply_fact(fact, rule, mode, done.batch)
        for item in found.pending:
            done.pending += _apply_pending(item, rule, mode, done.batch)
        for turn in found.turns:
            done.turns += redact_turn(turn, rule, done.batch, mode)
    return done


def _apply_fact(fact: Fact, rule: Matcher, mode: str, batch: str) -> int:
    if mode == ARCHIVE:
        if fact.status not in ARCHIVABLE:
            return 0  # a past version or an archived fact is not shown anywhere: it stays
        archive_fact(fact.pk, actor=Actor.PERSON, batch=batch)
        return 1
    values = {
        name: mask(getattr(fact, name), rule.spans(getattr(fact, name))) for name in FACT_TEXT
    }
    values["tags"] = [mask(tag, rule.spans(tag)) for tag in fact.tags or []]
    change_fact(
        fact.pk,
        values,
        event_type=EventType.UPDATE,
        actor=Actor.PERSON,
        batch=batch,
        action="redact",
        rule=rule.name,
    )
    return 1


def _apply_pending(item: PendingItem, rule: Matcher, mode: str, batch: str) -> int:
    if mode == ARCHIVE:
        ignore_pending(item.pk, batch=batch)
        return 1
    work = Work(item.owner, Actor.PERSON, batch=batch)
    before = pending_snapshot(item)
    candidate = dict(item.candidate or {})
    for name in CANDIDATE_TEXT:
        text = str(candidate.get(name) or "")
        candidate[name] = mask(text, rule.spans(text)) if text else candidate.get(name)
    candidate["content_key"] = content_key(str(candidate.get("content") or ""))
    item.candidate = candidate
    item.save(update_fields=["candidate", "updated_at"])
    work.pending(item, before)
    work.event(EventType.REDACT, pending=item, action="redact", rule=rule.name)
    return 1


def redact_turn(turn: ConversationTurn, rule: Matcher, batch: str, mode: str = REDACT) -> int:
    """Mask the rule's spans in a stored turn: one undoable `redact` event naming it."""
    before = turn_records.values(turn)
    after = {
        "content": mask(turn.content, rule.spans(turn.content)),
        "tool_calls": mask_value(turn.tool_calls, [rule]),
        "tool_results": mask_value(turn.tool_results, [rule]),
    }
    changed = {k: v for k, v in after.items() if v != before[k]}
    if not changed:
        return 0
    turn_records.restore(turn, changed)
    work = Work(turn.session.owner, Actor.PERSON, batch=batch)
    work.record("turn", turn.pk, before, turn_records.values(turn))
    work.event(EventType.REDACT, turn=turn.pk, action=mode, rule=rule.name)
    return 1


def forget_originals(batch: str, rule: Matcher, owner: Owner | None = None) -> int:
    """Make a redaction permanent: mask the rule's spans in every event that still quotes
    them (the batch's own undo data, and the history of the items it touched), and mark the
    batch's events as no longer undoable. Returns the number of events changed."""
    owner = owner or Owner.default()
    events = MemoryEvent.objects.filter(owner=owner, batch=batch)
    if not events.exists():
        raise RuleError(_("There is no such batch."), field="batch")
    changed = 0
    with transaction.atomic():
        for event in MemoryEvent.objects.filter(owner=owner).iterator(chunk_size=2000):
            payload = mask_value(event.payload or {}, [rule])
            if event.batch == batch:
                payload["originals_forgotten"] = True
            if payload != event.payload:
                MemoryEvent.objects.filter(pk=event.pk).update(payload=payload)
                changed += 1
    return changed
