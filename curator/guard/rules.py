"""Do-not-store rules: which rules hold, what they match, and what they mask.

A rule is a built-in detector (API keys, passwords, e-mail ...) or the person's own words,
regular expression, fact types and scopes, optionally limited to some agents (API tokens).
The write path asks `check_candidate` before it routes a candidate, so a match is never
written or queued from any source; `record_turn` asks `redact_turn` before a turn is stored,
so the masked spans never reach the database, the search indexes or the JSONL backup.
What a rule stopped is kept only as a masked excerpt (`excerpt`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curator.guard.detectors import DETECTORS, PERSONAL, SECRET, Span, merge
from curator.models import ConversationTurn, FactType, GuardRule, GuardRuleAction, Owner, Scope
from curator.normalize import content_key
from memsite.models import ApiToken

MASK = "████"  # symbols, not letters: no tokenizer makes a search term of them
MASK_CHARS = "█ "
# A candidate holding a mask was drawn from a masked span ("the user's password is ████"): it
# would only remember that something was hidden, so it is blocked under this name.
MASKED = "masked text"
EXCERPT_CHARS = 60  # of context on each side of the match
# A run of Latin letters, digits and symbols (no spaces, no CJK): in an excerpt it is masked
# when long, or when it mixes letters and digits, so a second secret next to the one a rule
# matched (an AWS secret key after its key id) is never kept in clear.
_TOKEN = re.compile(r"[^\s\u2580-\u259f\u3000-\u303f\u3400-\u9fff\uff00-\uffef]+")
LONG_TOKEN, MIXED_TOKEN = 16, 8
MAX_WORDS, MAX_WORD, MAX_PATTERN = 50, 100, 500

DETECTOR_NAMES = {
    "api_key": gettext_lazy("API keys and access tokens"),
    "password": gettext_lazy("Passwords stated in text"),
    "email": gettext_lazy("E-mail addresses"),
    "phone": gettext_lazy("Phone numbers"),
    "resident_id": gettext_lazy("Chinese resident ID numbers"),
    "bank_card": gettext_lazy("Bank card numbers"),
    "iban": gettext_lazy("IBANs"),
    "address": gettext_lazy("Postal addresses"),
}
DETECTOR_HELP = {
    "api_key": gettext_lazy(
        "OpenAI, Anthropic, AWS, GitHub, GitLab, Slack, Google, Stripe, Hugging Face, Alibaba "
        "and Tencent Cloud keys, package-registry tokens (npm, PyPI, Docker Hub …), webhook "
        "URLs (Slack, Discord, Teams, Feishu, DingTalk, WeCom), JWTs, private keys, bearer "
        "tokens, passwords in connection strings, and long generated values after "
        "“api_key =”, “token:”, “密钥是”."
    ),
    "password": gettext_lazy("“my password is …”, “password: …”, “密码是 …”, “口令：…”."),
    "email": gettext_lazy("name@example.com"),
    "phone": gettext_lazy(
        "Mainland China mobile numbers (+86 optional), landlines with an area code, and "
        "international numbers written with +."
    ),
    "resident_id": gettext_lazy("18-character numbers whose birth date and check digit are valid."),
    "bank_card": gettext_lazy("13 to 19 digits of a known card network passing the Luhn check."),
    "iban": gettext_lazy("Checked against the country's length and the mod-97 check digits."),
    "address": gettext_lazy(
        "A road or street with its house number: “文三路478号”, “221B Baker Street”."
    ),
}


class RuleError(ValueError):
    """A rule that cannot be saved; `field` names the input at fault."""

    def __init__(self, message: str, *, field: str = "", code: str = "invalid_rule"):
        super().__init__(message)
        self.field, self.code = field, code


# --------------------------------------------------------------------------------------
# Compiled rules
# --------------------------------------------------------------------------------------


def word_pattern(words: list[str]) -> str:
    """One alternation: Latin words whole (a plural s allowed), Chinese as written."""
    parts = []
    for word in sorted({w.strip() for w in words if w.strip()}, key=len, reverse=True):
        body = r"\s+".join(re.escape(piece) for piece in word.split())
        if re.match(r"[A-Za-z0-9]", word):
            body = r"(?<![A-Za-z0-9_])" + body
        if re.search(r"[A-Za-z0-9]$", word):
            body += r"(?:s|es)?(?![A-Za-z0-9_])"
        parts.append(body)
    return "|".join(parts)


@lru_cache(maxsize=256)
def _regex(words: tuple[str, ...], pattern: str) -> re.Pattern | None:
    alternatives = [p for p in (word_pattern(list(words)), pattern) if p]
    if not alternatives:
        return None
    return re.compile("|".join(f"(?:{p})" for p in alternatives), re.IGNORECASE)


@dataclass(frozen=True)
class Matcher:
    """A rule ready to match: what the write path and record_turn use."""

    rule_id: int | None
    name: str
    detector: str = ""
    regex: re.Pattern | None = None
    fact_types: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    agents: frozenset[int] = frozenset()
    redact: bool = False
    review: bool = False  # a match sends the memory to review instead of blocking it

    @property
    def kind(self) -> str:
        """What a match is, for the event: a detector's category, else "rule"."""
        return DETECTORS[self.detector].category if self.detector in DETECTORS else "rule"

    @property
    def has_text(self) -> bool:
        return bool(self.detector or self.regex)

    def spans(self, text: str) -> list[Span]:
        if not text:
            return []
        if self.detector:
            found = DETECTORS[self.detector].find(text)
        elif self.regex is None:
            return []
        else:
            found = [m.span() for m in self.regex.finditer(text) if m.end() > m.start()]
        # what is masked already is no match ("my password is ████" holds no password), so a
        # redaction applied again finds nothing left to do
        return merge([(a, b) for a, b in found if text[a:b].strip(MASK_CHARS)])

    def applies_to(self, agent: int | None) -> bool:
        return not self.agents or agent in self.agents


