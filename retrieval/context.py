"""Context assembly (seed 000 section 5): what an agent injects into its prompt for a message.

Sections, each with its own budget, within max_context_tokens (defaults from settings):
the core cards (persona + user, compiled by curator.compiler; 600), the session's recent
turns (2,000), long-term evidence (900, 3-5 items) and a reserve for the answer (500). Over
budget, evidence goes first (lowest ranked first), then the oldest turns; the core cards are
never cut here (their compiler keeps them within their own budget).

Evidence ("recall"), by `evidence_mode`:
- "auto" (the default): every message searches facts, episodes, the person's raw turns and
  attachments, and what reaches its kind's gate goes in; what the gates cut is reported. A
  gate (CONTEXT_RECALL_GATES, one per kind, chosen by measurement on the real pipeline:
  bench/context.py --real) is a threshold on the fused score with the preset's weights
  computed on absolute values (cosine similarity, BM25 saturated as r / (r + 5), freshness)
  rather than rescaled over the candidates: the ranking's min-max score makes the best hit 1
  whatever it is, so it cannot tell "nothing here is relevant". Raw turns have a gate of their
  own because what was merely said is found more often by chance than what was learnt (a
  greeting resembles every other greeting). A turn and a fact made from it count once: the
  fact goes in, the turn as its provenance (`source_turn`). When the message points back
  in time (之前, 还记得, remember, a date, a file name: retrieval.triggers) the search widens
  as it always did: raw turns and attachments too, a time expression becomes a time filter,
  no gate.
- "always": the widened search for every message, no gate (what a caller asks for).
- "never": no evidence at all.

`assemble` is a plain function returning a dataclass with `to_dict()`; the API and the
debugger's context preview call the same function.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext_lazy

from curator import cards as card_files
from curator.compiler import compiled_profile
from curator.models import Actor, Fact, Scope, Session
from retrieval import budget as tb
from retrieval import scoring, triggers
from retrieval.backends import ALL_KINDS
from retrieval.search import SearchRequest, SearchResult, record_recall, resolve_owner, search

log = logging.getLogger(__name__)
EVIDENCE_MIN, EVIDENCE_MAX = 3, 5
# A single turn may take at most this share of the turns budget (long tool output).
TURN_SHARE = 4
# In the owner's agent language (Owner.agent_language, settable on the Settings page).
HEADINGS = {
    "cards": gettext_lazy("Who we are"),
    "turns": gettext_lazy("Recent conversation"),
    "evidence": gettext_lazy("Relevant memories"),
}
CUT_ORDER = ["evidence", "turns"]
MODES = ("auto", "always", "never")
# What the gated search looks at without a trigger: what was learnt and what was said.
GATED_KINDS = ALL_KINDS
GATED_CUT_SHOWN = 5  # items the gate cut, listed for the debugger and `explain`


@dataclass
class Budgets:
    max_tokens: int
    cards: int
    turns: int
    evidence: int
    reserve: int

    @classmethod
    def from_settings(cls, max_tokens: int | None = None, **overrides) -> Budgets:
        values = {
            "max_tokens": max_tokens or settings.CONTEXT_MAX_TOKENS,
            "cards": settings.CONTEXT_CARDS_TOKENS,
            "turns": settings.CONTEXT_TURNS_TOKENS,
            "evidence": settings.CONTEXT_EVIDENCE_TOKENS,
            "reserve": settings.CONTEXT_RESERVE_TOKENS,
        }
        values.update({k: int(v) for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class ContextSection:
    name: str
    budget: int
    tokens: int
    items: list[dict]
    text: str
    dropped: list[dict] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.tokens / self.budget if self.budget else 0.0

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "budget": self.budget,
            "tokens": self.tokens,
            "items": self.items,
            "dropped": self.dropped,
        }


@dataclass
class Recall:
    """How the evidence was looked for: what the debugger and `explain` show."""

    mode: str  # "gated", "triggered", "always" or "off"
    kinds: tuple[str, ...] = ()
    # kind -> the threshold on the absolute fused score ("gated" only; None: no gate)
    gates: dict[str, float] | None = None
    scores: dict = field(default_factory=dict)  # (kind, id) -> its gate score
    cut: list[dict] = field(default_factory=list)  # best items under the gate
    cut_count: int = 0

    @property
    def gate(self) -> float | None:
        """The gate of what was learnt (facts and episodes): the one figure older clients read."""
        return None if self.gates is None else self.gates.get("fact")

    def gate_of(self, kind: str) -> float | None:
        return None if self.gates is None else self.gates.get(kind, self.gate)

    def passes(self, item) -> bool:
        gate = self.gate_of(item.kind)
        return gate is None or self.scores.get((item.kind, item.id), 0.0) >= gate

    def to_dict(self, explain: bool = False) -> dict:
        data = {"mode": self.mode, "kinds": list(self.kinds), "gate": self.gate}
        data["gates"] = dict(self.gates) if self.gates is not None else None
        data["cut_by_gate"] = self.cut_count
        if explain:
            data["cut"] = self.cut
        return data


@dataclass
class ContextResult:
    query: str
    text: str
    sections: list[ContextSection]
    budgets: Budgets
    detection: triggers.Detection
    evidence_requested: str
    degraded: bool = False
    degraded_reason: str = ""
    over_by: int = 0
    search: SearchResult | None = field(default=None, repr=False)
    recall: Recall = field(default_factory=lambda: Recall("off"))
    as_of: datetime | None = None

    @property
    def tokens(self) -> int:
        """The estimate of the whole injected text, headings included."""
        return tb.estimate_tokens(self.text)

    @property
    def triggered(self) -> bool:
        return self.detection.triggered

    def to_dict(self, explain: bool = False) -> dict:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "sections": [s.to_dict() for s in self.sections],
            "budget": {
                "max_tokens": self.budgets.max_tokens,
                "cards": self.budgets.cards,
                "turns": self.budgets.turns,
                "evidence": self.budgets.evidence,
                "reserve": self.budgets.reserve,
            },
            "triggered": self.triggered,
            "triggers": [t.to_dict() for t in self.detection.triggers],
            "time_filter": self.detection.times[0].to_dict() if self.detection.times else None,
            "ignored_times": list(self.detection.ignored_times),
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason or None,
            "recall": self.recall.to_dict(explain),
            "as_of": self.as_of.isoformat() if self.as_of else None,
        }


# --------------------------------------------------------------------------------------
# The three sections
# --------------------------------------------------------------------------------------


# The memory scope each injected card is written from: an agent limited to other scopes
# does not get that card.
CARD_SCOPES = {"persona": Scope.SYSTEM, "user": Scope.USER}


def core_cards(
    card_budget: int, scopes: frozenset[str] | None = None, as_of: datetime | None = None
) -> list[tb.Block]:
    """The persona and user cards as injected (compiled within their budget); `scopes`
    limits them to the cards of those scopes (None: both); with `as_of`, as they read then
    (their last revision by that moment)."""
    texts = None
    if as_of is not None:
        texts = {key: card_files.text_at(key, as_of) for key in ("persona", "user")}
    profile = compiled_profile(card_budget, texts=texts)
    blocks = []
    for name, compiled in (("persona", profile.persona), ("user", profile.user)):
        if scopes is not None and CARD_SCOPES[name] not in scopes:
            continue
        if compiled.text.strip():
            text = compiled.text.strip()
            blocks.append(
                tb.Block(
                    f"card:{name}", text, tb.estimate_tokens(text), {"kind": "card", "id": name}
                )
            )
    return blocks


def _turn_line(role: str, content: str, cap: int) -> tuple[str, bool]:
    text, cut = tb.truncate(" ".join((content or "").split()), cap)
    return f"{role}: {text}", cut


def recent_turns(
    session: Session | None, turns_budget: int, before: datetime | None = None
) -> list[tb.Block]:
    """The session's turns, newest first (the trimmer drops from the end = the oldest);
    with `before`, only those recorded before that moment."""
    if session is None:
        return []
    cap = max(1, turns_budget // TURN_SHARE)
    blocks, used = [], 0
    turns = session.turns.all() if before is None else session.turns.filter(timestamp__lt=before)
    # Four columns, not whole turns: building 200 turns (tool calls and results decoded from
    # JSON) took 15 ms of every POST /context in a long session.
    newest = turns.order_by("-turn_index")[:200]
    for pk, role, content, turn_index in newest.values_list("pk", "role", "content", "turn_index"):
        line, cut = _turn_line(role, content, cap)
        tokens = tb.estimate_tokens(line) + 1
        meta = {"kind": "turn", "id": pk, "turn_index": turn_index, "truncated": cut}
        blocks.append(tb.Block(f"turn:{pk}", line, tokens, meta))
        used += tokens
        if used > turns_budget * 2:  # enough to fill the budget; the trimmer does the rest
            break
    return blocks


def _evidence_line(item, cap: int, said=None) -> tuple[str, bool]:
    """One evidence line; `said`: the turn a fact was extracted from, when the search found it
    too: its words follow the fact's (what extraction kept is often less than was said)."""
    when = timezone.localtime(item.time).strftime("%Y-%m-%d") if item.time else ""
    body = " ".join(item.content.split())
    if item.kind == "attachment" and item.title:
        body = f"{item.title}: {body}"
    if said is not None:
        body += " — " + " ".join(said.content.split())
    text, cut = tb.truncate(body, cap)
    return f"- [{item.kind}{', ' + when if when else ''}] {text}", cut


