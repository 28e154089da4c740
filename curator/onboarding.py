"""The one-time identity onboarding (seed 000 section 3), as plain functions.

The wizard pages and the API (an agent running the same questions in chat) both call
`status()` and `submit()`, so they ask the same questions, validate the same way and write
the same cards and facts. Confirming is all or nothing: the two cards, their revisions, the
facts (through the write path) and the owner's flags change together or not at all.

Owner.onboarding_draft holds the server-side draft:
    {"step": 2, "reached": 2, "answers": {...}, "token": "...",
     "submitted": {...}, "submitted_at": "..."}   # kept after a confirm, to prefill a reset
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext

from curator import cards, writepath
from curator.generated import colon
from curator.models import (
    Actor,
    CardAuthor,
    Fact,
    FactType,
    MemoryEvent,
    Owner,
    Priority,
    Scope,
    Source,
)
from curator.writepath import Candidate, WritePathError

# --------------------------------------------------------------------------------------
# The questions
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    key: str
    step: int
    label: str | Promise
    help: str | Promise
    example: str | Promise
    fact_label: str | Promise  # how the answer reads as a fact: "<fact_label>: <answer>"
    scope: str
    type: str
    predicate: str
    required: bool = False
    multiline: bool = True
    max_length: int = 1000
    default: str | Promise = ""

    @property
    def subject(self) -> str:
        return "assistant" if self.scope == Scope.SYSTEM else "user"

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "step": self.step,
            "label": str(self.label),
            "help": str(self.help),
            "example": str(self.example),
            "required": self.required,
            "multiline": self.multiline,
            "max_length": self.max_length,
            "default": str(self.default),
        }


def _q(key, step, label, help, example, fact_label, type, predicate, **extra) -> Question:
    scope = Scope.SYSTEM if step == 1 else Scope.USER
    return Question(key, step, label, help, example, fact_label, scope, type, predicate, **extra)


QUESTIONS: tuple[Question, ...] = (
    _q(
        "assistant_name",
        1,
        gettext_lazy("Name"),
        gettext_lazy("What the assistant is called."),
        gettext_lazy("Shiyi"),
        gettext_lazy("The assistant's name"),
        FactType.IDENTITY,
        "name",
        required=True,
        multiline=False,
        max_length=60,
        default=gettext_lazy("Shiyi"),
    ),
    _q(
        "positioning",
        1,
        gettext_lazy("Positioning"),
        gettext_lazy("What the assistant is for you, in a sentence or two."),
        gettext_lazy(
            "A pragmatic engineering partner who helps me ship and remembers my projects."
        ),
        gettext_lazy("The assistant's role"),
        FactType.IDENTITY,
        "role",
        required=True,
    ),
    _q(
        "tone",
        1,
        gettext_lazy("Tone"),
        gettext_lazy("How it talks to you."),
        gettext_lazy("Direct and warm; the answer first, details on request; no flattery."),
        gettext_lazy("The assistant's tone"),
        FactType.PREFERENCE,
        "tone",
    ),
    _q(
        "boundaries",
        1,
        gettext_lazy("Boundaries"),
        gettext_lazy("What it does only after asking you. One per line."),
        gettext_lazy("Asks before deleting files or sending messages on my behalf."),
        gettext_lazy("The assistant's boundaries"),
        FactType.IDENTITY,
        "boundaries",
    ),
    _q(
        "taboos",
        1,
        gettext_lazy("Taboos"),
        gettext_lazy("What it never does. One per line."),
        gettext_lazy("Never invents results; never stores passwords or keys."),
        gettext_lazy("The assistant never"),
        FactType.IDENTITY,
        "taboos",
    ),
    _q(
        "priorities",
        1,
        gettext_lazy("Priority behaviours"),
        gettext_lazy("What it always does first. One per line."),
        gettext_lazy("Checks facts before answering; says when it is unsure."),
        gettext_lazy("The assistant always"),
        FactType.PREFERENCE,
        "priorities",
    ),
    _q(
        "address",
        2,
        gettext_lazy("How should it address you?"),
        gettext_lazy("Your name or what you like to be called; it also becomes your display name."),
        gettext_lazy("Xiao Li"),
        gettext_lazy("Address the person as"),
        FactType.IDENTITY,
        "address_as",
        required=True,
        multiline=False,
        max_length=100,
    ),
    _q(
        "background",
        2,
        gettext_lazy("Profession and background"),
        gettext_lazy("What you do and what you know well."),
        gettext_lazy("Backend engineer in Hangzhou, eight years of Python."),
        gettext_lazy("The person's profession and background"),
        FactType.IDENTITY,
        "background",
    ),
    _q(
        "tech",
        2,
        gettext_lazy("Technical preferences"),
        gettext_lazy("Languages, tools and styles you prefer. One per line."),
        gettext_lazy("Python, Django and SQLite; pytest; type hints everywhere."),
        gettext_lazy("The person's technical preferences"),
        FactType.PREFERENCE,
        "tech_preferences",
    ),
    _q(
        "collaboration",
        2,
        gettext_lazy("Collaboration habits"),
        gettext_lazy("How you like to work together. One per line."),
        gettext_lazy("Reply in Chinese, code comments in English; show a plan before big changes."),
        gettext_lazy("The person's collaboration habits"),
        FactType.PREFERENCE,
        "collaboration",
    ),
    _q(
        "notes",
        2,
        gettext_lazy("Anything else to remember"),
        gettext_lazy("Anything the assistant should always keep in mind about you."),
        gettext_lazy("Morning person; prefers short meetings."),
        gettext_lazy("Also remember about the person"),
        FactType.FACT,
        "notes",
    ),
)

STEPS = (
    (1, "assistant", gettext_lazy("The assistant")),
    (2, "person", gettext_lazy("About you")),
    (3, "summary", gettext_lazy("Summary")),
)
LAST_STEP = len(STEPS)
# A draft may hold a little more than a valid answer (so nothing typed is lost), not more.
DRAFT_CAP = 4000


def questions(step: int | None = None) -> list[Question]:
    return [q for q in QUESTIONS if step is None or q.step == step]


# --------------------------------------------------------------------------------------
# Draft and validation
# --------------------------------------------------------------------------------------


def _clean_value(question: Question, value) -> str:
    value = "" if value is None else str(value)
    value = value.replace("\r\n", "\n").replace("\r", "\n").strip()
    return " ".join(value.split()) if not question.multiline else value


def answers(owner: Owner) -> dict[str, str]:
    """What the wizard shows: the draft, else the confirmed answers, else the defaults
    (your display name, the name 十一)."""
    draft = owner.onboarding_draft or {}
    saved = draft.get("answers") or draft.get("submitted") or {}
    result = {}
    for q in QUESTIONS:
        default = owner.display_name if q.key == "address" else str(q.default)
        result[q.key] = saved.get(q.key, default or "")
    return result


def current_step(owner: Owner) -> int:
    step = (owner.onboarding_draft or {}).get("step", 1)
    return step if isinstance(step, int) and 1 <= step <= LAST_STEP else 1


def reached_step(owner: Owner) -> int:
    reached = (owner.onboarding_draft or {}).get("reached", 1)
    return max(current_step(owner), reached if isinstance(reached, int) else 1)


def validate(data: dict, step: int | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """Clean answers and say what is wrong, per field, in words a person understands."""
    cleaned, errors = {}, {}
    for q in questions(step):
        value = _clean_value(q, data.get(q.key, ""))
        if q.required and not value:
            errors[q.key] = _("Please fill this in.")
        elif len(value) > q.max_length:
            errors[q.key] = _("At most %(max)d characters (now %(len)d).") % {
                "max": q.max_length,
                "len": len(value),
            }
        cleaned[q.key] = value
    return cleaned, errors


def first_error_step(errors: dict) -> int:
    steps = [q.step for q in QUESTIONS if q.key in errors]
    return min(steps) if steps else LAST_STEP


def save_draft(owner: Owner, data: dict, step: int) -> None:
    """Keep what was typed (even if invalid), so back / next / a reload lose nothing."""
    draft = dict(owner.onboarding_draft or {})
    saved = dict(draft.get("answers", answers(owner)))
    for q in QUESTIONS:
        if q.key in data:
            saved[q.key] = _clean_value(q, data[q.key])[:DRAFT_CAP]
    step = min(max(1, step), LAST_STEP)
    draft.update(
        answers=saved,
        step=step,
        reached=max(step, draft.get("reached", 1) if isinstance(draft.get("reached"), int) else 1),
        token=draft.get("token") or uuid.uuid4().hex,
    )
    owner.onboarding_draft = draft
    owner.save(update_fields=["onboarding_draft", "updated_at"])


# --------------------------------------------------------------------------------------
# The two cards as they will be written
# --------------------------------------------------------------------------------------


_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")


def _bullets(value: str) -> list[str]:
    lines = [line.strip() for line in value.splitlines() if line.strip()]
    return [line if line[:2] in {"- ", "* ", "+ "} else f"- {line}" for line in lines]


def _section(title, value: str) -> list[str]:
    return ["", f"## {title}", *_bullets(value)] if value else []


def persona_card(data: dict) -> str:
    """ShiYi.md: who the assistant is (headings in the language of the person confirming)."""
    lines = [f"# {data['assistant_name']}"]
    if data.get("positioning"):
        lines += ["", data["positioning"]]
    lines += _section(_("Tone"), data.get("tone", ""))
    lines += _section(_("Boundaries (ask first)"), data.get("boundaries", ""))
    lines += _section(_("Taboos (never)"), data.get("taboos", ""))
    lines += _section(_("Priority behaviours"), data.get("priorities", ""))
    return cards.normalise("\n".join(lines))


def user_card(data: dict) -> str:
    """User.md: a short profile of the person (seed 000: at most 2 KB)."""
    address_label = _("Address as")  # outside the f-string, so makemessages finds it
    lines = [f"# {data['address']}", "", f"- **{address_label}**: {data['address']}"]
    if data.get("background"):
        background = " ".join(data["background"].split())
        lines.append(f"- **{_('Profession and background')}**: {background}")
    lines += _section(_("Technical preferences"), data.get("tech", ""))
    lines += _section(_("Collaboration habits"), data.get("collaboration", ""))
    lines += _section(_("Other things to remember"), data.get("notes", ""))
    return cards.normalise("\n".join(lines))


def planned_facts(data: dict) -> list[dict]:
    """The facts a confirm creates: one per answered question."""
    out = []
    for q in QUESTIONS:
        lines = [_BULLET.sub("", line).strip() for line in data.get(q.key, "").splitlines()]
        value = pgettext("between answer lines", "; ").join(
            " ".join(line.split()) for line in lines if line
        )
        if value:
            out.append(
                {
                    "key": q.key,
                    "content": f"{q.fact_label}{colon()}{value}",
                    "subject": q.subject,
                    "predicate": q.predicate,
                    "type": str(q.type),
                    "scope": str(q.scope),
                }
            )
    return out


# --------------------------------------------------------------------------------------
# Status (what an agent or the wizard needs to ask) and submit
# --------------------------------------------------------------------------------------


def status(owner: Owner | None = None) -> dict:
    """Everything needed to run the onboarding elsewhere, as plain JSON-able data."""
    owner = owner or Owner.default()
    current = answers(owner)
    return {
        "identity_confirmed": owner.identity_confirmed,
        "display_name": owner.display_name,
        "step": current_step(owner),
        "steps": [{"number": n, "key": k, "title": str(t)} for n, k, t in STEPS],
        "questions": [q.to_dict() for q in QUESTIONS],
        "answers": current,
    }


@dataclass
class SubmitResult:
    ok: bool
    code: str = ""  # "", "invalid", "already_confirmed", "not_written"
    errors: dict[str, str] = field(default_factory=dict)
    facts: list[Fact] = field(default_factory=list)
    replayed: bool = False

    @property
    def step(self) -> int:
        return first_error_step(self.errors)

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "code": self.code,
            "errors": self.errors,
            "replayed": self.replayed,
            "facts": [f.pk for f in self.facts],
        }


class NotWritten(Exception):
    """The write path did not write an onboarding fact (pending or dropped): undo everything."""


def submit(
    data: dict,
    *,
    owner: Owner | None = None,
    actor: str = Actor.PERSON,
    operation_id: str | None = None,
    agent_id: int | None = None,
) -> SubmitResult:
    """Confirm the onboarding: both cards, the facts and the owner's flags, all or nothing.

    `operation_id` makes a retried API call safe: the same id after a success answers
    "replayed" and writes nothing. Unexpected errors propagate after everything is undone.
    The answers are the person's own, confirmed on the summary (in the wizard or in chat),
    hence verified facts and actor "person" by default; with actor "agent" the write path
    sends a changed answer over a verified fact to review, and the submit is refused.
    """
    owner = owner or Owner.default()
    cleaned, errors = validate(data)
    if errors:
        return SubmitResult(False, "invalid", errors)
    draft = owner.onboarding_draft or {}
    prefix = operation_id or f"onboarding:{draft.get('token') or uuid.uuid4().hex}"
    if owner.identity_confirmed:
        if MemoryEvent.objects.filter(operation_id__startswith=f"{prefix}:").exists():
            if operation_id and _other_answers(draft, prefix, cleaned):
                return SubmitResult(False, "operation_conflict", {"__all__": _conflict(prefix)})
            return SubmitResult(True, replayed=True)
        message = _("The onboarding is already confirmed; reset it in Settings to run it again.")
        return SubmitResult(False, "already_confirmed", {"__all__": message})

    try:
        facts = _confirm(owner, cleaned, actor, prefix, agent_id, same_request=bool(operation_id))
    except NotWritten as exc:
        return SubmitResult(False, "not_written", {"__all__": str(exc)})
    except WritePathError as exc:  # a refused candidate: nothing was written
        return SubmitResult(False, exc.code or "invalid", {"__all__": str(exc)})
    return SubmitResult(True, facts=facts)


def _other_answers(draft: dict, prefix: str, cleaned: dict) -> bool:
    """The confirmed onboarding under this operation id had other answers than this retry."""
    return draft.get("operation_id") == prefix and draft.get("submitted") != cleaned


def _conflict(prefix: str) -> str:
    return _(
        "Operation id “%(id)s” was already used for other answers; "
        "use a new operation id for new answers."
    ) % {"id": prefix}


def _confirm(
    owner: Owner,
    data: dict,
    actor: str,
    prefix: str,
    agent_id=None,
    same_request: bool = False,
) -> list[Fact]:

    with cards.rollback_files(["persona", "user"]), transaction.atomic():
        facts = []
        for plan in planned_facts(data):
            candidate = Candidate(
                content=plan["content"],
                subject=plan["subject"],
                predicate=plan["predicate"],
                type=plan["type"],
                scope=plan["scope"],
                confidence=1.0,
                priority=Priority.PERMANENT,
                source=Source.ONBOARDING,
                verified=True,
            )
            result = writepath.propose(
                candidate,
                actor=actor,
                owner=owner,
                operation_id=f"{prefix}:{plan['key']}",
                same_request=same_request,
                agent_id=agent_id,
            )
            if result.fact is None:
                raise NotWritten(
                    _("“%(content)s” was not written (%(outcome)s); nothing was changed.")
                    % {"content": plan["content"], "outcome": result.outcome}
                )
            facts.append(result.fact)
        cards.save_many(
            {"persona": persona_card(data), "user": user_card(data)},
            CardAuthor.ONBOARDING,
            note="onboarding",
            owner=owner,
        )
        owner.identity_confirmed = True
        owner.display_name = data["address"][:200]
        owner.onboarding_draft = {
            "submitted": data,
            "submitted_at": timezone.now().isoformat(),
            "operation_id": prefix,
        }
        owner.save(
            update_fields=["identity_confirmed", "display_name", "onboarding_draft", "updated_at"]
        )
    return facts


# --------------------------------------------------------------------------------------
# Reset (from Settings)
# --------------------------------------------------------------------------------------


def reset_effects(owner: Owner | None = None) -> dict:
    """What a reset changes and keeps, so the confirmation can say it plainly."""
    owner = owner or Owner.default()
    return {
        "confirmed": owner.identity_confirmed,
        "facts": Fact.objects.filter(owner=owner, source=Source.ONBOARDING).active().count(),
        "cards": [
            cards.spec(key).title for key in ("persona", "user") if cards.read(key, owner).strip()
        ],
        "prefilled": bool((owner.onboarding_draft or {}).get("submitted")),
    }


def reset(owner: Owner | None = None) -> None:
    """Show the wizard again, prefilled with the last answers. Nothing is deleted now:
    the cards and facts change only when the person confirms again."""
    owner = owner or Owner.default()
    previous = (owner.onboarding_draft or {}).get("submitted") or {}
    owner.identity_confirmed = False
    owner.onboarding_draft = {
        "step": 1,
        "reached": 1,
        "answers": {q.key: previous[q.key] for q in QUESTIONS if q.key in previous},
        "token": uuid.uuid4().hex,
    }
    owner.save(update_fields=["identity_confirmed", "onboarding_draft", "updated_at"])
