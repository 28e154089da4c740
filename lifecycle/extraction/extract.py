"""Extracting memories from a user turn: offline the rules and the learned model, the LLM
when configured.

Offline, the rules go first: they give the structured subject and predicate a later statement
supersedes ("I live in Munich now"). A turn they find nothing in goes to the learned model
(learned.py), which decides from the turn's e5 vector whether it is worth remembering and
writes it in the third person. Frequency control (seed 001 section 6): the LLM sees a turn
only when it is long enough and the session has not used up its calls; otherwise the offline
extractors run, so an explicit "我叫李雷" in a short turn is never lost. Every candidate goes
through the write path; the turn is marked extracted in the same transaction, so a turn is
either fully extracted or not at all. An LLM failure (unreachable, or malformed twice)
leaves the turn unextracted in the retry queue with a growing delay; after the last attempt
it becomes a dead letter and the offline extractors take the turn, so what was said still
lands.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from curator.models import ConversationTurn, Fact, FactStatus, FactType, Role, Scope, Session
from curator.writepath import Candidate, InvalidCandidate, Result, change_fact, propose
from lifecycle import llm, runs
from lifecycle.embedqueue import dead_letter
from lifecycle.extraction import learned, rules
from lifecycle.models import DeadTask, ExtractionItem, JobKind, QueueStatus, Trigger
from memsite.core.agents import write_scopes_of
from retrieval.backends import Filters, keyword_hits, vector_hits

log = logging.getLogger(__name__)
# Delays before LLM retries of a turn (attempt 1, 2, 3 ...); the nightly run also picks them up.
RETRY_DELAYS = [timedelta(minutes=1), timedelta(minutes=10), timedelta(hours=1)]
BOOST_IMPORTANCE = 0.1  # seed 004's BOOST (+0.3 on its 0-3 scale), on our 0-1 scale
OPERATIONS = ("ADD", "UPDATE", "BOOST", "DELETE", "NOOP")
DURATIONS = ("permanent", "7d", "24h", "session")


class ExtractionDeferred(Exception):
    """The LLM failed this time; the turn waits in the retry queue."""


# --------------------------------------------------------------------------------------
# Choosing the extractor
# --------------------------------------------------------------------------------------


def wants_llm(turn: ConversationTurn) -> bool:
    return llm.configured() and llm.weighted_length(turn.content) >= settings.EXTRACT_LLM_MIN_CHARS


def reserve_llm_call(session: Session) -> bool:
    """Take one of the session's LLM calls (atomic, so two workers cannot both take the last)."""
    taken = Session.objects.filter(
        pk=session.pk, llm_calls__lt=settings.EXTRACT_LLM_PER_SESSION
    ).update(llm_calls=F("llm_calls") + 1)
    return bool(taken)


def _retrying(turn: ConversationTurn) -> bool:
    return ExtractionItem.objects.filter(turn=turn, status=QueueStatus.WAITING).exists()


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------


def extract_turn(
    turn: ConversationTurn, *, job_run: str = "", force_llm: bool = False
) -> list[Result]:
    """Extract one turn through the write path; [] for non-user or already-extracted turns.

    Raises ExtractionDeferred when the LLM failed and the turn was queued for a retry.
    """
    if turn.extracted:
        return []
    if turn.role != Role.USER:
        ConversationTurn.objects.filter(pk=turn.pk).update(extracted=True)  # nothing to extract
        return []
    again = (force_llm or _retrying(turn)) and llm.configured()  # a retry keeps its reserved call
    use_llm = again or (wants_llm(turn) and reserve_llm_call(turn.session))
    if not use_llm:
        return _commit(turn, offline_candidates(turn), job_run)
    try:
        plan = llm_plan(turn)
    except llm.LLMError as exc:
        _defer(turn, str(exc), job_run)
        raise ExtractionDeferred(str(exc)) from exc
    return _commit(turn, plan.candidates, job_run, boosts=plan.boosts)