def matcher(rule: GuardRule) -> Matcher:
    return Matcher(
        rule_id=rule.pk,
        name=rule.name,
        detector=rule.detector,
        regex=None if rule.detector else _regex(tuple(rule.words or ()), rule.pattern or ""),
        fact_types=frozenset(rule.fact_types or ()),
        scopes=frozenset(rule.scopes or ()),
        agents=frozenset(int(a) for a in rule.agents or ()),
        redact=rule.redact_turns,
        review=rule.action == GuardRuleAction.REVIEW,
    )


def ensure_builtin(owner: Owner, existing: set[str] | None = None) -> None:
    """Create the detector rules not there yet: secrets blocking and redacting, personal data
    sending to review."""
    if existing is None:
        existing = set(
            GuardRule.objects.filter(owner=owner)
            .exclude(detector="")
            .values_list("detector", flat=True)
        )
    for key, detector in DETECTORS.items():
        if key in existing:
            continue
        try:
            with transaction.atomic():
                GuardRule.objects.create(
                    owner=owner,
                    name=_unique_name(owner, DETECTOR_NAMES[key]),
                    detector=key,
                    enabled=detector.default_on,
                    redact_turns=detector.default_redact,
                    action=detector.default_action,
                )
        except IntegrityError:  # another process created it meanwhile
            continue


def _unique_name(owner: Owner, label) -> str:
    """A detector's name as stored (events and the API quote it): always the English one,
    whichever language the first request spoke; pages show it translated (`label`)."""
    with translation.override("en"):
        name = str(label)
    taken = set(GuardRule.objects.filter(owner=owner).values_list("name", flat=True))
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name} ({n})", n + 1
    return candidate


def label(name: str, detector: str = "") -> str:
    """How a rule is shown: a detector in the reader's language, else the person's name."""
    if name == MASKED and not detector:
        return _("Text a guardrail masked")
    return str(DETECTOR_NAMES[detector]) if detector in DETECTOR_NAMES else name


def detector_labels(owner: Owner | None = None) -> dict[str, str]:
    """Stored detector names -> their label in the reader's language (for logs)."""
    labels = {r.name: label(r.name, r.detector) for r in all_rules(owner) if r.detector}
    return {MASKED: label(MASKED), **labels}


def all_rules(owner: Owner | None = None):
    """Every rule of the owner, detectors first (created on first use)."""
    owner = owner or Owner.default()
    rules = list(GuardRule.objects.filter(owner=owner))
    present = {r.detector for r in rules if r.detector}
    if len(present) < len(DETECTORS):
        ensure_builtin(owner, present)
        rules = list(GuardRule.objects.filter(owner=owner))
    order = list(DETECTORS)
    return sorted(rules, key=lambda r: (0, order.index(r.detector)) if r.detector else (1, r.pk))