def source_turns(items) -> dict[int, int]:
    """fact id -> the turn it was extracted from, for the facts among `items`."""
    ids = [item.id for item in items if item.kind == "fact"]
    if not ids:
        return {}
    rows = Fact.objects.filter(pk__in=ids, source_turn__isnull=False)
    return dict(rows.values_list("pk", "source_turn_id"))


def evidence(
    result: SearchResult,
    skip: set[tuple[str, int]],
    evidence_budget: int,
    recall: Recall | None = None,
) -> list[tb.Block]:
    """The best search results not already in the recent turns and not under their gate, at
    most 5, best first. A turn that a kept fact was made from is not repeated: the fact
    carries it as its provenance (`source_turn`), and its words when the search found it."""
    cap = max(1, evidence_budget // EVIDENCE_MIN)  # so at least three items always fit
    wanted = [
        item
        for item in result.items
        if (item.kind, item.id) not in skip and (recall is None or recall.passes(item))
    ]
    provenance = source_turns(wanted)
    said = {("turn", turn) for turn in provenance.values()}
    found_turns = {item.id: item for item in result.items if item.kind == "turn"}
    blocks = []
    for item in wanted:
        if (item.kind, item.id) in said:
            continue
        source = provenance.get(item.id) if item.kind == "fact" else None
        line, cut = _evidence_line(item, cap, found_turns.get(source))
        meta = {
            "kind": item.kind,
            "id": item.id,
            "rank": item.rank,
            "score": round(item.score, 4),
            "truncated": cut,
        }
        if item.id in provenance and item.kind == "fact":
            meta["source_turn"] = provenance[item.id]
        if recall is not None and recall.gates is not None:
            meta["gate_score"] = round(recall.scores.get((item.kind, item.id), 0.0), 4)
            meta["gate"] = recall.gate_of(item.kind)
        blocks.append(tb.Block(f"{item.kind}:{item.id}", line, tb.estimate_tokens(line) + 1, meta))
        if len(blocks) == EVIDENCE_MAX:
            break
    return blocks


# --------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------


def _session(owner, session) -> Session | None:
    """The agent's session by its own id (a Session when the caller already has one: the
    debugger picks sessions from a list). An id of digits is the agent's id like any other,
    never a database key: "1" must not find another conversation's turns."""
    if session in (None, ""):
        return None
    if isinstance(session, Session):
        return session if session.owner_id == owner.pk else None
    return Session.objects.filter(owner=owner, external_id=str(session)).first()


def recall_gates(gate=None) -> dict[str, float]:
    """The gate per kind: the settings', with `gate` over them (one number for every kind,
    or a dict of some kinds: what the bench sweeps)."""
    gates = dict(settings.CONTEXT_RECALL_GATES)
    if isinstance(gate, dict):
        gates.update((kind, float(value)) for kind, value in gate.items())
    elif gate is not None:
        gates = dict.fromkeys(gates, float(gate))
    return gates


def plan_recall(evidence_mode: str, detection: triggers.Detection, gate=None) -> Recall:
    """How this message looks for evidence (see the module docstring)."""
    if evidence_mode == "never":
        return Recall("off")
    if evidence_mode == "always":
        return Recall("always", ALL_KINDS)
    if detection.triggered:
        return Recall("triggered", ALL_KINDS)
    return Recall("gated", GATED_KINDS, recall_gates(gate))


def gate_scores(result: SearchResult) -> dict[tuple[str, int], float]:
    """Each result's fused score on absolute values: the same weights, cosine similarity and
    saturated BM25 instead of their min-max rescaling over this search's candidates."""
    weights = scoring.Weights(**(result.base_weights or result.weights))
    params = scoring.Params(
        half_life_days=result.params["half_life_days"], normalisation="absolute"
    )
    ranges = scoring.Ranges(None, None)
    wanted = {(item.kind, item.id) for item in result.items}
    return {
        c.key: scoring.score_one(c, weights, params, ranges).score
        for c in result.scoring_input
        if c.key in wanted
    }


def _cut_by_gate(result: SearchResult, recall: Recall, skip) -> None:
    under = [i for i in result.items if not recall.passes(i) and (i.kind, i.id) not in skip]
    recall.cut_count = len(under)
    recall.cut = [
        {
            "kind": i.kind,
            "id": i.id,
            "gate_score": round(recall.scores.get((i.kind, i.id), 0.0), 4),
            "gate": recall.gate_of(i.kind),
            "score": round(i.score, 4),
            "content": i.content[:200],
        }
        for i in under[:GATED_CUT_SHOWN]
    ]


def assemble(
    query: str,
    *,
    owner=None,
    session_id=None,
    max_tokens: int | None = None,
    evidence_mode: str = "auto",
    preset: str | None = None,
    weights=None,
    now: datetime | None = None,
    caller: str = "api",
    actor: str = Actor.AGENT,
    record: bool = True,
    budgets: Budgets | None = None,
    agent_id: int | None = None,
    fact_scopes: frozenset[str] | None = None,
    sessions: frozenset[int] | None = None,
    gate: float | dict | None = None,
    as_of: datetime | None = None,
    params: dict | None = None,
    exclude_session=None,
) -> ContextResult:
    """The context for one message. evidence_mode: "auto" (gated recall, widened by a
    trigger), "always", "never"; `gate` overrides CONTEXT_RECALL_GATES: one number for every
    kind, or a dict of some kinds (the bench sweeps them).

    `agent_id`, `fact_scopes` and `sessions`: the agent it is for and its read limits (see
    search); a session outside `sessions` contributes no turns.
    `as_of`: the context the assistant would have been given at that moment: the cards as
    they read then, the session's turns recorded before it, and evidence from the memory
    as it stood (retrieval.search's as_of); "yesterday" in the message is the day before it.
    `exclude_session`: a conversation whose own turns never count as evidence (the chat
    proxy: the client already sends them).
    """
    owner = resolve_owner(owner)
    now = as_of or now or timezone.now()
    budgets = budgets or Budgets.from_settings(max_tokens)
    session = _session(owner, session_id)
    if session is not None and sessions is not None and session.pk not in sessions:
        session = None
    detection = triggers.detect(query, timezone.localtime(now))
    card_blocks = core_cards(budgets.cards, fact_scopes, as_of)
    cards = tb.Section("cards", budgets.cards, card_blocks, protected=True)
    turns = tb.Section("turns", budgets.turns, recent_turns(session, budgets.turns, as_of))
    result, blocks = None, []
    recall = plan_recall(evidence_mode, detection, gate)
    if recall.mode != "off" and query.strip():
        span = detection.times[0] if detection.times and recall.mode != "gated" else None
        result = search(
            SearchRequest(
                query,
                owner=owner,
                kinds=recall.kinds,
                limit=EVIDENCE_MAX + 5,
                preset=preset,
                weights=weights,
                time_from=span.start if span else None,
                time_to=span.end if span else None,
                now=now,
                caller=caller,
                actor=actor,
                record=False,  # only what goes into the context counts as recalled (below)
                agent_id=agent_id,
                fact_scopes=fact_scopes,
                sessions=sessions,
                as_of=as_of,
            )
        )
        in_turns = {(b.meta["kind"], b.meta["id"]) for b in turns.blocks}
        in_turns |= _own_turns(result, _session(owner, exclude_session))
        if recall.gates is not None:
            recall.scores = gate_scores(result)
            _cut_by_gate(result, recall, in_turns)
        blocks = evidence(result, in_turns, budgets.evidence, recall)
    ev = tb.Section("evidence", budgets.evidence, blocks)
    over = tb.trim([cards, turns, ev], budgets.max_tokens, budgets.reserve, CUT_ORDER)
    if result is not None and record and as_of is None:  # a look back is not a recall
        kept = {(b.meta["kind"], b.meta["id"]) for b in ev.blocks}
        params = {"via": "context", **(params or {})}
        record_recall(result, kept, caller, agent_id=agent_id, params=params)
    sections = [_to_section(s) for s in (cards, turns, ev)]
    degraded = bool(result and result.degraded)
    return ContextResult(
        query=query,
        text=render(sections, owner.agent_language()),
        sections=sections,
        budgets=budgets,
        detection=detection,
        evidence_requested=evidence_mode,
        degraded=degraded,
        degraded_reason=result.degraded_reason if degraded else "",
        over_by=over,
        search=result,
        recall=recall,
        as_of=as_of,
    )


def _own_turns(result: SearchResult, session: Session | None) -> set[tuple[str, int]]:
    if session is None:
        return set()
    return {(i.kind, i.id) for i in result.items if i.kind == "turn" and i.session_id == session.pk}


def _to_section(section: tb.Section) -> ContextSection:
    blocks = list(section.blocks)
    if section.name == "turns":
        blocks.reverse()  # kept newest-first for trimming; read oldest-first
    text = "\n".join(b.text for b in blocks)
    return ContextSection(
        name=section.name,
        budget=section.budget,
        tokens=section.tokens,
        items=[b.meta for b in blocks],
        text=text,
        dropped=[b.meta for b in section.dropped],
    )


def render(sections: list[ContextSection], language: str | None = None) -> str:
    with translation.override(language or settings.LANGUAGE_CODE):
        parts = [f"## {HEADINGS[s.name]}\n{s.text}" for s in sections if s.text.strip()]
    return "\n\n".join(parts)