def _commit(turn, candidates: list[Candidate], job_run: str, boosts=None) -> list[Result]:
    """Propose every candidate and mark the turn, in one transaction (all or nothing)."""
    results: list[Result] = []
    owner, boosts = turn.session.owner, boosts or {}
    scopes = write_scopes_of(turn.agent_id)  # an agent limited to some scopes stays within them
    with transaction.atomic():
        # Raw keyed statements: asked for every turn that proposes something, and compiling
        # the ORM's three queries cost more than running them.
        if _sql(_EXTRACTED, [turn.pk]) is not None:
            return []  # another worker finished it meanwhile
        for index, candidate in enumerate(candidates):
            if index in boosts and not Fact.objects.active().filter(pk=boosts[index]).exists():
                continue  # changed since the model saw it: repeating it would revert the change
            try:
                result = propose(
                    candidate,
                    actor="job",
                    owner=owner,
                    # per extractor: a later LLM retry of a turn the rules took is not a replay
                    operation_id=f"extract:{turn.pk}:{candidate.source}:{index}",
                    job_run=job_run,
                    scopes=scopes,
                )
            except InvalidCandidate as exc:
                log.info("turn %s: candidate refused by the write path: %s", turn.pk, exc)
                continue
            results.append(result)
            if index in boosts and result.outcome == "boosted" and result.fact is not None:
                _raise_importance(result.fact, job_run)
        _sql(_MARK_EXTRACTED, [turn.pk])
        _sql(_ITEM_DONE, [QueueStatus.DONE, turn.pk, QueueStatus.WAITING])
    turn.extracted = True
    return results


def _sql(statement: str, params: list):
    with connection.cursor() as cur:
        cur.execute(statement, params)
        return cur.fetchone()


_EXTRACTED = f"SELECT 1 FROM {ConversationTurn._meta.db_table} WHERE id = %s AND extracted"
_MARK_EXTRACTED = f"UPDATE {ConversationTurn._meta.db_table} SET extracted = 1 WHERE id = %s"
_ITEM_DONE = (
    f"UPDATE {ExtractionItem._meta.db_table} SET status = %s, next_attempt_at = NULL "
    "WHERE turn_id = %s AND status = %s"
)


def _raise_importance(fact: Fact, job_run: str) -> None:
    """A BOOST means the memory proved useful: it matters a little more (seed 004)."""
    importance = round(min(1.0, fact.importance + BOOST_IMPORTANCE), 4)
    change_fact(
        fact.pk,
        {"importance": importance},
        event_type="boost",
        actor="job",
        job_run=job_run,
        reason="used again",
    )


# --------------------------------------------------------------------------------------
# The retry queue
# --------------------------------------------------------------------------------------


def _defer(turn: ConversationTurn, error: str, job_run: str = "") -> ExtractionItem:
    """Queue a failed turn with a growing delay; after the last attempt, a dead letter."""
    with transaction.atomic():
        item, _created = ExtractionItem.objects.get_or_create(turn=turn)
        item.attempts += 1
        item.last_error = error[:2000]
        if item.attempts >= settings.EXTRACT_MAX_ATTEMPTS:
            item.status, item.next_attempt_at = QueueStatus.DEAD, None
        else:
            delay = RETRY_DELAYS[min(item.attempts - 1, len(RETRY_DELAYS) - 1)]
            item.status, item.next_attempt_at = QueueStatus.WAITING, timezone.now() + delay
        item.save()
    if item.status == QueueStatus.DEAD:
        dead_letter(DeadTask.EXTRACT, "turn", turn.pk, error, attempts=item.attempts)
        _commit(turn, offline_candidates(turn), job_run)  # what was said still lands
    return item


def due_items(now=None):
    now = now or timezone.now()
    return ExtractionItem.objects.filter(status=QueueStatus.WAITING, next_attempt_at__lte=now)


