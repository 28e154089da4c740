"""Ending a session (seed 003 sections 4.2, 4.3, 7.3): an episode and the scratchpad update.

The episode covers the session's turns that no earlier episode covers (a session reopened
by new turns gets a second episode for them). Action nodes, tools and files always come
from the recorded tool calls and results (exact, not paraphrased); the summary, goal,
outcome and entities come from the LLM when one is configured, else from rules: the first
user goal, the tools and files used, the last answer, jieba nouns as entities. An LLM
failure falls back to the rules summary, so ending a session never fails for that reason.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from curator import cards, generated, signals
from curator.guard import rules as guard
from curator.models import (
    CardAuthor,
    ConversationTurn,
    Episode,
    Fact,
    FactStatus,
    Outcome,
    Role,
    Scratchpad,
    Session,
)
from lifecycle import llm, runs
from lifecycle.extraction.extract import (
    ExtractionDeferred,
    extract_turn,
    pending_turns,
    tool_summary,
)
from lifecycle.models import JobKind
from retrieval.text import STOPWORDS

log = logging.getLogger(__name__)
MAX_ITEMS = 5  # open questions, next steps, recent completions (seed 001: completions <= 5)
MAX_PROJECTS = 8
ITEM_CHARS = 160
SECTION = "scratchpad"
_FILE = re.compile(
    r"(?:[\w\-\u4e00-\u9fff]+/)*[\w\-.\u4e00-\u9fff]+\."
    r"(?:py|md|txt|pdf|png|jpe?g|gif|csv|json|ya?ml|toml|ini|log|sql|sh|js|ts|tsx|html|css|"
    r"docx?|xlsx?|pptx?|zip|tar|gz)\b",
    re.I,
)
_PATH = re.compile(r"(?<![\w.])(?:~|/)[\w.\-]+(?:/[\w.\-]+)+")
_SENTENCE = re.compile(r"(?<=[。！？!?；;])|(?<=[.])\s+|\n+")
_NEXT = re.compile(
    r"[^。！？!?\n]*(?:下一步|接下来|建议|计划|待办|TODO|next step|next,|we should|i will|i'll|"
    r"plan to|remember to)[^。！？!?\n]*[。！？!?]?",
    re.I,
)
_COMPLETION = re.compile(r"^- (\d{4}-\d{2}-\d{2}): (.+)$", re.M)


def _clip(text: str, size: int = ITEM_CHARS) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= size else text[: size - 1] + "…"


# --------------------------------------------------------------------------------------
# What the rules can read from the turns
# --------------------------------------------------------------------------------------


def action_nodes(turns: list[ConversationTurn]) -> list[dict]:
    """One node per tool call: tool, key parameters, result summary, success, error, time."""
    nodes = []
    for turn in turns:
        results = {r.get("tool_call_id"): r for r in turn.tool_results or [] if isinstance(r, dict)}
        for call in turn.tool_calls or []:
            if not isinstance(call, dict):
                continue
            fn = call.get("function") or call
            result = results.get(call.get("id"), {})
            failed = result.get("ok") is False or bool(result.get("error"))
            output = result.get("output") or result.get("content") or ""
            nodes.append(
                {
                    "tool_name": str(fn.get("name") or "?"),
                    "key_params": _key_params(fn.get("arguments")),
                    "result_summary": _clip(output, 100),
                    "success": not failed,
                    "error_message": _clip(result.get("error"), 200) if failed else None,
                    "timestamp": turn.timestamp.isoformat(),
                }
            )
    return nodes


def _key_params(arguments) -> dict:
    if isinstance(arguments, str):
        try:
            import json

            arguments = json.loads(arguments)
        except ValueError:
            return {"arguments": _clip(arguments, 80)}
    if not isinstance(arguments, dict):
        return {}
    scalars = [(k, v) for k, v in arguments.items() if isinstance(v, str | int | float | bool)]
    return {k: _clip(v, 80) if isinstance(v, str) else v for k, v in scalars[:4]}


def files_in(turns: list[ConversationTurn]) -> list[str]:
    text = "\n".join(t.content + "\n" + "\n".join(tool_summary(t)) for t in turns)
    found = _FILE.findall(text) + _PATH.findall(text)
    return list(dict.fromkeys(f.strip(".") for f in found))[:10]


def _keeps_english(word: str, text: str, count: int) -> bool:
    """English words are names when capitalised mid-sentence, mixed-case, or repeated."""
    if count >= 2 or any(c.isdigit() for c in word) or any(c.isupper() for c in word[1:]):
        return True
    if not word[:1].isupper():
        return False
    for match in re.finditer(rf"\b{re.escape(word)}\b", text):
        before = text[: match.start()].rstrip()
        if before and before[-1] not in ".!?。！？":
            return True  # capitalised where a sentence does not start: a name
    return False


def nouns(text: str, limit: int = 8, skip: tuple[str, ...] = ()) -> list[str]:
    """The most frequent nouns and names (jieba part-of-speech tags n*, eng)."""
    import jieba.posseg

    counts: Counter[str] = Counter()
    english: set[str] = set()
    for word, flag in jieba.posseg.cut(text[:8000]):
        word = word.strip()
        if len(word) < 2 or word.lower() in STOPWORDS or word.isdigit():
            continue
        if any(word in s for s in skip):
            continue  # a piece of a file name already listed
        if flag in ("n", "nr", "ns", "nt", "nz", "nrt", "eng", "vn"):
            counts[word] += 1
            if flag == "eng":
                english.add(word)
    keep = [w for w, n in counts.most_common() if w not in english or _keeps_english(w, text, n)]
    return keep[:limit]


def _outcome(nodes: list[dict], turns: list[ConversationTurn]) -> str:
    """Failed tools say failed / partial; otherwise an unanswered last message says ongoing."""
    failed = [n for n in nodes if not n["success"]]
    if nodes and not nodes[-1]["success"]:
        return Outcome.FAILED
    if failed:
        return Outcome.PARTIAL
    return Outcome.ONGOING if turns and turns[-1].role == Role.USER else Outcome.SUCCESS


@dataclass
class Draft:
    summary: str
    goal: str
    outcome: str
    entities: list[str]
    tags: list[str] = field(default_factory=list)
    source: str = "rules"
    parts: list[dict] = field(default_factory=list)  # the rules' summary as codes


def rules_draft(
    turns: list[ConversationTurn], nodes: list[dict], language: str | None = None
) -> Draft:
    """The summary as parts (shown in the reader's language); `summary` holds them in
    `language`, the owner's agent language, for search and the API."""
    users = [t for t in turns if t.role == Role.USER and t.content.strip()]
    answers = [t for t in turns if t.role == Role.ASSISTANT and t.content.strip()]
    goal = (
        _clip(re.split(r"(?<=[。！？!?.])\s*", users[0].content.strip())[0], 120) if users else ""
    )
    tools = list(dict.fromkeys(n["tool_name"] for n in nodes))
    files = files_in(turns)
    text = "\n".join(t.content for t in turns)
    entities = list(dict.fromkeys(files + nouns(text, skip=tuple(files))))[:10]
    parts: list[dict] = [{"code": "goal", "text": goal}] if goal else []
    if tools:
        failed = sum(1 for n in nodes if not n["success"])
        parts.append({"code": "tools", "n": len(nodes), "tools": tools, "failed": failed})
    if files:
        parts.append({"code": "files", "files": files[:5]})
    if answers:
        parts.append({"code": "last_answer", "text": _clip(answers[-1].content, 150)})
    parts.append({"code": "turns", "n": len(turns)})
    with translation.override(language or settings.LANGUAGE_CODE):
        summary = generated.episode_summary(parts)
    return Draft(summary, goal, _outcome(nodes, turns), entities, tags=tools[:5], parts=parts)


EPISODE_PROMPT = """You summarise one finished conversation between a person and their AI
assistant for the assistant's long-term memory. Answer with one JSON object:
{"summary": "what happened, about 100-200 characters",
 "goal": "what the person wanted",
 "outcome": "success" | "partial" | "failed" | "ongoing",
 "entities": ["files, projects, people, tools, concepts involved"],
 "tags": ["a few topic words"]}
Write in the language the person used."""


def _validate_episode(data: dict) -> Draft:
    summary = str(data.get("summary") or "").strip()
    if not summary:
        raise llm.Invalid('"summary" must be a non-empty string')
    outcome = str(data.get("outcome") or "").lower()
    if outcome not in Outcome.values:
        raise llm.Invalid(f'"outcome" must be one of {", ".join(Outcome.values)}')
    lists = {}
    for name in ("entities", "tags"):
        value = data.get(name) or []
        if not isinstance(value, list):
            raise llm.Invalid(f'"{name}" must be a list of strings')
        lists[name] = [_clip(v, 80) for v in value if str(v).strip()][:12]
    goal = _clip(data.get("goal"), 300)
    return Draft(_clip(summary, 1000), goal, outcome, lists["entities"], lists["tags"], "llm")


def _transcript(turns: list[ConversationTurn], budget: int = 6000) -> str:
    lines = []
    for turn in turns:
        lines.append(f"[{turn.role}] {_clip(turn.content, 600)}")
        lines += [f"  tool: {line}" for line in tool_summary(turn)]
    text = "\n".join(lines)
    return text if len(text) <= budget else text[: budget // 3] + "\n…\n" + text[-2 * budget // 3 :]


def llm_draft(turns: list[ConversationTurn], context: str) -> Draft:
    return llm.chat_json(EPISODE_PROMPT, _transcript(turns), _validate_episode, context=context)


# --------------------------------------------------------------------------------------
# The scratchpad
# --------------------------------------------------------------------------------------


@dataclass
class PadUpdate:
    current_focus: str
    active_projects: list[str]
    open_questions: list[str]
    next_steps: list[str]
    completed: str


def _merge(new: list[str], old: list[str], size: int) -> list[str]:
    return list(dict.fromkeys(_clip(x) for x in [*new, *old] if str(x).strip()))[:size]


def _outcome_label(episode: Episode) -> str:
    with translation.override(episode.owner.agent_language()):
        return str(episode.get_outcome_display())


def rules_pad(pad: Scratchpad, episode: Episode, turns: list[ConversationTurn]) -> PadUpdate:
    last_users = [t.content for t in turns if t.role == Role.USER][-3:]
    last_answers = [t.content for t in turns if t.role == Role.ASSISTANT][-3:]
    questions = [
        q.strip()
        for text in last_users
        for q in _SENTENCE.split(text)
        if q.strip().endswith(("?", "？"))
    ]
    steps = [s.strip() for text in last_answers for s in _NEXT.findall(text)]
    return PadUpdate(
        current_focus=episode.goal or pad.current_focus,
        active_projects=list(pad.active_projects or [])[:MAX_PROJECTS],
        open_questions=_merge(questions, pad.open_questions or [], MAX_ITEMS),
        next_steps=_merge(steps, pad.next_steps or [], MAX_ITEMS),
        completed=_clip(f"{episode.goal or episode.summary} ({_outcome_label(episode)})"),
    )


PAD_PROMPT = """You keep an AI assistant's working memory (its scratchpad) about the person's
ongoing work. Given the current scratchpad and a summary of the session that just ended,
answer with one JSON object:
{"current_focus": "one line", "active_projects": ["..."], "open_questions": ["..."],
 "next_steps": ["..."], "completed": "one line: what this session finished, if anything"}
Keep every list short (at most 5 items), drop what is done or stale, and write in the
language the person uses."""


def _validate_pad(data: dict) -> PadUpdate:
    lists = {}
    for name in ("active_projects", "open_questions", "next_steps"):
        value = data.get(name) or []
        if not isinstance(value, list):
            raise llm.Invalid(f'"{name}" must be a list of strings')
        lists[name] = [_clip(v) for v in value if str(v).strip()]
    if not isinstance(data.get("current_focus", ""), str):
        raise llm.Invalid('"current_focus" must be a string')
    return PadUpdate(
        current_focus=_clip(data.get("current_focus"), 300),
        active_projects=lists["active_projects"][:MAX_PROJECTS],
        open_questions=lists["open_questions"][:MAX_ITEMS],
        next_steps=lists["next_steps"][:MAX_ITEMS],
        completed=_clip(data.get("completed")),
    )


def llm_pad(pad: Scratchpad, episode: Episode, context: str) -> PadUpdate:
    current = {
        "current_focus": pad.current_focus,
        "active_projects": pad.active_projects,
        "open_questions": pad.open_questions,
        "next_steps": pad.next_steps,
    }
    prompt = (
        f"Current scratchpad: {current}\n\nSession summary: {episode.summary}\n"
        f"Goal: {episode.goal}\nOutcome: {episode.outcome}\nEntities: {episode.entities}"
    )
    return llm.chat_json(PAD_PROMPT, prompt, _validate_pad, context=context)


def completions(content: str) -> list[str]:
    """Recent completions already on the pad ("- 2026-11-20: ..." lines), newest first."""
    return [f"- {day}: {text}" for day, text in _COMPLETION.findall(content or "")]


def pad_lines(
    update: PadUpdate, done: list[str], language: str | None = None
) -> list[tuple[str, list[int]]]:
    """The generated part of the scratchpad, headings in the owner's agent language."""
    with translation.override(language or settings.LANGUAGE_CODE):
        sections = [
            (_("Current focus"), [update.current_focus] if update.current_focus else []),
            (_("Active projects"), [f"- {p}" for p in update.active_projects]),
            (_("Recent completions"), done),
            (_("Open questions"), [f"- {q}" for q in update.open_questions]),
            (_("Next steps"), [f"- {s}" for s in update.next_steps]),
        ]
    lines: list[tuple[str, list[int]]] = []
    for title, items in sections:
        if items:
            lines += [(f"### {title}", []), *[(item, []) for item in items], ("", [])]
    return lines[:-1]


def write_pad(pad: Scratchpad, update: PadUpdate, day) -> None:
    done = completions(pad.content)
    if update.completed:
        done.insert(0, f"- {day:%Y-%m-%d}: {update.completed}")
    done = list(dict.fromkeys(done))[:MAX_ITEMS]
    lines = pad_lines(update, done, pad.owner.agent_language())
    content = cards.replace_generated(pad.content or "", SECTION, lines)
    cards.save("scratchpad", content, CardAuthor.JOB, note="session_end", owner=pad.owner)
    Scratchpad.objects.filter(pk=pad.pk).update(
        current_focus=update.current_focus,
        active_projects=update.active_projects,
        open_questions=update.open_questions,
        next_steps=update.next_steps,
    )


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------


def _extract_rest(session: Session) -> None:
    """Seed 003 7.3: the session's turns not extracted yet go first (failures stay queued)."""
    for turn in pending_turns().filter(session=session):
        try:
            extract_turn(turn)
        except ExtractionDeferred:
            continue


def draft_for(
    turns: list[ConversationTurn], nodes: list[dict], context: str, language: str | None = None
) -> Draft:
    if llm.configured():
        try:
            return llm_draft(turns, context)
        except llm.LLMError as exc:
            log.warning("%s: LLM summary failed, using rules: %s", context, exc)
    return rules_draft(turns, nodes, language)


def end_session(session: Session, *, historic: bool = False) -> Episode | None:
    """Close the session: extract what is left, write its episode, update the scratchpad.

    `historic`: an imported conversation. It ended when its last turn was said, and it says
    nothing about what the person is working on now, so the scratchpad is left alone.
    """
    _extract_rest(session)
    turns = list(session.turns.filter(episode__isnull=True).order_by("turn_index"))
    now = timezone.now()
    if not turns:
        Session.objects.filter(pk=session.pk, ended_at__isnull=True).update(ended_at=now)
        return session.episodes.order_by("-ended_at").first()
    ended = turns[-1].timestamp if historic else now
    context = f"session {session.external_id}"
    nodes = action_nodes(turns)
    draft = draft_for(turns, nodes, context, session.owner.agent_language())
    with transaction.atomic():
        episode = Episode.objects.create(
            owner=session.owner,
            session=session,
            # what a guardrail keeps out of memories stays out of the episode too
            summary=guard.scrub(draft.summary, session.owner),
            summary_parts=guard.scrub_parts(draft.parts, session.owner),
            goal=guard.scrub(draft.goal, session.owner),
            outcome=draft.outcome,
            started_at=turns[0].timestamp,
            ended_at=turns[-1].timestamp,
            action_nodes=nodes,
            entities=[e for e in draft.entities if guard.scrub(e, session.owner) == e],
            tools_used=list(dict.fromkeys(n["tool_name"] for n in nodes)),
            tags=draft.tags,
            source="session_end",
        )
        linked = Fact.objects.filter(
            source_turn__in=turns, status=FactStatus.ACTIVE, owner=session.owner
        )
        episode.linked_facts.set(linked)
        ConversationTurn.objects.filter(pk__in=[t.pk for t in turns]).update(episode=episode)
        Session.objects.filter(pk=session.pk).update(ended_at=ended)
        signals.changed("episode", episode.pk)
    if not historic:
        update_scratchpad(session, episode, turns, draft.source == "llm")
    return episode


def update_scratchpad(session: Session, episode: Episode, turns, use_llm: bool) -> None:
    pad, _created = Scratchpad.objects.get_or_create(owner=session.owner)
    update = None
    if use_llm:
        try:
            update = llm_pad(pad, episode, f"scratchpad after session {session.external_id}")
        except llm.LLMError as exc:
            log.warning("scratchpad: LLM update failed, using rules: %s", exc)
    write_pad(pad, update or rules_pad(pad, episode, turns), timezone.localdate())


def run_end(session_pk: int, trigger: str = "schedule", historic: bool = False) -> Episode | None:
    """The job: end the session and record the run (what the Jobs page lists)."""

    session = Session.objects.select_related("owner").filter(pk=session_pk).first()
    if session is None:
        return None
    began = timezone.now()
    episode = end_session(session, historic=historic)
    counts = {"session": session.external_id, "episode": episode.pk if episode else None}
    if episode is not None:
        counts["turns"] = episode.turns.count()
        counts["actions"] = len(episode.action_nodes)
    runs.record_single(JobKind.END_SESSION, trigger, runs.new_run_id("session"), counts, began)
    return episode