def active(owner: Owner | None = None) -> list[Matcher]:
    """The owner's enabled rules, read and built now (current_rules remembers them)."""
    return [matcher(rule) for rule in all_rules(owner) if rule.enabled]


def in_force(owner: Owner | None = None) -> list[Matcher]:
    """active(owner), remembered until the rules change: what every recorded turn and every
    proposed memory is checked against."""
    return current_rules((owner or Owner.default()).pk)


# --------------------------------------------------------------------------------------
# Masking
# --------------------------------------------------------------------------------------


def mask(text: str, spans: list[Span]) -> str:
    out, last = [], 0
    for start, end in merge(spans):
        out += [text[last:start], MASK]
        last = end
    out.append(text[last:])
    return "".join(out)


def mask_all(text: str, matchers: list[Matcher]) -> str:
    """Every span any of the rules matches, masked (for excerpts and test output)."""
    spans = [s for m in matchers for s in m.spans(text)]
    return mask(text, spans) if spans else text


def _secret_like(token: str) -> bool:
    if len(token) >= LONG_TOKEN:
        return True
    return (
        len(token) >= MIXED_TOKEN
        and any(c.isalpha() for c in token)
        and any(c.isdigit() for c in token)
    )


def mask_tokens(text: str) -> str:
    """Every long or letters-and-digits token masked (what an excerpt may keep)."""
    spans = [m.span() for m in _TOKEN.finditer(text) if _secret_like(m.group())]
    return mask(text, spans) if spans else text


def excerpt(text: str, span: Span, matchers: list[Matcher]) -> str:
    """The match with some context, every matching span and every token that could be a
    secret no rule knows masked: safe to keep and show."""
    start, end = max(0, span[0] - EXCERPT_CHARS), min(len(text), span[1] + EXCERPT_CHARS)
    spans = [span] + [s for m in matchers for s in m.spans(text)]
    window = [(max(a, start), min(b, end)) for a, b in merge(spans) if b > start and a < end]
    piece = mask_tokens(mask(text[start:end], [(a - start, b - start) for a, b in window]))
    return ("…" if start else "") + piece + ("…" if end < len(text) else "")


# --------------------------------------------------------------------------------------
# Candidates
# --------------------------------------------------------------------------------------


@dataclass
class Hit:
    rule_id: int | None
    name: str
    field: str  # which part of the candidate matched ("" for a type or scope rule)
    excerpt: str
    agent: int | None = None
    kind: str = ""  # secret, personal or rule
    length: int = 0  # characters matched (what an event may say of the value itself)
    review: bool = False  # the rule sends to review rather than blocks


def agent_of_turn(turn_id: int | None) -> int | None:
    if not turn_id:
        return None
    return ConversationTurn.objects.filter(pk=turn_id).values_list("agent_id", flat=True).first()


def check_candidate(
    fields: dict[str, str],
    *,
    type: str,
    scope: str,
    agent: int | None,
    owner: Owner | None = None,
    matchers: list[Matcher] | None = None,
    masked_ok: bool = False,
    review: bool = False,
) -> Hit | None:
    """The first rule the candidate matches, or None. `fields` is its text by name
    (content, subject, predicate, tags): a secret in any of them is a secret stored.
    `masked_ok`: a mask in the text is the person's to keep (their edit, their confirmation
    of a redacted review item), not a memory drawn from a masked turn.
    `review`: rules that send to review count too (a new candidate from anyone but the
    person); a blocking rule always wins over them."""
    matchers = in_force(owner) if matchers is None else matchers
    for name, text in fields.items():
        if MASK in text and not masked_ok:
            at = text.index(MASK)
            span = (at, at + len(MASK))
            return Hit(None, MASKED, name, excerpt(text, span, matchers), agent, "masked")
    blocking = [m for m in matchers if not m.review]
    reviewing = [m for m in matchers if m.review] if review else []
    for rule in blocking + reviewing:
        if not rule.applies_to(agent):
            continue
        if rule.fact_types and type not in rule.fact_types:
            continue
        if rule.scopes and scope not in rule.scopes:
            continue
        if not rule.has_text:
            return Hit(rule.rule_id, rule.name, "", "", agent, rule.kind, review=rule.review)
        for name, text in fields.items():
            if spans := rule.spans(text):
                return Hit(
                    rule.rule_id,
                    rule.name,
                    name,
                    excerpt(text, spans[0], matchers),
                    agent,
                    rule.kind,
                    spans[0][1] - spans[0][0],
                    rule.review,
                )
    return None