def pending_turns(now=None):
    """User turns still to extract: never tried, or waiting with their retry due."""
    now = now or timezone.now()
    return (
        ConversationTurn.objects.filter(extracted=False, role=Role.USER)
        .exclude(extraction_item__status__in=[QueueStatus.DEAD, QueueStatus.DISCARDED])
        .exclude(
            extraction_item__status=QueueStatus.WAITING, extraction_item__next_attempt_at__gt=now
        )
        .select_related("session__owner")
        .order_by("timestamp", "pk")
    )


def give_up(turn_id: int) -> None:
    """A discarded dead letter: the turn is not retried any more."""
    ExtractionItem.objects.filter(turn_id=turn_id).update(
        status=QueueStatus.DISCARDED, next_attempt_at=None
    )


def retry_now(turn_id: int, job_run: str = "") -> list[Result]:
    """A person's Retry of an extraction dead letter: the LLM gets the turn again."""
    turn = ConversationTurn.objects.select_related("session__owner").get(pk=turn_id)
    ExtractionItem.objects.filter(turn=turn).update(
        status=QueueStatus.WAITING, attempts=0, next_attempt_at=timezone.now()
    )
    if turn.extracted:  # the rules extractor took it after the last failure
        ConversationTurn.objects.filter(pk=turn.pk).update(extracted=False)
        turn.extracted = False
    return extract_turn(turn, job_run=job_run, force_llm=llm.configured())


def run_turn(turn_id: int, *, retry: bool = False) -> ExtractionItem | None:
    """The job: extract one turn; a run is recorded when it proposed anything.

    Returns the waiting queue item when the LLM failed and a retry is due later.
    """

    turn = ConversationTurn.objects.select_related("session__owner").filter(pk=turn_id).first()
    if turn is None:
        return None  # deleted meanwhile
    run_id, began = runs.new_run_id("extract"), timezone.now()
    try:
        results = retry_now(turn_id, run_id) if retry else extract_turn(turn, job_run=run_id)
    except ExtractionDeferred:
        return ExtractionItem.objects.filter(turn=turn, status=QueueStatus.WAITING).first()
    if results:
        counts = {"turn": turn.pk}
        for result in results:
            counts[result.outcome] = counts.get(result.outcome, 0) + 1
        trigger = Trigger.MANUAL if retry else Trigger.SCHEDULE
        runs.record_single(JobKind.EXTRACT, trigger, run_id, counts, began)
    return None


def run_turns(turn_ids: list[int], vectors: dict | None = None) -> list[int]:
    """The job for a batch of turns (a chat import): what `run_turn` does for each, with the
    learned model deciding on the batch's vectors at once (`vectors`: turn id -> the vector
    indexing just made; the others are read from the index) and the turns that give nothing
    marked in one statement. One run is recorded for the batch when it proposed anything.

    Returns the turns left to `run_turn` (those the LLM takes: their retries are scheduled
    one by one)."""
    turns = list(
        ConversationTurn.objects.select_related("session__owner")
        .filter(pk__in=turn_ids, extracted=False)
        .order_by("timestamp", "pk")
    )
    own, quiet, for_model = [], [], []
    found: dict[int, list[Candidate]] = {}
    for turn in turns:
        if turn.role != Role.USER:
            quiet.append(turn.pk)
        elif llm.configured() and (wants_llm(turn) or _retrying(turn)):
            own.append(turn.pk)
        elif candidates := rule_candidates(turn):
            found[turn.pk] = candidates
        else:
            for_model.append(turn)
    found.update(learned.batch_candidates(for_model, vectors or {}))
    run_id, began, counts = runs.new_run_id("extract"), timezone.now(), {}
    for turn in turns:
        if turn.pk in own or turn.pk in quiet:
            continue
        if not found.get(turn.pk):
            quiet.append(turn.pk)
            continue
        for result in _commit(turn, found[turn.pk], run_id):
            counts[result.outcome] = counts.get(result.outcome, 0) + 1
    _mark_extracted(quiet)
    if counts:
        counts["turns"] = len(turns) - len(own)
        runs.record_single(JobKind.EXTRACT, Trigger.SCHEDULE, run_id, counts, began)
    return own


