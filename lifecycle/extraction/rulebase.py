"""What the rules extractor's pattern modules share (pure, no Django): the candidate they
return, who a statement is about, and the small text helpers both languages use."""

from __future__ import annotations

import re
from dataclasses import dataclass

PERMANENT, DAY = "permanent", "24h"


@dataclass(frozen=True)
class RuleCandidate:
    type: str
    subject: str
    predicate: str
    content: str
    confidence: float
    importance: float
    duration: str | None
    pattern: str  # which rule matched: shown in the review queue as the reason
    hedged: bool = False  # "maybe", "可能" ...: the person was not sure, so it goes to review


class Ctx:
    """Who the statements are about, in both languages."""

    def __init__(self, name: str):
        self.subject = name or "user"
        self.zh = name or "用户"
        self.en = name or "The user"
        self.en_poss = f"{name}'s" if name else "The user's"


def make(kind, subject, predicate, content, conf, imp, pattern, duration=PERMANENT):
    return RuleCandidate(kind, subject, predicate, content, round(conf, 2), imp, duration, pattern)


def key(value: str) -> str:
    """A predicate's detail: lower case, single spaces."""
    return " ".join(value.lower().split())


# English: "I work from a café" -> "works from a café", "my" -> "their".
_IRREGULAR = {"am": "is", "'m": "is", "have": "has", "do": "does", "go": "goes", "are": "is",
              "'ve": "has", "don't": "doesn't", "was": "was", "were": "was"}  # fmt: skip
_ADVERBS = {"always", "usually", "often", "never", "sometimes", "rarely", "also", "still",
            "now", "really", "just", "normally", "generally"}  # fmt: skip
_MODALS = {"will", "can", "could", "would", "should", "might", "may", "must", "'ll", "shall"}
_PRONOUNS = [
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bme\b", re.I), "them"),
    (re.compile(r"\bI'm\b"), "they are"),
    (re.compile(r"\bI\b"), "they"),
]


def _s(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def third(phrase: str) -> str:
    """A verb phrase said with "I" said of someone else: the first verb takes its -s
    (after adverbs; not after a modal) and the pronouns become theirs."""
    words = phrase.split()
    for index, word in enumerate(words):
        low = word.lower()
        if low in _MODALS:
            break
        if low in _ADVERBS:
            continue
        words[index] = _s(word)
        break
    text = " ".join(words)
    for pattern, replacement in _PRONOUNS:
        text = pattern.sub(replacement, text)
    return text


def zh_about(text: str, who: Ctx) -> str:
    """A Chinese self-statement about the person: 我 -> 用户 (我的 -> 用户的, 我们 kept as 用户)."""
    text = re.sub(r"我们", who.zh, text)
    return re.sub(r"我", who.zh, text)


def trim(value: str) -> str:
    return value.strip().strip("\"'“”‘’「」『』()（）,，。.;；:： ")