def text_rules(matchers: list[Matcher]) -> list[Matcher]:
    """The rules that look at text regardless of fact type and scope: what a derived text
    (an episode's summary) must not hold."""
    return [m for m in matchers if m.has_text and not m.fact_types and not m.scopes]


# Owner id -> (the rules' stamp, their enabled matchers); see current_rules.
_rules_seen: dict[int, tuple[tuple, list[Matcher]]] = {}


def current_rules(owner_id: int) -> list[Matcher]:
    """The owner's enabled rules as matchers, remembered until the rules change.

    Rebuilt through the ORM each time, they cost every recorded turn and every proposed
    memory a query and the matchers' construction (and held the interpreter lock 1-17 ms
    per recall, which the next search waited out). One raw indexed statement tells whether
    any rule was added, removed or saved since, in whichever process: a rule changed on the
    Guardrails page holds for the very next memory. Callers must not change the list.
    """
    stamp = _rules_stamp(owner_id)
    seen = _rules_seen.get(owner_id)
    if seen and seen[0] == stamp:
        return seen[1]
    while True:  # the stamp read before the rules: a change made meanwhile shows next time
        matchers = active(Owner(pk=owner_id))
        after = _rules_stamp(owner_id)
        if after == stamp:  # else active() created the built-in detectors, or a rule changed
            break
        stamp = after
    _rules_seen[owner_id] = (stamp, matchers)
    return matchers


def current_text_rules(owner_id: int) -> list[Matcher]:
    """text_rules(active(owner)), for the recall writer: it masks every search's query with
    these, in a thread beside the searches."""
    return text_rules(current_rules(owner_id))


def _rules_stamp(owner_id: int) -> tuple:
    # enabled and action too: a QuerySet.update() of them leaves updated_at as it was
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), max(updated_at), total(id), total(enabled), group_concat(action) "
            f"FROM {GuardRule._meta.db_table} WHERE owner_id = %s",
            [owner_id],
        )
        return tuple(cur.fetchone())


def scrub(text: str, owner: Owner | None = None) -> str:
    """Text written from turns (an episode) with every enabled text rule's matches masked."""
    return mask_all(text or "", text_rules(active(owner))) if text else text


def scrub_parts(parts: list[dict], owner: Owner | None = None) -> list[dict]:
    """An episode summary's parts (curator.generated) with the same matches masked."""
    return mask_value(parts, text_rules(active(owner))) if parts else parts


def mask_value(value: Any, matchers: list[Matcher]) -> Any:
    """Strings anywhere inside JSON (a candidate's subject, an event's payload) masked."""
    if isinstance(value, str):
        return mask_all(value, matchers)
    if isinstance(value, list):
        return [mask_value(v, matchers) for v in value]
    if isinstance(value, dict):
        masked = {k: mask_value(v, matchers) for k, v in value.items()}
        if isinstance(masked.get("content"), str) and "content_key" in masked:
            # the comparison form folds case and spaces away: derive it again, never mask it
            masked["content_key"] = content_key(masked["content"])
        return masked
    return value


# --------------------------------------------------------------------------------------
# Turns
# --------------------------------------------------------------------------------------


@dataclass
class Redaction:
    content: str
    tool_calls: Any
    tool_results: Any
    hits: list[Hit] = field(default_factory=list)


def _redact_json(value: Any, rules: list[Matcher], hits: list[Hit], everyone) -> Any:
    if isinstance(value, str):
        return _redact_text(value, rules, hits, everyone)
    if isinstance(value, list):
        return [_redact_json(v, rules, hits, everyone) for v in value]
    if isinstance(value, dict):
        return {k: _redact_json(v, rules, hits, everyone) for k, v in value.items()}
    return value


