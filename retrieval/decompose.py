"""A question naming two or more things, taken apart (issue 31, multi-hop). Pure: no Django.

"What do Melanie and Caroline both like?" asks about Melanie's likes and about Caroline's:
each part is the thing on one side of the conjunction with what the question says of both
("melanie like", "caroline like"; "我表姐和我上司谁年纪大" -> "表姐 年纪 大", "上司 年纪 大").
The search runs each part on its own (keywords) and interleaves: the whole question's best,
then each part's best, then the whole question's second, each part's second... so every part
gets places in the top k (retrieval.search._interleave_parts).

A turn of a transcript that starts with a speaker's name ("Joanna: I made a vanilla cake")
is that person's own statement: a question about Joanna is answered by what she said, not
by another speaker addressing her ("Wow Joanna, that's cool!"). `speaker_of` reads it.
"""

from __future__ import annotations

import re

from retrieval import text as seg

_CONJ_EN = re.compile(r"\s+(?:and|or|vs\.?|versus)\s+", re.IGNORECASE)
# Not 还是: in what people say it is mostly "still" (我还是觉得有点害怕); splitting on it took
# 13 of MADial zh's 160 dialogues apart at random, none of them a choice between two things.
_CONJ_ZH = re.compile(r"和|与|跟|以及")
# Words that say the question is about both sides ("both", "share"): not part of either side.
BOTH_WORDS = frozenset(
    "both together share shared common similar either each 都 一起 共同 两个 两人 俩".split()
)
# Only a question that asks about both sides is taken apart: "both", "share", "similar",
# "compared", 谁, 哪个, 比较, 都, 共同, or a choice (vs). Any "and" split every question
# with a conjunction ("What did Nate make and share with his group?") and cost single-hop
# and temporal questions more than it gave multi-hop (LoCoMo tuning split, 200 questions with
# a conjunction: R@5 .605 without parts, .581 with every conjunction split; of the 82 that
# name two people or ask about both: .506 without parts, .494 all split, .530 gated).
ASKS_OF_BOTH = re.compile(
    r"\b(?:both|share[sd]?|in common|common|similar|compared?|vs\.?|versus)\b"
    r"|谁|哪个|哪一个|比较|都|共同",
    re.IGNORECASE,
)
# "How many weeks passed between adopting Coco and Shadow?" asks for a span, not two things.
TIME_SPAN = re.compile(
    r"^\s*(?:when|how long)\b|\bhow many \w+ (?:passed|between)|什么时候|多久|多长时间",
    re.IGNORECASE,
)
SHARED_MAX = 4  # content words of the rest of the question added to each side
_SPEAKER = re.compile(r"^\s*([^\s:：][^:：\n]{0,38}?)\s*[:：]\s")


def split_question(query: str, is_content) -> list[str]:
    """The parts of a question asking about two things around a conjunction: each side's
    thing with the rest of the question's content words (what it asks of both); [] when it
    names one thing or does not ask about both. `is_content(word)` tells a content word
    from a stopword or question word."""
    query = _SPEAKER.sub("", query, count=1)  # a transcript's last line: "Lisa: ..."
    conj = _CONJ_ZH if seg._CJK_RUN.search(query) else _CONJ_EN
    m = conj.search(query)
    if not m or not ASKS_OF_BOTH.search(query) or TIME_SPAN.search(query):
        return []
    # "放假我和好姐妹都去哪玩": a pronoun before 和 / and is the person and a companion, not
    # two things; the word next to the conjunction on its left must be a content word.
    before = _words(query[: m.start()])
    left = before[-1] if before and is_content(before[-1]) else None
    right = next((w for w in _words(query[m.end() :]) if is_content(w)), None)
    if not left or not right or left.lower() == right.lower():
        return []
    sides = {left.lower(), right.lower()}
    shared: list[str] = []
    for word in _words(query):
        lowered = word.lower()
        if lowered in sides or lowered in BOTH_WORDS or not is_content(word):
            continue
        if lowered not in (s.lower() for s in shared):
            shared.append(word)
    shared = shared[:SHARED_MAX]
    return [" ".join([left, *shared]), " ".join([right, *shared])]


def _words(text: str) -> list[str]:
    return [w for w in seg.words(text) if w.strip() and re.search(r"\w", w)]


def speaker_of(content: str) -> str:
    """ "Joanna" of "Joanna: I made a cake" (lowercased); '' for a turn without a speaker."""
    m = _SPEAKER.match(content)
    return m[1].strip().lower() if m else ""


def interleave(main: list, parts: list[list], limit: int) -> tuple[list, dict]:
    """The whole question's ranking with each part's own ranking woven in, round robin
    (main, part 1, part 2, main, ...) over the first `limit` places; the rest follow in
    the main order. Returns (ranking, {item: part number from 1}) for the items a part
    placed. Items of a part list must be items of `main`."""
    out, seen, placed = [], set(), {}
    lists = [main, *parts]
    depth = max((len(p) for p in parts), default=0)
    for position in range(depth):
        for n, ranked in enumerate(lists):
            if len(out) >= limit:
                break
            if position < len(ranked) and ranked[position] not in seen:
                seen.add(ranked[position])
                out.append(ranked[position])
                if n:
                    placed[ranked[position]] = n
    out += [item for item in main if item not in seen]
    return out, placed