def _mark_extracted(turn_ids: list[int]) -> None:
    """Turns with nothing to extract, as `_commit` marks one with no candidate."""
    if turn_ids:
        with transaction.atomic():
            ConversationTurn.objects.filter(pk__in=turn_ids).update(extracted=True)
            ExtractionItem.objects.filter(turn_id__in=turn_ids, status=QueueStatus.WAITING).update(
                status=QueueStatus.DONE, next_attempt_at=None
            )


# --------------------------------------------------------------------------------------
# The offline extractors: the rules, then the learned model
# --------------------------------------------------------------------------------------


def offline_candidates(turn: ConversationTurn) -> list[Candidate]:
    """The rules' candidates, or the learned model's when the rules found nothing."""
    return rule_candidates(turn) or learned.candidates(turn)


def _confidence(c: rules.RuleCandidate) -> float:
    """A hedged statement always waits for the person: between the configured pending and
    write thresholds, whatever they are ("Maybe I like hiking" is never written directly)."""
    if not c.hedged:
        return c.confidence
    below_write = round(settings.CONFIDENCE_WRITE - 0.01, 2)
    return max(settings.CONFIDENCE_PENDING, min(c.confidence, below_write))


def rule_candidates(turn: ConversationTurn) -> list[Candidate]:
    name = turn.session.owner.display_name
    said_at = timezone.localtime(turn.timestamp)  # "last month", "下周六" are relative to it
    return [
        Candidate(
            content=c.content,
            subject=c.subject,
            predicate=c.predicate,
            type=c.type,
            scope=Scope.USER,
            confidence=_confidence(c),
            importance=c.importance,
            duration=c.duration,
            source="rules",
            source_turn_id=turn.pk,
        )
        for c in rules.extract(turn.content, name=name, now=said_at)
    ]


# --------------------------------------------------------------------------------------
# The LLM extractor
# --------------------------------------------------------------------------------------

SYSTEM_PROMPT = """You keep the long-term memory of a personal AI assistant about one person.
Read the person's latest message (the assistant's recent reply and tool activity are context
only) and decide what is worth remembering beyond this conversation.

Existing memories are listed with short ids like [1], [2]. Refer to them only by those ids.
Answer with one JSON object: {"operations": [ ... ]}, each operation one of:
  {"op": "ADD", "type": T, "subject": S, "predicate": P, "content": C,
   "confidence": 0-1, "importance": 0-1, "duration": D}
  {"op": "UPDATE", "id": n, "content": C, "confidence": 0-1, "importance": 0-1, "duration": D}
      - memory n changed or the person corrected it; C is the new full statement
  {"op": "BOOST", "id": n}  - memory n was confirmed or clearly relied on again
  {"op": "DELETE", "id": n, "reason": R}  - memory n is wrong or no longer true
  {"op": "NOOP"}
T is one of: identity, preference, rule, fact, skill, error, constraint.
S is who or what it is about (the person's name or "user", a project, a tool); P is the
attribute ("name", "city", "preferred editor", ...): the same S and P for the same attribute.
D is one of: permanent, 7d, 24h, session (how long it stays true).
confidence: how explicitly the person said it (0.95 stated outright, 0.7 only implied).
importance: 0.8-1 firm rules and strong preferences, 0.5-0.7 useful context, 0.2-0.4 details.
Write C as one self-contained sentence in the language the person used.
Do not store small talk, one-off task details, or what the assistant itself said.
If nothing is worth keeping, answer {"operations": []}."""


@dataclass
class Plan:
    candidates: list[Candidate] = field(default_factory=list)
    boosts: dict[int, int] = field(default_factory=dict)  # candidate index -> boosted fact id
    invented: list = field(default_factory=list)  # ids the model made up (rejected)


