"""Confidence calibration: how well each source's confidence predicted the person's answers.

For every source of candidate memories (each API token, i.e. each agent as it exists today;
the rules extractor, the LLM extractor, onboarding, consolidation) and each confidence
bucket (0.6-0.7 ... 0.9-1.0):

- review items: how many, and the share the person confirmed as they were, confirmed after
  editing, or ignored (the rest still wait);
- automatic writes (written without review): how many, and the share the person later
  corrected (edited the text, or replaced it with a version they vouched for) or deleted
  (deleted, archived, or undid the write).

From it, a suggested write threshold per source: the lowest bucket edge above which at least
TARGET of the answered items were right (confirmed unedited, or written and left alone),
over at least MIN_DECISIONS of them, MIN_IN_BUCKET of them in that edge's own bucket.
"Right" is what writing directly would have got right.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from curator import thresholds, timetravel
from curator.models import (
    Actor,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    Owner,
    PendingItem,
    PendingStatus,
    Source,
)
from memsite.core.tokens import token_names

EDGES = (0.6, 0.7, 0.8, 0.9)
TARGET = 0.95
MIN_DECISIONS = 20
MIN_IN_BUCKET = 5
# Sources always listed, so their thresholds can be set before they have history.
EXTRACTORS = (Source.RULES, Source.LEARNED, Source.LLM, Source.ONBOARDING, Source.CONSOLIDATION)
REVIEW_OUTCOMES = ("confirmed", "edited", "ignored", "open")
AUTO_OUTCOMES = ("kept", "corrected", "deleted")
TEXT_FIELDS = {"content", "subject", "predicate"}


def bucket_of(confidence: float) -> int:
    """-1 below 0.6, then 0..3 (0.9 and 1.0 share the last bucket)."""
    hundredths = int(round(confidence * 100))
    if hundredths < 60:
        return -1
    return min(hundredths // 10 - 6, len(EDGES) - 1)


@dataclass
class Bucket:
    index: int
    review: Counter = field(default_factory=Counter)
    auto: Counter = field(default_factory=Counter)

    @property
    def low(self) -> float:
        return 0.0 if self.index < 0 else EDGES[self.index]

    @property
    def high(self) -> float:
        return EDGES[0] if self.index < 0 else (EDGES + (1.0,))[self.index + 1]

    @property
    def label(self) -> str:
        return f"{self.low:.1f}–{self.high:.1f}" if self.index >= 0 else f"< {EDGES[0]:.1f}"

    @property
    def reviewed(self) -> int:
        return sum(self.review.values())

    @property
    def decided(self) -> int:
        return self.review["confirmed"] + self.review["edited"] + self.review["ignored"]

    @property
    def written(self) -> int:
        return sum(self.auto.values())

    def share(self, outcome: str) -> float | None:
        """Of the answered review items, or of the automatic writes."""
        if outcome in self.auto or outcome in AUTO_OUTCOMES:
            return self.auto[outcome] / self.written if self.written else None
        return self.review[outcome] / self.decided if self.decided else None

    def to_dict(self) -> dict:
        return {
            "range": [self.low, self.high],
            "review": {o: self.review[o] for o in REVIEW_OUTCOMES},
            "reviewed": self.reviewed,
            "confirmed_share": _round(self.share("confirmed")),
            "edited_share": _round(self.share("edited")),
            "ignored_share": _round(self.share("ignored")),
            "automatic": {o: self.auto[o] for o in AUTO_OUTCOMES},
            "written": self.written,
            "corrected_share": _round(self.share("corrected")),
            "deleted_share": _round(self.share("deleted")),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


@dataclass
class Suggestion:
    write: float  # 1.0: send everything to review
    right: int
    answered: int

    @property
    def text(self) -> str:
        if self.write >= 1.0:
            return _(
                "Even at %(edge).2f and above only %(right)d of %(n)d were right: send them all "
                "to review."
            ) % {"edge": EDGES[-1], "right": self.right, "n": self.answered}
        return _("At %(t).2f and above, %(right)d of %(n)d were right: write them directly.") % {
            "t": self.write,
            "right": self.right,
            "n": self.answered,
        }

    def to_dict(self) -> dict:
        return {"write": self.write, "right": self.right, "answered": self.answered}


@dataclass
class SourceReport:
    key: str
    label: str
    limits: thresholds.Thresholds
    buckets: list[Bucket]
    decisions: list[tuple[float, bool]] = field(default_factory=list, repr=False)
    suggestion: Suggestion | None = None

    @property
    def token_id(self) -> int | None:
        return thresholds.token_of(self.key)

    @property
    def shown(self) -> list[Bucket]:
        """The four buckets, and "below 0.6" only when something fell there."""
        return [b for b in self.buckets if b.index >= 0 or b.reviewed or b.written]

    @property
    def items(self) -> int:
        return sum(b.reviewed + b.written for b in self.buckets)

    @property
    def applies(self) -> bool:
        """The suggestion differs from the threshold in use."""
        return self.suggestion is not None and abs(self.suggestion.write - self.limits.write) > 1e-9

    def to_dict(self) -> dict:
        return {
            "source": self.key,
            "label": self.label,
            "token_id": self.token_id,
            "thresholds": {
                "write": self.limits.write,
                "pending": self.limits.pending,
                "custom": self.limits.custom,
            },
            "buckets": [b.to_dict() for b in self.shown],
            "suggestion": self.suggestion.to_dict() if self.suggestion else None,
        }


# --------------------------------------------------------------------------------------
# Gathering what happened
# --------------------------------------------------------------------------------------


def _confirm_edits(item_ids: list[int]) -> set[int]:
    """Confirmed review items whose confirmation (the one still in force) came with edits."""
    edited = set()
    confirms = MemoryEvent.objects.filter(
        event_type=EventType.CONFIRM, pending_id__in=item_ids, reverted_by__isnull=True
    ).values_list("pending_id", "payload")
    for pending_id, payload in confirms:
        if (payload or {}).get("edits"):
            edited.add(pending_id)
    return edited


def review_items(owner: Owner) -> list[tuple[str, float, str]]:
    """(source key, confidence, outcome) of every review item."""
    rows = list(
        PendingItem.objects.filter(owner=owner).values_list(
            "pk", "candidate", "confidence", "status"
        )
    )
    confirmed = [pk for pk, _c, _f, status in rows if status == PendingStatus.CONFIRMED]
    edited = _confirm_edits(confirmed)
    out = []
    for pk, candidate, confidence, status in rows:
        candidate = candidate or {}
        key = thresholds.source_key(candidate.get("source") or "", candidate.get("token_id"))
        if status == PendingStatus.CONFIRMED:
            outcome = "edited" if pk in edited else "confirmed"
        elif status == PendingStatus.REJECTED:
            outcome = "ignored"
        else:
            outcome = "open"
        out.append((key, confidence, outcome))
    return out


def _writes(owner: Owner) -> dict[int, tuple[str, float]]:
    """{fact id: (source key, confidence)} of facts written without review."""
    events = MemoryEvent.objects.filter(
        owner=owner,
        event_type__in=[EventType.WRITE, EventType.SUPERSEDE],
        fact__isnull=False,
        payload__has_key="confidence",
    ).values_list("fact_id", "payload", "fact__source")
    found = {}
    for fact_id, payload, source in events:
        if source == Source.MANUAL or payload.get("reverted_to"):
            continue  # typed by the person, or an old version brought back: no confidence
        key = payload.get("origin") or thresholds.source_key(source)
        found.setdefault(fact_id, (key, float(payload.get("confidence") or 0)))
    return found


def _fates(fact_ids: set[int]) -> dict[int, str]:
    """What the person did to each automatic write since: corrected, deleted (or nothing)."""
    fates: dict[int, str] = {}
    for pk in Fact.objects.filter(pk__in=fact_ids, status=FactStatus.REJECTED).values_list(
        "pk", flat=True
    ):
        fates[pk] = "deleted"  # the write itself was undone
    changes = timetravel.changes(fact_ids=fact_ids, newest_first=False)
    people = set(
        MemoryEvent.objects.filter(
            pk__in={c.event_id for c in changes}, actor=Actor.PERSON, reverted_by__isnull=True
        ).values_list("pk", flat=True)
    )
    for change in changes:
        if change.event_id not in people or change.before is None:
            continue
        if change.after.get("status") in (FactStatus.ARCHIVED, FactStatus.REJECTED):
            fates[change.fact_id] = "deleted"
        elif change.after.keys() & TEXT_FIELDS:
            fates.setdefault(change.fact_id, "corrected")
    vouched = Fact.objects.filter(supersedes_id__in=fact_ids, verified=True)
    for pk in vouched.values_list("supersedes_id", flat=True):
        fates.setdefault(pk, "corrected")
    return fates


# --------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------


def _labels() -> dict[str, str]:
    labels = {value: str(label) for value, label in Source.choices}
    labels[Source.API] = _("API (token unknown)")
    for pk, name in token_names().items():
        labels[f"{thresholds.TOKEN}{pk}"] = _("agent “%(name)s”") % {"name": name}
    return labels  # the same wording as curator.describe.source_label


def suggest(decisions: list[tuple[float, bool]]) -> Suggestion | None:
    """The lowest bucket edge above which enough answers were right, else "review all".

    An edge is only suggested with answers in its own bucket (MIN_IN_BUCKET): twenty right
    answers at 0.95 say nothing about candidates at 0.62."""
    for n, edge in enumerate(EDGES):
        chosen = [right for confidence, right in decisions if confidence >= edge - 1e-9]
        in_bucket = [c for c, _r in decisions if bucket_of(c) == n]
        if len(in_bucket) < MIN_IN_BUCKET:
            continue
        if len(chosen) >= MIN_DECISIONS and sum(chosen) >= TARGET * len(chosen):
            return Suggestion(edge, sum(chosen), len(chosen))
    top = [right for confidence, right in decisions if confidence >= EDGES[-1] - 1e-9]
    if len(top) >= MIN_DECISIONS:
        return Suggestion(1.0, sum(top), len(top))
    return None


def report(owner: Owner | None = None) -> list[SourceReport]:
    """One report per source: the extractors, every API token and every source seen."""
    owner = owner or Owner.default()
    labels = _labels()
    sources: dict[str, SourceReport] = {}

    def of(key: str) -> SourceReport:
        if key not in sources:
            buckets = [Bucket(i) for i in range(-1, len(EDGES))]
            limits = thresholds.for_source(key)
            sources[key] = SourceReport(key, labels.get(key, key), limits, buckets)
        return sources[key]

    for key in (*EXTRACTORS, *(k for k in labels if k.startswith(thresholds.TOKEN))):
        of(key)
    for key in thresholds.all_stored():
        of(key)
    for key, confidence, outcome in review_items(owner):
        source = of(key)
        source.buckets[bucket_of(confidence) + 1].review[outcome] += 1
        if outcome != "open":
            source.decisions.append((confidence, outcome == "confirmed"))
    writes = _writes(owner)
    fates = _fates(set(writes))
    for fact_id, (key, confidence) in writes.items():
        fate = fates.get(fact_id, "kept")
        source = of(key)
        source.buckets[bucket_of(confidence) + 1].auto[fate] += 1
        source.decisions.append((confidence, fate == "kept"))
    for source in sources.values():
        source.suggestion = suggest(source.decisions)
    return sorted(sources.values(), key=lambda s: (-s.items, s.label))
