"""Decay, thresholds and reviews (seed 004 per-category decay and reviews; seed 001 thresholds).

- fact: importance x0.95 per whole week without access once 7 days have passed; episode:
  x0.8 per week after 7 days, archived at 14 days. Core (tagged "core"), system, permanent
  and verified facts never decay, except a verified fact the person chose to let decay on the
  review card (long term without an expiry date: curator.retention).
- Runs are incremental: each run applies only the weekly steps that fell since the previous
  run, so running twice in a night (or skipping a night) gives the same result as one run
  per night. An access resets the clock (it does not restore importance).
- Seed 001's thresholds, below 0.1 archive and below 0.3 demote to transient (so it expires
  the next day), never act silently: a fact is first put to the person as "keep or remove?"
  (REVIEW_BELOW, above the demotion line). A fact the person kept is never demoted and gets
  its importance back to 0.5 (seed 004 KEEP); one still unanswered after REVIEW_GRACE
  is demoted / archived, visibly and undoably.
- Facts whose importance reached PROMOTE_AT and that were repeated or recalled since they
  were written get a "keep as core memory?" review item;
  confirming it marks the fact verified, which is what keeps a memory forever here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import translation

from curator import generated
from curator.models import (
    Episode,
    EventType,
    Fact,
    FactStatus,
    PendingItem,
    PendingReason,
    PendingStatus,
    Priority,
    Scope,
    expiry_for,
)
from curator.retention import FACT_FACTOR, GRACE_DAYS
from curator.writepath import Candidate, ask_about, change_fact, propose

EPISODE_FACTOR = 0.8
EPISODE_ARCHIVE_DAYS = 14
REVIEW_GRACE = timedelta(days=14)
KEEP_IMPORTANCE = 0.5
CORE_TAG, ARCHIVED_TAG = "core", "archived"
DECAY_REVIEW_TAG, PROMOTION = "decay-review", PendingReason.PROMOTION
CHUNK = 25  # changes per transaction: short write locks (~0.2 s) while the API keeps writing


# --------------------------------------------------------------------------------------
# Arithmetic (pure)
# --------------------------------------------------------------------------------------


def weekly_steps(idle_days: float, grace: int = GRACE_DAYS) -> int:
    """Whole weeks of decay owed after `idle_days` without access (0 before the grace)."""
    return int(idle_days // 7) if idle_days >= grace else 0


def steps_due(anchor: datetime, now: datetime, since: datetime | None) -> int:
    """The weekly steps that fell between the previous run (`since`) and `now`."""
    days = (now - anchor).total_seconds() / 86400
    done = 0
    if since is not None and since > anchor:
        done = weekly_steps((since - anchor).total_seconds() / 86400)
    return max(0, weekly_steps(days) - done)


def decayed(importance: float, factor: float, steps: int) -> float:
    return round(importance * factor**steps, 6)


def anchor_of(fact: Fact) -> datetime:
    """Idle since the last recall, or since it was written."""
    return max(fact.last_accessed_at or fact.created_at, fact.created_at)


def exempt() -> Q:
    """Facts that never decay: core, system, permanent, verified (unless the person chose
    decay for it: long term with no expiry date)."""
    chose_decay = Q(priority=Priority.LONG_TERM, expires_at__isnull=True)
    return (
        (Q(verified=True) & ~chose_decay)
        | Q(priority=Priority.PERMANENT)
        | Q(scope=Scope.SYSTEM)
        | Q(tags__icontains=f'"{CORE_TAG}"')  # JSON text: SQLite has no JSON `contains`
    )


def decaying(owner_facts=None):
    base = owner_facts if owner_facts is not None else Fact.objects.all()
    return base.active().exclude(exempt())


def _idle(fact: Fact, now: datetime) -> bool:
    return (now - anchor_of(fact)).total_seconds() >= GRACE_DAYS * 86400


# --------------------------------------------------------------------------------------
# Review state of a fact (from the deletion suggestions made about it)
# --------------------------------------------------------------------------------------


@dataclass
class Reviews:
    kept: set[int]  # the person refused a removal
    open_since: dict[int, datetime]  # an unanswered removal question, and since when
    asked: set[int]  # any removal question ever
    promotion: set[int]  # any "keep as core?" question ever

    @classmethod
    def load(cls) -> Reviews:
        kept, open_since, asked = set(), {}, set()
        rows = PendingItem.objects.filter(
            reason=PendingReason.DELETION, conflicts_with__isnull=False
        ).values_list("conflicts_with_id", "status", "created_at")
        for fact_id, status, created in rows:
            asked.add(fact_id)
            if status == PendingStatus.REJECTED:
                kept.add(fact_id)
            elif status in (PendingStatus.PENDING, PendingStatus.SNOOZED):
                open_since[fact_id] = min(created, open_since.get(fact_id, created))
        promotion = set(
            PendingItem.objects.filter(reason=PROMOTION).values_list("conflicts_with_id", flat=True)
        )
        return cls(kept, open_since, asked, promotion)

    def may_remove(self, fact_id: int, now: datetime) -> bool:
        """Asked and unanswered for REVIEW_GRACE: silence after a clear question is consent."""
        since = self.open_since.get(fact_id)
        return fact_id not in self.kept and since is not None and now - since >= REVIEW_GRACE


# --------------------------------------------------------------------------------------
# Step c: decay, then the thresholds
# --------------------------------------------------------------------------------------


def _chunks(items: list, size: int = CHUNK):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def plan_fact_decay(now: datetime, since: datetime | None) -> list[tuple[int, float, float, int]]:
    """(fact id, before, after, steps) for every fact owed decay."""
    planned = []
    fields = ("pk", "importance", "created_at", "last_accessed_at")
    for fact in decaying().only(*fields).iterator(chunk_size=2000):
        steps = steps_due(anchor_of(fact), now, since)
        if steps:
            after = decayed(fact.importance, FACT_FACTOR, steps)
            planned.append((fact.pk, fact.importance, after, steps))
    return planned


def apply_fact_decay(planned, job_run: str, progress=None) -> int:
    done = 0
    for chunk in _chunks(planned):
        with transaction.atomic():
            for fact_id, _before, after, steps in chunk:
                change_fact(
                    fact_id,
                    {"importance": after},
                    event_type=EventType.DECAY,
                    actor="job",
                    job_run=job_run,
                    weeks=steps,
                    factor=FACT_FACTOR,
                )
        done += len(chunk)
        if progress:
            progress(done, len(planned))
    return done


def plan_thresholds(now: datetime, reviews: Reviews, decayed_to: dict[int, float]):
    """Facts to archive (< ARCHIVE_BELOW) and to demote (< DEMOTE_BELOW), after the decay."""
    low = {pk for pk, after in decayed_to.items() if after < settings.DEMOTE_BELOW}
    low |= set(decaying().filter(importance__lt=settings.DEMOTE_BELOW).values_list("pk", flat=True))
    archive, demote = [], []
    fields = ("pk", "importance", "priority", "created_at", "last_accessed_at")
    ids = sorted(low)
    for start in range(0, len(ids), 5000):  # chunks: SQLite limits the variables per query
        for fact in decaying().filter(pk__in=ids[start : start + 5000]).only(*fields):
            importance = decayed_to.get(fact.pk, fact.importance)
            if importance >= settings.DEMOTE_BELOW or not _idle(fact, now):
                continue
            if not reviews.may_remove(fact.pk, now):
                continue
            if importance < settings.ARCHIVE_BELOW:
                archive.append(fact.pk)
            elif fact.priority != Priority.TRANSIENT:
                demote.append(fact.pk)
    return sorted(archive), sorted(demote)


def apply_thresholds(archive: list[int], demote: list[int], now, job_run: str) -> None:
    for chunk in _chunks(archive):
        with transaction.atomic():
            for fact_id in chunk:
                change_fact(
                    fact_id,
                    {"status": FactStatus.ARCHIVED},
                    event_type=EventType.ARCHIVE,
                    actor="job",
                    job_run=job_run,
                    reason="importance_below_archive_threshold",
                )
    for chunk in _chunks(demote):
        with transaction.atomic():
            for fact_id in chunk:
                change_fact(
                    fact_id,
                    {
                        "priority": Priority.TRANSIENT,
                        "expires_at": expiry_for(Priority.TRANSIENT, now),
                    },
                    event_type=EventType.DECAY,
                    actor="job",
                    job_run=job_run,
                    reason="importance_below_demote_threshold",
                )


# --------------------------------------------------------------------------------------
# Step e: reviews
# --------------------------------------------------------------------------------------


def plan_reviews(now: datetime, reviews: Reviews):
    """(promote, ask_removal, keep_reset) fact lists."""
    # "Crossed" the threshold: important *and* reinforced since it was written (repeated or
    # recalled); a fact merely written with a high importance has proven nothing yet.
    promote = list(
        Fact.objects.active()
        .filter(verified=False, importance__gte=settings.PROMOTE_AT)
        .filter(Q(hit_count__gte=2) | Q(access_count__gte=1))
        .exclude(pk__in=reviews.promotion)
        .exclude(tags__icontains=f'"{CORE_TAG}"')
        .order_by("-importance", "pk")
    )
    ask, reset = [], []
    fields = ("pk", "importance", "content", "created_at", "last_accessed_at", "owner_id")
    low = decaying().filter(importance__lt=settings.REVIEW_BELOW).only(*fields)
    for fact in low.iterator(chunk_size=2000):
        if fact.pk in reviews.kept:
            reset.append(fact)
        elif fact.pk not in reviews.asked and _idle(fact, now):
            ask.append(fact)
    return promote, ask, reset


def ask_removal(fact: Fact, job_run: str, run_key: str) -> None:
    params = {"value": fact.importance}
    with translation.override(fact.owner.agent_language()):  # the words, for older readers
        why = generated.deletion_why({"why_code": "faded", "why_params": params})
    propose(
        Candidate(
            content=why,
            why_code="faded",
            why_params=params,
            delete_fact_id=fact.pk,
            confidence=0.9,
            tags=[DECAY_REVIEW_TAG],
            source="consolidation",
        ),
        actor="job",
        owner=fact.owner,
        operation_id=f"{run_key}:review:{fact.pk}",
        job_run=job_run,
    )


def ask_promotion(fact: Fact, job_run: str) -> PendingItem:
    """A "keep as core memory?" item; confirming it verifies the fact (never decays again)."""
    candidate = {
        "content": fact.content,
        "content_key": fact.content_key,
        "subject": fact.subject,
        "predicate": fact.predicate,
        "type": fact.type,
        "scope": fact.scope,
        "confidence": fact.confidence,
        "importance": fact.importance,
        "priority": Priority.PERMANENT,
        "tags": [*fact.tags, CORE_TAG],
        "source": "consolidation",
        "operation": PROMOTION.upper(),
        "fact_id": fact.pk,
    }
    return ask_about(fact, candidate, reason=PROMOTION, actor="job", job_run=job_run).pending


def keep_reset(fact: Fact, job_run: str) -> None:
    change_fact(
        fact.pk,
        {"importance": KEEP_IMPORTANCE},
        event_type=EventType.DECAY,
        actor="job",
        job_run=job_run,
        reason="kept_by_person",
    )


# --------------------------------------------------------------------------------------
# Episodes (no write-path events: the run keeps their before values for its undo)
# --------------------------------------------------------------------------------------


def plan_episode_decay(now: datetime, since: datetime | None) -> list[dict]:

    planned = []
    for ep in Episode.objects.only("pk", "importance", "ended_at", "tags").iterator(
        chunk_size=2000
    ):
        if ARCHIVED_TAG in (ep.tags or []):
            continue
        steps = steps_due(ep.ended_at, now, since)
        archive = (now - ep.ended_at).total_seconds() >= EPISODE_ARCHIVE_DAYS * 86400
        if steps or archive:
            after = {"importance": decayed(ep.importance, EPISODE_FACTOR, steps)}
            if archive:
                after["tags"] = [*(ep.tags or []), ARCHIVED_TAG]
            before = {"importance": ep.importance, "tags": list(ep.tags or [])}
            planned.append({"id": ep.pk, "before": before, "after": after})
    return planned


def apply_episode_decay(planned: list[dict]) -> None:

    for chunk in _chunks(planned):
        with transaction.atomic():
            for change in chunk:
                Episode.objects.filter(pk=change["id"]).update(**change["after"])