def _redact_text(text: str, rules: list[Matcher], hits: list[Hit], everyone) -> str:
    spans: list[Span] = []
    for rule in rules:
        found = rule.spans(text)
        if found:
            spans += found
            hits.append(Hit(rule.rule_id, rule.name, "turn", excerpt(text, found[0], everyone)))
    return mask(text, spans) if spans else text


def transcript_rules(matchers: list[Matcher], agent: int | None) -> list[Matcher]:
    """Rules that mask turns: redacting, with words, a pattern or a detector. Fact types and
    scopes describe memories, so a rule limited by them leaves transcripts alone."""
    return [
        m
        for m in matchers
        if m.redact and m.has_text and not m.fact_types and not m.scopes and m.applies_to(agent)
    ]


def redact_turn(
    content: str,
    tool_calls: Any = None,
    tool_results: Any = None,
    *,
    agent: int | None = None,
    matchers: list[Matcher] | None = None,
) -> Redaction:
    """The turn as it may be stored: every redacting rule's spans masked, in the text and in
    any string inside the tool calls and results; `hits` says which rules masked what."""
    everyone = in_force() if matchers is None else matchers
    rules = transcript_rules(everyone, agent)
    if not rules:
        return Redaction(content, tool_calls, tool_results)
    hits: list[Hit] = []
    text = _redact_text(content or "", rules, hits, everyone)
    calls = _redact_json(tool_calls, rules, hits, everyone)
    results = _redact_json(tool_results, rules, hits, everyone)
    for hit in hits:
        hit.agent = agent
    return Redaction(text, calls, results, _one_per_rule(hits))


def _one_per_rule(hits: list[Hit]) -> list[Hit]:
    seen, kept = set(), []
    for hit in hits:
        if hit.name not in seen:
            seen.add(hit.name)
            kept.append(hit)
    return kept


# --------------------------------------------------------------------------------------
# Managing rules (the API and the Guardrails page share these)
# --------------------------------------------------------------------------------------

EDITABLE = (
    "name",
    "words",
    "pattern",
    "fact_types",
    "scopes",
    "agents",
    "enabled",
    "redact_turns",
    "action",
)
# A detector's meaning is fixed: only whether, where and how it applies can change.
DETECTOR_EDITABLE = ("enabled", "redact_turns", "agents", "fact_types", "scopes", "action")


