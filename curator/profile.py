"""What the user card (User.md) says about the person: which facts, in which order, what is cut.

Every active, unexpired user-scope fact that belongs in a profile goes into the card's
generated section, in this priority order (seed 000 2.2 / 003 6.3, issue 19):

    1. identity and how to address the person    5. preferences, dislikes, diet, habits
    2. where they live                            6. rules for the assistant
    3. family and the people they mention         7. ongoing projects and plans
    4. work and schooling

Within a section the more important, then person-verified, then newer fact comes first.
A fact "belongs in a profile" by its predicate (the extractors' stable keys: "location",
"family: daughter", "preference: 香菜" ...), else by its type (identity, preference, rule,
constraint, skill), else by words in its text ("lives in", "住在", "my daughter" ...);
experiences, lessons and one-off facts stay out (MEMORY.md and search carry those).

The card must stay injectable: the lines are added while the whole card, the person's own
text included, stays within its 2 KB limit and within the tokens the user card gets of the
cards budget (what curator.compiler gives it beside the persona card). A line the card
already holds (hand-written or generated, compared by curator.cards.repeats) is not added
again. What did not fit is returned as cut, with the reason, for the card preview.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from curator import cards, compiler
from curator.models import Fact, FactType, Owner, Scope
from curator.tokencount import estimate_tokens

SECTION = "facts"
TITLE = "# User.md"
MAX_CANDIDATES = 400  # a 2 KB card holds a few dozen lines; the rest is cut anyway

SECTIONS: tuple[tuple[str, str | Promise], ...] = (
    ("identity", _("identity and how to address you")),
    ("location", _("where you live")),
    ("people", _("family and people")),
    ("work", _("work and school")),
    ("preferences", _("preferences, dislikes, diet and habits")),
    ("rules", _("rules for the assistant")),
    ("plans", _("projects and plans")),
)
ORDER = {key: n for n, (key, _label) in enumerate(SECTIONS)}
LABELS = dict(SECTIONS)

# Predicates (or their "kind: detail" head) the extractors and onboarding write.
_PREDICATES = {
    "identity": {"name", "address as", "identity", "age", "birthday", "gender", "pronouns",
                 "nationality", "language", "email", "phone"},
    "location": {"location", "hometown", "city", "address", "lives in", "residence"},
    "people": {"family", "people", "partner", "spouse", "child", "pet"},
    "work": {"occupation", "employer", "job", "role", "school", "education", "major",
             "company", "workplace", "profession", "study", "background"},
    "preferences": {"preference", "habit", "diet", "allergy", "schedule", "food", "tone"},
    "rules": {"rule", "constraint"},
    "plans": {"plan", "project", "goal", "event"},
}  # fmt: skip
_BY_PREDICATE = {p: section for section, names in _PREDICATES.items() for p in names}
_BY_TYPE = {
    FactType.IDENTITY: "identity",
    FactType.PREFERENCE: "preferences",
    FactType.RULE: "rules",
    FactType.CONSTRAINT: "rules",
    FactType.SKILL: "work",
}
# Words that say what a plain fact is about, in both languages (first match wins).
_WORDS = (
    ("location", r"\b(?:live[sd]? in|living in|moved to|based in|resides? in|from)\b|住在|搬到|搬去"
     r"|定居|居住|生活在|老家|来自"),
    ("people", r"\b(?:wife|husband|partner|daughter|son|kids?|children|mother|father|mom|dad|"
     r"sister|brother|parents?|grandm\w+|grandf\w+|girlfriend|boyfriend|friend|boss|"
     r"colleague|manager|cat|dog)\b|老婆|老公|妻子|丈夫|爱人|女儿|儿子|孩子|妈妈|母亲|爸爸|父亲"
     r"|姐姐|妹妹|哥哥|弟弟|爷爷|奶奶|外婆|外公|男朋友|女朋友|朋友|上司|老板|同事|领导|室友|猫|狗"),
    ("work", r"\b(?:works?|working|job|employer|company|engineer|teacher|student|studies|"
     r"studying|university|college|school|office)\b|工作|上班|公司|职业|学校|大学|读书|专业|工程师"),
    ("preferences", r"\b(?:likes?|loves?|prefers?|enjoys?|hates?|dislikes?|allergic|"
     r"vegetarian|vegan|eats?|drinks?|every (?:day|morning|week)|usually)\b|喜欢|爱吃|讨厌|不吃|"
     r"不喝|过敏|吃素|偏好|习惯|每天|每周"),
    ("plans", r"\b(?:plans?|planning|going to|will|project|next (?:week|month|year))\b|计划|打算|"
     r"准备|项目|下周|下个月|明年"),
)  # fmt: skip
_WORD_PATTERNS = [(section, re.compile(words, re.I)) for section, words in _WORDS]


def section_of(fact: Fact) -> str | None:
    """Which profile section a fact belongs to (None: not part of a profile)."""
    if fact.scope != Scope.USER:
        return None
    head = fact.predicate.split(":", 1)[0].strip().lower()
    if head in _BY_PREDICATE:
        return _BY_PREDICATE[head]
    if fact.type in _BY_TYPE:
        return _BY_TYPE[fact.type]
    if fact.type != FactType.FACT:
        return None  # experiences and lessons are not a profile
    for section, pattern in _WORD_PATTERNS:
        if pattern.search(fact.content):
            return section
    return None


def profile_facts(now: datetime, owner: Owner | None = None) -> list[tuple[str, Fact]]:
    """(section, fact) for every live user fact that belongs in a profile, in card order."""
    facts = Fact.objects.live(now).filter(scope=Scope.USER)
    if owner is not None:
        facts = facts.filter(owner=owner)
    ranked = facts.order_by("-importance", "-verified", "-updated_at", "-pk")[:MAX_CANDIDATES]
    chosen = [(section, fact) for fact in ranked if (section := section_of(fact))]
    return sorted(chosen, key=lambda pair: (ORDER[pair[0]], *_rank(pair[1])))


def _rank(fact: Fact) -> tuple:
    """More important first, then what the person verified, then the newer."""
    return -fact.importance, not fact.verified, -fact.updated_at.timestamp()


def token_budget() -> int:
    """The most tokens the user card gets when injected (curator.compiler.split_budget: half
    the cards budget, plus what the persona card leaves of its half)."""
    total = settings.CARDS_TOKEN_BUDGET
    persona = estimate_tokens(compiler.clean(cards.read("persona")))
    return total - persona if persona <= total // 2 else total // 2


@dataclass
class Cut:
    fact: Fact
    section: str
    reason: str  # for people, in the active language
    limit: str = ""  # which limit: "size" (the card's bytes) or "tokens" (the injected budget)

    @property
    def section_label(self):
        return LABELS[self.section]


@dataclass
class Plan:
    text: str  # the card with its generated section rebuilt
    lines: list[tuple[str, list[int]]] = field(default_factory=list)
    cut: list[Cut] = field(default_factory=list)
    repeated: list[Fact] = field(default_factory=list)  # already said by the card
    budget: int = 0


def plan(now: datetime, current: str | None = None, owner: Owner | None = None) -> Plan:
    """The user card with every profile fact that fits, and what did not fit and why."""
    current = cards.read("user") if current is None else current
    base = current if current.strip() else TITLE + "\n"
    name = (owner or Owner.default()).display_name
    held = cards.held_lines(base, skip_section=SECTION, name=name)
    limit = cards.spec("user").limit
    result = Plan(cards.replace_generated(base, SECTION, [], updated=now), budget=token_budget())
    for section, fact in profile_facts(now, owner):
        if cards.repeats(fact.content, held, name):
            result.repeated.append(fact)
            continue
        line = (f"- {fact.content}", [fact.pk])
        trial = cards.replace_generated(base, SECTION, [*result.lines, line], updated=now)
        if limit is not None and cards.measure("user", trial).amount > limit:
            result.cut.append(Cut(fact, section, _over_size(limit), "size"))
            continue  # a shorter fact further down may still fit
        if estimate_tokens(compiler.clean(trial)) > result.budget:
            result.cut.append(Cut(fact, section, _over_tokens(result.budget), "tokens"))
            continue
        result.lines.append(line)
        held.add(cards.line_key(fact.content, name))
        result.text = trial
    return result


def _over_size(limit: int) -> str:
    return str(_("the card would exceed its %(limit)d bytes") % {"limit": limit})


def _over_tokens(budget: int) -> str:
    return str(_("the injected card would exceed its %(budget)d tokens") % {"budget": budget})
