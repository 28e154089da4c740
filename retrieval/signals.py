"""What a question says beyond its words (issue 31), read before searching. Pure: no Django.

- names: people, places, products and quoted phrases it names (an item naming one too is
  boosted): capitalised words in English, jieba's proper-noun tags (nr, ns, nt, nz) and the
  person's own dictionary words in Chinese;
- time: the range it is bound to ("去年夏天", "last spring", "上周二": retrieval.timeparse),
  or an anchor ("before I moved", "搬家之前") whose own time, found by a search, bounds it;
- latest: it asks about the present state ("现在住哪", "where do I live now");
- parts: it asks about two things joined by and / or / 和 / 与 ("我表姐和我上司谁年纪大"): each
  thing, with what the question asks of both, is searched on its own (keywords) and the
  parts' rankings are interleaved with the whole question's (retrieval.decompose).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from retrieval import decompose, timeparse
from retrieval import text as seg
from retrieval.timeparse import TimeRange

# Capitalised words that are not names (sentence starts, question words, calendar words).
NOT_NAMES = (
    frozenset(
        "i i'm i've i'd what when where who whom whose why how which did do does is are was were "
        "will would could should can may might has have had the a an in on at my your his her "
        "their our its it this that these those there here and or but if so yes no not please "
        "tell remind remember hey hi hello thanks okay ok also then after before since during "
        "anything something everything anyone someone everyone assistant user bot ai".split()
    )
    | frozenset(timeparse.EN_MONTHS)
    | frozenset(timeparse.EN_WEEKDAYS)
)
PROPER_TAGS = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz"})
_EN_NAME = re.compile(r"\b[A-Z][\w'’-]*[A-Za-z0-9](?:\s+[A-Z][\w'’-]*[A-Za-z0-9])*")
_QUOTED = re.compile(r"[\"“「『](.{2,40}?)[\"”」』]")
_LATEST = re.compile(
    r"现在|目前|如今|当前|最新|这阵子|这些天|"
    r"\b(?:now|currently|current|these days|nowadays|at the moment|latest|still)\b",
    re.IGNORECASE,
)
_ANCHOR_EN = re.compile(
    r"\b(before|after|since)\s+(?:i|we|my\s+\w+|he|she|they)\s+((?:[a-z'’]+\s*){1,4})",
    re.IGNORECASE,
)
_ANCHOR_ZH = re.compile(r"(?:我们|我)?([\u4e00-\u9fff]{2,6}?)(之前|以前|之后|以后)")
PARTS_MAX_WORDS = 20  # a longer line is not a question naming two things
QUESTION_WORDS = frozenset(
    "谁 什么 哪 哪里 哪儿 哪个 多少 几 是否 怎样 如何 吗 呢 "
    "who what which when where why how whether".split()
)


@dataclass(frozen=True)
class QuerySignals:
    names: tuple[str, ...] = ()
    time: TimeRange | None = None
    anchor: str = ""  # "moved" of "before I moved": search it for the time it happened
    anchor_side: str = ""  # "before" or "after"
    latest: bool = False
    parts: tuple[str, ...] = ()
    person: str = ""  # a transcript as the query: the person's lines, what the vectors embed

    def to_dict(self) -> dict:
        return {
            "names": list(self.names),
            "time": self.time.to_dict() if self.time else None,
            "anchor": {"text": self.anchor, "side": self.anchor_side} if self.anchor else None,
            "latest": self.latest,
            "parts": list(self.parts),
            "person_lines": bool(self.person),
        }

    @property
    def any(self) -> bool:
        return bool(self.names or self.time or self.anchor or self.latest or self.parts)


def analyse(query: str, now: datetime) -> QuerySignals:
    query = query or ""
    # A transcript as the query: whether it asks about now, or about two things, is a
    # question's shape, read from its last line ("and" is in every other line of a dialogue).
    last = next((line for line in reversed(query.splitlines()) if line.strip()), "")
    asking = last if len(seg.words(last)) <= PARTS_MAX_WORDS else ""
    time = timeparse.parse_time(query, now)
    anchor, side = ("", "") if time else find_anchor(query)
    return QuerySignals(
        names=tuple(find_names(query)),
        time=time,
        anchor=anchor,
        anchor_side=side,
        latest=bool(_LATEST.search(last)),
        parts=tuple(split_parts(asking)) if asking else (),
        person=person_lines(query) if DIALOGUE_FOCUS else "",
    )


# A transcript pasted as the query ("Bart: ...\nAssistant: ..."): the assistant's lines
# restate and encourage, the person's say what happened. Embedding the person's lines alone
# took MADial zh's vector channel from .499 to .593 R@5 (docs/retrieval.md).
DIALOGUE_FOCUS = True
ASSISTANTS = frozenset("assistant ai bot agent system 助手 助理 小助手 系统 机器人".split())
_SPEAKER = re.compile(r"^\s*<?([^:：<>\n]{1,30}?)>?\s*[:：]")


_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
CHINESE_MIN_SHARE = 0.3  # of the question's characters (spaces left out) that are CJK


_ASKS = re.compile(r"[?？]|[吗呢么嘛][。！!~～…\s]*$")


def asks(text: str) -> bool:
    """Whether a turn asks something: a question mark, or a Chinese question particle
    ending it ("你去过杭州吗")."""
    return bool(_ASKS.search(text or ""))


def is_chinese(text: str) -> bool:
    """At least CHINESE_MIN_SHARE of the text's characters (spaces left out) are CJK: the
    question takes the Chinese channel shares (scoring.question_shares)."""
    letters = len(re.sub(r"\s", "", text))
    return bool(letters) and len(_CJK.findall(text)) >= CHINESE_MIN_SHARE * letters


def person_lines(query: str) -> str:
    """The lines not said by an assistant, when the query is a transcript with one; ''
    otherwise (the whole query is embedded)."""
    lines = [line for line in query.splitlines() if line.strip()]
    speakers = [m[1].strip().lower() if (m := _SPEAKER.match(line)) else None for line in lines]
    if len(lines) < 2 or not any(s in ASSISTANTS for s in speakers):
        return ""
    mine = [line for line, s in zip(lines, speakers, strict=True) if s not in ASSISTANTS]
    return "\n".join(mine)


def find_names(query: str) -> list[str]:
    found = [m[1].strip() for m in _QUOTED.finditer(query)]
    for m in _EN_NAME.finditer(query):
        words = [w for w in m[0].split() if w.lower().rstrip("'’s") not in NOT_NAMES]
        if words:
            found.append(" ".join(words).removesuffix("'s").removesuffix("’s"))
    if seg._CJK_RUN.search(query):
        found += chinese_names(query)
    return list(dict.fromkeys(n for n in found if len(n) > 1))


def chinese_names(query: str) -> list[str]:
    """Proper nouns by jieba's dictionary tags (no HMM pass: a dictionary look-up per word),
    words the person added to the dictionary (names, projects), and words jieba's dictionary
    does not hold (its HMM joined them: mostly names, 张伟, 小红书)."""
    import jieba

    words = seg.words(query)  # first: it loads jieba's dictionary
    tags, known, mine = _word_tags(), jieba.dt.FREQ, set(seg.user_words())
    found = [
        w
        for w in words
        if len(w) > 1
        and seg._CJK_RUN.fullmatch(w)
        and (tags.get(w) in PROPER_TAGS or w in mine or not known.get(w))
        and w not in QUESTION_WORDS
    ]
    # Search mode also yields the parts of a long word (巴克 of 星巴克): keep the whole.
    return [w for w in found if not any(w != o and w in o for o in found)]


def _word_tags() -> dict[str, str]:
    import jieba.posseg

    tokenizer = jieba.posseg.dt
    if not tokenizer.word_tag_tab:
        tokenizer.load_word_tag(tokenizer.tokenizer.get_dict_file())
    return tokenizer.word_tag_tab


def find_anchor(query: str) -> tuple[str, str]:
    """("moved to Berlin", "before") of "before I moved to Berlin"; ("", "") when none."""
    if m := _ANCHOR_EN.search(query):
        words = [w for w in m[2].split() if w.lower() not in seg.STOPWORDS]
        side = "before" if m[1].lower() == "before" else "after"
        return (" ".join(words), side) if words else ("", "")
    if m := _ANCHOR_ZH.search(query):
        phrase = m[1]
        if timeparse.find_times(phrase, datetime.now()) or phrase in {"很久", "好久", "不久"}:
            return "", ""
        return phrase, "before" if m[2] in ("之前", "以前") else "after"
    return "", ""


def split_parts(query: str) -> list[str]:
    """The parts of a question naming two things around a conjunction, each to be searched on
    its own (retrieval.decompose): "我表姐和我上司谁年纪大" -> ["表姐 年纪 大", "上司 年纪 大"]."""
    return decompose.split_question(query, _content)


def _content(word: str) -> bool:
    return word.lower() not in seg.STOPWORDS and word.lower() not in QUESTION_WORDS


def names_in(text: str, names: tuple[str, ...]) -> list[str]:
    lowered = text.lower()
    return [n for n in names if n.lower() in lowered]


def as_the_person(query: str, name: str) -> str:
    """A question that names the person (the owner's display name) as they would ask it of
    their own turns, for the vector channel: "What car does Evan drive?" -> "What car does I
    drive?", "张伟的表姐住哪" -> "我的表姐住哪"; "" when it does not name them.

    The person's turns speak in the first person, and turns that contain their name are
    mostly the other side addressing them ("Hey Evan, what's up?"): with the name in the
    query, the vectors found those (LoCoMo recorded through the API, conv-49, a tuning
    conversation: semantic R@5 .268 with the name, .413 without; hybrid .552 -> .575).
    Keywords keep the name: memories are written with it ("Evan took the Prius ...")."""
    name = (name or "").strip()
    if len(name) < 2:
        return ""
    if _CJK.search(name):
        if name not in query:
            return ""
        return query.replace(f"{name}的", "我的").replace(name, "我")
    whole = re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)
    if not whole.search(query):
        return ""
    mine = re.sub(rf"\b{re.escape(name)}['’]s\b", "my", query, flags=re.IGNORECASE)
    return whole.sub("I", mine)
