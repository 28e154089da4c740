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


# Said before a statement without adding to it: "嗯 我电话是…", "啊，我…", "对了 我…",
# "就是我周末…", "um I live in…". Taken off the start of a clause (and of the turn, for the
# learned model's features), so the statement after them is read as if said alone.
_ZH_FILLERS = ("嗯嗯", "嗯", "啊", "呃", "额", "哦", "噢", "喔", "唔", "哎", "诶", "欸", "哈哈",
               "那个", "就是", "对了", "然后", "话说", "反正就是", "这个")  # fmt: skip
_EN_FILLERS = ("um", "umm", "uh", "uhh", "erm", "er", "hmm", "oh", "well", "so")
_PAUSES = " \u3000…~～、.·-—,，:："


def unfilled(text: str) -> str:
    """The statement without the fillers and a stray character before it ("嗯 我叫张三" ->
    "我叫张三", "e我在北京工作" -> "我在北京工作"); a filler is only taken off when a pause or
    the speaker's 我 / I follows it, so "就是这样" and "so much fun" stay whole."""
    rest = text.lstrip(_PAUSES)
    while rest:
        cut = _filler(rest)
        if not cut:
            break
        rest = rest[cut:].lstrip(_PAUSES)
    if len(rest) > 2 and rest[1] == "我" and not ("\u4e00" <= rest[0] <= "\u9fff"):
        rest = rest[1:]  # a stray character typed before 我: "1我", "e我"
    return rest


def _filler(text: str) -> int:
    """The length of the filler `text` starts with, or 0."""
    for word in _ZH_FILLERS:
        after = text[len(word) : len(word) + 1]
        if text.startswith(word) and (after == "" or after in _PAUSES or after == "我"):
            return len(word)
    head, _space, tail = text.partition(" ")
    word = head.lower().rstrip(",")
    if word in _EN_FILLERS and (head.endswith(",") or tail[:2] in ("I ", "I'", "my", "My")):
        return len(head)
    return 0
