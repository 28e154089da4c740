"""The cheap features the learned extractor reads beside the e5 vector of a turn (pure, no
Django): who speaks of whom, whether it is a question or a greeting, names, places and times.

The e5 vector says what a turn is about; it is weak on the small words that decide whether it
is worth remembering ("我" or "你", a question mark, "maybe"). These are counted here in well
under a millisecond a turn: Chinese through jieba's plain cut and its dictionary's
part-of-speech tags (nr person, ns place, t time; the HMM tagger costs ten times more), English
through word sets. Training (lifecycle/extraction/training.py) and the extractor call the
same `vector()`, so they cannot disagree.
"""

from __future__ import annotations

import math
import re

import numpy as np

from lifecycle.extraction.rulebase import unfilled

_CJK = re.compile("[\u4e00-\u9fff]")
_WORDS = re.compile("[a-z']+")
_SENTENCE_END = re.compile("[。！？!?.;；\n]+")

# Chinese markers (substrings) and English ones (whole words, lower case).
ZH = {
    "first": ("我", "咱"),
    "second": ("你", "您"),
    "third": ("他", "她", "它"),
    "question": (
        "吗",
        "呢",
        "什么",
        "怎么",
        "为什么",
        "哪",
        "谁",
        "几",
        "多少",
        "是不是",
        "有没有",
    ),
    "greeting": ("你好", "谢谢", "哈哈", "嗯", "好的", "早上好", "晚安", "再见", "哦", "拜拜"),
    "like": ("喜欢", "爱", "讨厌", "偏好", "最爱", "受不了", "不爱"),
    "plan": ("要", "打算", "计划", "准备", "想", "将"),
    "past": ("了", "过", "曾经", "以前"),
    "request": ("请", "帮我", "能不能", "可以帮", "告诉我", "给我"),
    "hedge": ("可能", "也许", "大概", "或许", "好像"),
    "negation": ("不", "没", "别"),
}
EN = {
    "first": {"i", "i'm", "i've", "i'll", "i'd", "my", "me", "mine", "myself", "we", "our",
              "us", "we're", "we've"},
    "second": {"you", "your", "you're", "yours"},
    "third": {"he", "she", "they", "his", "her", "their", "he's", "she's"},
    "question": {"what", "how", "why", "where", "when", "who", "which", "whose", "did", "does",
                 "do", "are", "is", "can", "could", "would"},
    "greeting": {"hi", "hey", "hello", "thanks", "thank", "lol", "wow", "congrats", "bye",
                 "awesome", "cool", "great", "nice", "haha", "ok", "okay", "yeah", "yes"},
    "like": {"like", "love", "hate", "prefer", "enjoy", "favorite", "favourite", "loves",
             "likes", "enjoyed", "loved", "passion", "passionate"},
    "plan": {"will", "going", "plan", "planning", "gonna", "next", "soon", "tomorrow"},
    "past": {"was", "were", "did", "had", "went", "got", "ago", "yesterday", "last", "made",
             "took", "started", "finished", "just"},
    "request": {"please", "help", "tell", "show", "give", "remind"},
    "hedge": {"maybe", "perhaps", "probably", "might", "guess", "think"},
    "negation": {"not", "no", "never", "don't", "didn't", "can't", "won't", "isn't"},
    "time": {"yesterday", "today", "tomorrow", "week", "month", "year", "weekend", "ago",
             "last", "next", "monday", "tuesday", "wednesday", "thursday", "friday",
             "saturday", "sunday", "summer", "winter", "spring", "fall", "morning", "night"},
    "place": {"in", "at", "from", "to", "near"},
}  # fmt: skip
MARKERS = ("first", "second", "third", "question", "greeting", "like", "plan", "past",
           "request", "hedge", "negation")  # fmt: skip
NAMES = (
    "zh", "first at start", "question at end", "question mark", "exclamation", "length",
    "sentences", "digits", "name", "place", "time", "unknown words",
    *(f"has {m}" for m in MARKERS), *(f"share {m}" for m in MARKERS),
)  # fmt: skip
SIZE = len(NAMES)


def is_chinese(text: str) -> bool:
    cjk = len(_CJK.findall(text))
    return cjk > 0 and cjk >= len(_WORDS.findall(text.lower()))


def _zh_tags(text: str) -> tuple[list[str], list[str | None]]:
    """jieba's tokens and the dictionary tag of each (None for a word it does not know)."""
    import jieba
    import jieba.posseg

    tags = jieba.posseg.dt.word_tag_tab
    if not tags:
        jieba.posseg.dt.initialize()  # loads the dictionary and its tag table once
        tags = jieba.posseg.dt.word_tag_tab
    words = [w for w in jieba.lcut(text, HMM=False) if w.strip()]
    return words, [tags.get(w) for w in words]


def _zh(text: str, row: list[float]) -> list[float]:
    words, tags = _zh_tags(text)
    n = max(1, len(words))
    cjk_unknown = [w for w, t in zip(words, tags, strict=True) if t is None and _CJK.match(w)]
    row += [
        float(any(t == "nr" for t in tags)),
        float(any(t == "ns" for t in tags)),
        float(any(t == "t" for t in tags)),
        min(1.0, len(cjk_unknown) / n * 3),
    ]
    counts = [sum(text.count(m) for m in ZH[name]) for name in MARKERS]
    row += [float(c > 0) for c in counts] + [min(1.0, c / n * 4) for c in counts]
    return row


def _en(text: str, row: list[float]) -> list[float]:
    words = _WORDS.findall(text.lower())
    n = max(1, len(words))
    raw = text.split()
    capitals = [w for i, w in enumerate(raw) if i and w[:1].isupper() and w.lower() != "i"]
    pairs = zip(raw[:-1], raw[1:], strict=True)
    places = any(a.lower() in EN["place"] and b[:1].isupper() for a, b in pairs)
    row += [
        float(bool(capitals)),
        float(places),
        float(any(w in EN["time"] for w in words)),
        0.0,
    ]
    counts = [sum(w in EN[name] for w in words) for name in MARKERS]
    row += [float(c > 0) for c in counts] + [min(1.0, c / n * 4) for c in counts]
    return row


def vector(text: str) -> np.ndarray:
    """The SIZE cheap features of one turn, each in [0, 1]."""
    text = unfilled(text.strip())  # "嗯 我…" reads as "我…"
    zh = is_chinese(text)
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    start = text[:2] if zh else " ".join(text.lower().split()[:1])
    first = ZH["first"] if zh else EN["first"]
    row = [
        float(zh),
        float(any(start.startswith(m) for m in first) if zh else start in first),
        float(text.rstrip().endswith(("?", "？"))),
        float("?" in text or "？" in text),
        float("!" in text or "！" in text),
        min(1.0, math.log1p(len(text)) / 6),
        min(1.0, len(sentences) / 6),
        float(any(c.isdigit() for c in text)),
    ]
    row = _zh(text, row) if zh else _en(text, row)
    return np.asarray(row, dtype=np.float32)