def clean_words(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        value = re.split(r"[\n,，、;；]", value)
    if not isinstance(value, list | tuple) or not all(isinstance(w, str) for w in value):
        raise RuleError(_("Words must be a list of words or phrases."), field="words")
    words = list(dict.fromkeys(" ".join(w.split()) for w in value if w.strip()))
    if len(words) > MAX_WORDS or any(len(w) > MAX_WORD for w in words):
        raise RuleError(
            _("At most %(n)d words or phrases of at most %(max)d characters each.")
            % {"n": MAX_WORDS, "max": MAX_WORD},
            field="words",
        )
    return words


def clean_pattern(value: Any) -> str:
    pattern = str(value or "").strip()
    if not pattern:
        return ""
    if len(pattern) > MAX_PATTERN:
        raise RuleError(
            _("The regular expression is too long (at most %(max)d characters).")
            % {"max": MAX_PATTERN},
            field="pattern",
        )
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise RuleError(
            _("This is not a valid regular expression: %(error)s.") % {"error": exc},
            field="pattern",
        ) from None
    if compiled.fullmatch(""):
        raise RuleError(
            _("The regular expression matches empty text, so it would match everything."),
            field="pattern",
        )
    return pattern


def _clean_choices(value: Any, allowed, name: str) -> list[str]:
    items = list(dict.fromkeys(value or []))
    unknown = [v for v in items if v not in allowed]
    if unknown:
        raise RuleError(
            _("Unknown %(field)s: %(values)s; use some of: %(allowed)s.")
            % {
                "field": name,
                "values": ", ".join(map(str, unknown)),
                "allowed": ", ".join(allowed),
            },
            field=name,
        )
    return items


def clean_action(value: Any) -> str:
    if value not in GuardRuleAction.values:
        raise RuleError(
            _("The action is “block” or “review”."),
            field="action",
        )
    return value


def clean_agents(value: Any, known: set[int]) -> list[int]:
    try:
        ids = list(dict.fromkeys(int(v) for v in value or []))
    except (TypeError, ValueError):
        raise RuleError(_("Agents are given by their API token ids."), field="agents") from None
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise RuleError(
            _("No API token with id %(ids)s.") % {"ids": ", ".join(map(str, unknown))},
            field="agents",
        )
    return ids


def clean_rule(
    rule: GuardRule, values: dict, *, types, scopes, agents: set[int], whole: bool = True
) -> dict:
    """Validated values for `rule` (new or existing); raises RuleError naming the field.
    `whole=False` checks the values alone (a trial run needs no name)."""
    allowed = DETECTOR_EDITABLE if rule.detector else EDITABLE
    unknown = set(values) - set(allowed)
    if unknown:
        name = sorted(unknown)[0]
        if rule.detector and name in EDITABLE:
            message = _("A built-in detector can be switched on or off, not changed.")
        else:
            message = _("Unknown field “%(name)s”.") % {"name": name}
        raise RuleError(message, field=name)
    cleaners = {
        "name": lambda v: " ".join(str(v or "").split())[:100],
        "words": clean_words,
        "pattern": clean_pattern,
        "fact_types": lambda v: _clean_choices(v, list(types), "fact_types"),
        "scopes": lambda v: _clean_choices(v, list(scopes), "scopes"),
        "agents": lambda v: clean_agents(v, agents),
        "enabled": bool,
        "redact_turns": bool,
        "action": clean_action,
    }
    cleaned = {name: cleaners[name](value) for name, value in values.items()}
    merged = {name: cleaned.get(name, getattr(rule, name)) for name in EDITABLE}
    if whole and not rule.detector:
        _check_own_rule(rule, merged)
    return cleaned


def _check_own_rule(rule: GuardRule, merged: dict) -> None:
    if not merged["name"]:
        raise RuleError(_("Give the rule a name."), field="name")
    taken = GuardRule.objects.filter(owner_id=rule.owner_id, name=merged["name"])
    if taken.exclude(pk=rule.pk).exists():
        raise RuleError(_("Another rule already has this name."), field="name")
    conditions = ("words", "pattern", "fact_types", "scopes")
    if not any(merged[c] for c in conditions):
        raise RuleError(
            _("Say what the rule matches: words, a regular expression, fact types or scopes."),
            field="words",
        )


def _clean(rule: GuardRule, values: dict, whole: bool = True) -> dict:
    tokens = set(ApiToken.objects.values_list("pk", flat=True))
    return clean_rule(
        rule, values, types=FactType.values, scopes=Scope.values, agents=tokens, whole=whole
    )


def create_rule(values: dict, owner: Owner | None = None) -> GuardRule:
    """A new rule of the person's own (detectors exist already and cannot be added)."""
    rule = GuardRule(owner=owner or Owner.default())
    values = {"enabled": True, **values}
    for name, value in _clean(rule, values).items():
        setattr(rule, name, value)
    try:
        with transaction.atomic():
            rule.save()
    except IntegrityError:
        raise RuleError(_("Another rule already has this name."), field="name") from None
    return rule


def update_rule(rule: GuardRule, values: dict) -> GuardRule:
    changes = _clean(rule, values)
    if not changes:
        return rule
    for name, value in changes.items():
        setattr(rule, name, value)
    try:
        with transaction.atomic():
            rule.save()
    except IntegrityError:
        raise RuleError(_("Another rule already has this name."), field="name") from None
    return rule


def delete_rule(rule: GuardRule) -> None:
    """The person's own rules go; a detector can only be switched off."""
    if rule.detector:
        raise RuleError(
            _("A built-in detector cannot be deleted; switch it off instead."),
            code="builtin_rule",
        )
    rule.delete()


def trial(values: dict, text: str, owner: Owner | None = None) -> tuple[Matcher, list[Span]]:
    """An unsaved rule against sample text: (its matcher, the spans it matches)."""
    values = dict(values)
    rule = GuardRule(owner=owner or Owner.default(), detector=values.pop("detector", "") or "")
    values.pop("name", None)
    if rule.detector:
        values = {}
    for name, value in _clean(rule, values, whole=False).items():
        setattr(rule, name, value)
    found = matcher(rule)
    return found, found.spans(text)


def categories() -> dict[str, str]:
    return {SECRET: _("secret"), PERSONAL: _("personal data")}