def related_facts(turn: ConversationTurn, limit: int | None = None) -> list[Fact]:
    """The existing memories most related to the turn (keyword and vector search)."""

    limit = limit or settings.EXTRACT_RELATED
    owner_id = turn.session.owner_id
    filters = Filters(owner_id, kinds=("fact",))
    ids: list[int] = []
    for finder in (keyword_hits, vector_hits):
        try:
            hits = finder(turn.content, owner_id, limit=limit, filters=filters)
        except Exception as exc:  # a degraded index must not stop extraction
            log.info(
                "related facts for turn %s: %s unavailable (%s)", turn.pk, finder.__name__, exc
            )
            continue
        ids += [h.object_id for h in hits if h.object_id not in ids]
    facts = Fact.objects.in_bulk(ids[: limit * 2])
    live = [facts[i] for i in ids if i in facts and facts[i].status == FactStatus.ACTIVE]
    return live[:limit]


def _clip(text: str, size: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= size else text[: size - 1] + "…"


def tool_summary(turn: ConversationTurn) -> list[str]:
    """Tool calls and their results in one line each (seed 003 5.4: tool-aware extraction)."""
    results = {r.get("tool_call_id"): r for r in (turn.tool_results or []) if isinstance(r, dict)}
    lines = []
    for call in turn.tool_calls or []:
        if not isinstance(call, dict):
            continue
        fn = call.get("function") or call
        args = fn.get("arguments", "")
        args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        result = results.get(call.get("id"), {})
        state = "failed" if result.get("ok") is False or result.get("error") else "ok"
        output = result.get("output") or result.get("error") or result.get("content") or ""
        lines.append(f"{fn.get('name', '?')}({_clip(args, 120)}) -> {state}: {_clip(output, 200)}")
    return lines


def _context(turn: ConversationTurn) -> str:
    """The assistant turns since the previous user turn: what the person was answering."""
    before = ConversationTurn.objects.filter(
        session=turn.session, turn_index__lt=turn.turn_index
    ).order_by("-turn_index")[:6]
    lines = []
    for prev in before:
        if prev.role == Role.USER:
            break
        lines[:0] = [f"[{prev.role}] {_clip(prev.content, 400)}", *tool_summary(prev)]
    lines += tool_summary(turn)
    return "\n".join(lines)


def build_prompt(turn: ConversationTurn, facts: list[Fact]) -> tuple[str, dict[int, Fact]]:
    """The user message and the short-id map (the model never sees database ids)."""
    ids = {n: fact for n, fact in enumerate(facts, start=1)}
    memories = "\n".join(
        f"[{n}] ({f.type}) {f.subject or '-'} · {f.predicate or '-'}: {_clip(f.content, 300)}"
        for n, f in ids.items()
    )
    parts = [
        "Existing memories:\n" + (memories or "(none)"),
        "Context (earlier in the conversation):\n" + (_context(turn) or "(none)"),
        "The person's latest message:\n" + turn.content,
    ]
    return "\n\n".join(parts), ids


def _unit(value, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return min(1.0, max(0.0, number)) if number == number else default


def validate_operations(data: dict) -> list[dict]:
    """The shape the model must keep; value details are tolerated and cleaned later."""
    ops = data.get("operations")
    if ops is None and isinstance(data.get("op"), str):
        ops = [data]  # a single bare operation
    if not isinstance(ops, list):
        raise llm.Invalid('"operations" must be a list')
    for n, op in enumerate(ops, start=1):
        if not isinstance(op, dict):
            raise llm.Invalid(f"operation {n} must be an object")
        name = str(op.get("op", "")).upper().split(":")[0]
        if name == "SKIP":
            name = "NOOP"
        if name not in OPERATIONS:
            raise llm.Invalid(f'operation {n} has an unknown "op" {op.get("op")!r}')
        if name == "ADD" and not str(op.get("content") or "").strip():
            raise llm.Invalid(f'operation {n} (ADD) needs a non-empty "content"')
        if name in ("UPDATE", "BOOST", "DELETE"):
            if (
                not isinstance(op.get("id"), int | str)
                or not str(op.get("id")).strip("[] ").isdigit()
            ):
                raise llm.Invalid(f'operation {n} ({name}) needs the memory\'s short "id" number')
            if name == "UPDATE" and not str(op.get("content") or "").strip():
                raise llm.Invalid(f'operation {n} (UPDATE) needs the new "content"')
        op["op"] = name
    return ops


def llm_plan(turn: ConversationTurn) -> Plan:
    facts = related_facts(turn)
    prompt, ids = build_prompt(turn, facts)
    ops = llm.chat_json(SYSTEM_PROMPT, prompt, validate_operations, context=f"turn {turn.pk}")
    plan = plan_from_operations(ops, ids, turn)
    if plan.invented:
        log.warning("turn %s: the model named unknown memories %s", turn.pk, plan.invented)
    return plan


def plan_from_operations(ops: list[dict], ids: dict[int, Fact], turn: ConversationTurn) -> Plan:
    plan = Plan()
    for op in ops:
        name = op["op"]
        if name == "NOOP":
            continue
        if name == "ADD":
            plan.candidates.append(_added(op, turn))
            continue
        fact = ids.get(int(str(op["id"]).strip("[] ")))
        if fact is None:
            plan.invented.append(op.get("id"))  # never guess which memory the model meant
            continue
        plan.candidates += _about(name, op, fact, turn, plan)
    return plan


def _type(value, default: str = FactType.FACT) -> str:
    value = str(value or "").lower()
    return value if value in FactType.values else default


def _duration(value) -> str | None:
    value = str(value or "").lower()
    return value if value in DURATIONS else None


def _added(op: dict, turn: ConversationTurn, **overrides) -> Candidate:
    scope = str(op.get("scope") or "").lower()
    values = dict(
        content=str(op.get("content", "")).strip(),
        subject=str(op.get("subject") or "").strip()[:200],
        predicate=str(op.get("predicate") or "").strip()[:200],
        type=_type(op.get("type")),
        scope=scope if scope in Scope.values else Scope.USER,
        confidence=_unit(op.get("confidence"), 0.8),
        importance=_unit(op.get("importance"), 0.5),
        duration=_duration(op.get("duration")),
        source="llm",
        source_turn_id=turn.pk,
    )
    return Candidate(**{**values, **overrides})


def _about(name: str, op: dict, fact: Fact, turn, plan: Plan) -> list[Candidate]:
    """UPDATE / BOOST / DELETE of a known memory, as candidates for the write path."""
    if name == "DELETE":
        reason = str(op.get("reason") or op.get("content") or "").strip()
        return [
            Candidate(
                content=reason,
                delete_fact_id=fact.pk,
                confidence=_unit(op.get("confidence"), 0.8),
                source="llm",
                source_turn_id=turn.pk,
            )
        ]
    if name == "BOOST":
        plan.boosts[len(plan.candidates)] = fact.pk
        # The same text on the same subject + predicate is a repeat: the write path boosts it.
        return [
            _added(
                {},
                turn,
                content=fact.content,
                subject=fact.subject,
                predicate=fact.predicate,
                type=fact.type,
                scope=fact.scope,
                confidence=_unit(op.get("confidence"), 0.9),
                importance=fact.importance,
                priority=fact.priority,
            )
        ]
    # UPDATE: the new value on the old fact's subject + predicate supersedes it.
    keep = {"type": _type(op.get("type"), fact.type), "scope": fact.scope}
    if fact.subject and fact.predicate:
        return [_added(op, turn, subject=fact.subject, predicate=fact.predicate, **keep)]
    # Without subject + predicate nothing can be superseded: add the new statement and ask
    # the person whether the old one should go (never deleted without them).
    new = _added(op, turn, **keep)
    why = f"replaced by: {new.content}"
    return [new, Candidate(content=why, delete_fact_id=fact.pk, confidence=new.confidence,
                           source="llm", source_turn_id=turn.pk)]  # fmt: skip
