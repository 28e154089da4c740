"""The contradiction job: active facts that cannot both be true go to the inbox (Review).

Three ways to find a pair, all among one owner's active facts and never inside one
supersede chain:

1. the same subject and predicate (compared case-insensitively, "lives_in" = "lives in")
   with a different value: rule `same_slot`;
2. the offline rules (lifecycle.extraction.contradiction_rules), Chinese and English, on pairs that
   share something worth comparing: a content word, a single-valued slot (where one lives,
   an age ...) or an exclusive group (single / married ...). A key shared by more than
   MAX_KEY_FACTS facts ("user", a common character) is no reason to compare them all;
3. with an LLM configured, similar pairs the rules left undecided (up to
   CONTRADICTIONS_LLM_PAIRS a run) are asked about; a "no" is kept as `dismissed`, so the
   same pair is not asked again.

It runs nightly over every active fact, and shortly after writes (coalesced: the receiver
queues one run per CONTRADICTIONS_DELAY seconds) over the facts changed in the last day. A
pair is recorded once: whatever the person answers, it is never asked again.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import combinations

from django.conf import settings
from django.utils import timezone

from curator.models import Contradiction, ContradictionStatus, Fact
from lifecycle import llm, runs
from lifecycle.extraction import contradiction_rules as rules

log = logging.getLogger(__name__)
LOCK = "contradictions"
MAX_KEY_FACTS = 200  # a key shared by more facts says nothing about any pair of them
LLM_SIMILARITY = 0.5  # undecided pairs at least this similar go to the LLM
RECENT = timedelta(days=1)


@dataclass(slots=True)  # 100k of them in a nightly scan: no __dict__ each
class Row:
    pk: int
    owner_id: int
    content: str
    subject: str
    predicate: str
    content_key: str
    supersedes_id: int | None
    updated_at: datetime


@dataclass
class Report:
    facts: int = 0
    pairs: int = 0  # compared by the rules
    found: dict[str, int] = field(default_factory=dict)  # new contradictions by rule
    asked_llm: int = 0
    dismissed: int = 0
    skipped: str = ""
    new: list = field(default_factory=list, repr=False)  # found, not stored yet

    @property
    def total(self) -> int:
        return sum(self.found.values())


def _rows(owner_id: int | None) -> list[Row]:
    facts = Fact.objects.active()
    if owner_id is not None:
        facts = facts.filter(owner_id=owner_id)
    fields = "pk owner_id content subject predicate content_key supersedes_id updated_at".split()
    return [Row(*values) for values in facts.values_list(*fields).iterator(2000)]


def _label(text: str) -> str:
    """Subject and predicate as compared: case, spaces, underscores and hyphens do not count."""
    return re.sub(r"[\s_\-]+", "_", text.strip().casefold())


def _pair(a: Row, b: Row) -> tuple[Row, Row]:
    return (a, b) if a.pk < b.pk else (b, a)


def _linked(a: Row, b: Row) -> bool:
    """One supersedes the other: versions of one chain, not two claims."""
    return a.supersedes_id == b.pk or b.supersedes_id == a.pk


def _known(owner_ids: set[int]) -> set[tuple[int, int]]:
    found = Contradiction.objects.filter(owner_id__in=owner_ids)
    return set(found.values_list("left_id", "right_id"))


def same_slot_pairs(rows: list[Row]) -> list[tuple[Row, Row]]:
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for row in rows:
        if row.subject and row.predicate:
            groups[(row.owner_id, _label(row.subject), _label(row.predicate))].append(row)
    return [
        _pair(a, b)
        for members in groups.values()
        for a, b in combinations(members, 2)
        if a.content_key != b.content_key and not _linked(a, b)
    ]


def rule_pairs(rows: list[Row], changed: set[int] | None) -> list[tuple[Row, Row]]:
    """Pairs sharing a key worth comparing; with `changed`, only those involving one of them."""
    pairs: set[tuple[int, int]] = set()
    by_pk = {row.pk: row for row in rows}
    for members in _key_index(rows):
        if len(members) < 2 or len(members) > MAX_KEY_FACTS:
            continue
        for a, b in combinations(members, 2):
            if changed is not None and a.pk not in changed and b.pk not in changed:
                continue
            if not _linked(a, b):
                pairs.add((min(a.pk, b.pk), max(a.pk, b.pk)))
    return [(by_pk[x], by_pk[y]) for x, y in sorted(pairs)]


def _key_index(rows: list[Row]) -> list[list[Row]]:
    """The facts sharing each (owner, key). At 100k facts this is the scan's peak, which a
    long-lived consumer keeps as a fragmented heap, so it is built small: each fact is read
    once here, past the claim cache (20,000 claims, about 70 MB, that the pairs below never
    hit: they fill it again), and a key is one string per owner, not a tuple per fact (1.7M
    of them at 100k facts)."""
    index: dict[int, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        owned = index[row.owner_id]
        for key in rules.keys(row.content, cached=False):
            owned[key].append(row)
    return [members for owned in index.values() for members in owned.values()]


def scan(
    *,
    owner_id: int | None = None,
    changed_since: datetime | None = None,
    use_llm: bool | None = None,
    dry_run: bool = False,
    holder: str = "",
) -> Report:
    """Find new contradictions (all active facts, or pairs with a fact changed since);
    `holder` names the run in its lock (a child process's, for its parent to release)."""
    report = Report()
    holder = holder or f"scan-{timezone.now():%H%M%S}-{id(report)}"
    if not dry_run and not runs.acquire(LOCK, holder):
        report.skipped = "another contradiction scan is running"
        return report
    try:
        _scan(report, owner_id, changed_since, use_llm, dry_run)
    finally:
        if not dry_run:
            runs.release(LOCK, holder)
        # The claims read for this scan (up to 20,000, about 90 MB at 100k facts) would
        # otherwise stay in the consumer until the next one.
        rules.read.cache_clear()
    return report


def _scan(report: Report, owner_id, changed_since, use_llm, dry_run) -> None:
    rows = _rows(owner_id)
    report.facts = len(rows)
    changed = None
    if changed_since is not None:
        changed = {r.pk for r in rows if r.updated_at >= changed_since}
        if not changed:
            return
    known = _known({r.owner_id for r in rows})

    def new(a: Row, b: Row) -> bool:
        return (a.pk, b.pk) not in known and (changed is None or {a.pk, b.pk} & changed)

    undecided = []
    for a, b in same_slot_pairs(rows):
        if new(a, b):
            known.add((a.pk, b.pk))
            _found(report, a, b, "same_slot", {}, dry_run)
    for a, b in rule_pairs(rows, changed):
        if not new(a, b):
            continue
        report.pairs += 1
        verdict = rules.verdict(a.content, b.content)
        if verdict is not None:
            known.add((a.pk, b.pk))
            _found(report, a, b, verdict.rule, verdict.detail, dry_run)
        elif rules.similarity(a.content, b.content) >= LLM_SIMILARITY:
            undecided.append((a, b))
    if use_llm is None:
        use_llm = llm.configured()
    if use_llm and undecided and not dry_run:
        _ask_llm(report, undecided[: settings.CONTRADICTIONS_LLM_PAIRS])
    _save(report)


def _found(report: Report, a: Row, b: Row, rule: str, detail: dict, dry_run: bool) -> None:
    if not dry_run:
        report.new.append(
            Contradiction(
                owner_id=a.owner_id, left_id=a.pk, right_id=b.pk, rule=rule, detail=detail
            )
        )
    report.found[rule] = report.found.get(rule, 0) + 1


def _save(report: Report) -> None:
    """The run's findings in one write (a pair a concurrent run stored first is skipped)."""
    if report.new:
        Contradiction.objects.bulk_create(report.new, batch_size=500, ignore_conflicts=True)
        report.new = []


# --------------------------------------------------------------------------------------
# The LLM's second look
# --------------------------------------------------------------------------------------

SYSTEM = (
    "You check a person's stored memories for contradictions. For each numbered pair, decide "
    "whether both statements can be true about the same person at the same time now. "
    "Different objects, times, places or a refinement are not contradictions; one negating "
    "or replacing the other is. Statements may be Chinese or English. Answer with one JSON "
    'object: {"pairs": [{"id": <number>, "contradiction": true|false, "why": "<a short '
    "reason in the statements' language>\"}]} with every pair exactly once."
)


def _validator(ids: set[int]):
    def validate(data: dict) -> dict[int, tuple[bool, str]]:
        items = data.get("pairs")
        if not isinstance(items, list):
            raise llm.Invalid('"pairs" must be a list')
        found = {}
        for item in items:
            if not isinstance(item, dict) or item.get("id") not in ids:
                raise llm.Invalid(f"every item needs an id from {sorted(ids)}")
            if not isinstance(item.get("contradiction"), bool):
                raise llm.Invalid('"contradiction" must be true or false')
            found[item["id"]] = (item["contradiction"], str(item.get("why") or "")[:300])
        if set(found) != ids:
            raise llm.Invalid(f"answer every pair: {sorted(ids - set(found))} missing")
        return found

    return validate


def _ask_llm(report: Report, pairs: list[tuple[Row, Row]]) -> None:
    numbered = dict(enumerate(pairs, start=1))
    lines = [f"{n}. A: {a.content}\n   B: {b.content}" for n, (a, b) in numbered.items()]
    try:
        answers = llm.chat_json(
            SYSTEM, "\n".join(lines), _validator(set(numbered)), context="contradictions"
        )
    except llm.LLMError:
        log.warning("the LLM could not judge %d pairs; the rules' findings stand", len(pairs))
        return
    report.asked_llm = len(pairs)
    for n, (contradicts, why) in answers.items():
        a, b = numbered[n]
        if contradicts:
            _found(report, a, b, "llm", {"why": why}, dry_run=False)
        else:
            report.new.append(
                Contradiction(
                    owner_id=a.owner_id,
                    left_id=a.pk,
                    right_id=b.pk,
                    rule="llm",
                    detail={"why": why},
                    status=ContradictionStatus.DISMISSED,
                )
            )
            report.dismissed += 1


# --------------------------------------------------------------------------------------
# After writes: one run per window, whatever the number of writes
# --------------------------------------------------------------------------------------

_next_run = 0.0
_lock = threading.Lock()


def due_after_write() -> bool:
    """True at most once per CONTRADICTIONS_DELAY seconds in this process: the caller then
    queues one delayed run, which sees every write of the window."""
    global _next_run
    with _lock:
        now = time.monotonic()
        if now < _next_run:
            return False
        _next_run = now + settings.CONTRADICTIONS_DELAY
        return True


def scan_recent(holder: str = "") -> Report:
    """The run queued after writes: pairs involving a fact changed in the last day."""
    return scan(changed_since=timezone.now() - RECENT, holder=holder)
