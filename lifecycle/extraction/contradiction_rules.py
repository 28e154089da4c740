"""Offline rules that tell whether two memories cannot both be true (Chinese and English).

Each text is read into a small claim: who it is about, whether it is negated (an odd number
of negations: "never skips breakfast" is positive), the content words (lemmas in English,
characters in Chinese, with verbs of liking and consuming folded into one ENGAGE unit and
"vegetarian" read as "does not eat meat"), its qualifiers (morning, on Fridays, after 6 pm,
下午 ...), single-valued slots with their value (where one lives, works, studies; a name,
an age, a birthday, a favourite, a native language, a count) and members of mutually
exclusive groups (single / married, early riser / night owl, dark / light mode ...).

Three rules decide, none of them when either text is a wish, a plan or the past ("wants to
learn to swim", "used to live in Paris", 以前, 打算):

- negation: one claim negates the other and adds nothing the other does not say (no new
  object, no narrower qualifier: "doesn't drink coffee after 6 pm" leaves "drinks coffee
  every morning" standing);
- slot: both give a value for the same single-valued slot of the same subject, and neither
  value contains the other ("Berlin" and "Berlin, Germany" agree);
- exclusive: each names a different member of one exclusive group, with the same
  qualifiers ("works from home on Fridays" / "in the office on Mondays" agree).

`verdict(a, b)` returns the first rule that fires, or None. The labelled pairs in
tests/data/contradictions.jsonl measure it (bench/contradictions.py).
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass, field

import jieba

jieba.setLogLevel(logging.INFO)

ENGAGE = "⊕"  # like, love, enjoy, drink, eat, use ... : one unit, so 喜欢咖啡 ~ 喝咖啡
MEAT = "⊛meat"

_CJK = re.compile(r"[\u3400-\u9fff]")


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


# --------------------------------------------------------------------------------------
# Lexicons
# --------------------------------------------------------------------------------------

EN_CONTRACTIONS = {
    "can't": "can not",
    "cannot": "can not",
    "won't": "will not",
    "n't": " not",
    "'m": " am",
    "'re": " are",
    "'ve": " have",
    "'d": " would",
    "'ll": " will",
}
EN_NEGATIONS = {"not", "never", "no", "nobody", "nothing", "neither", "nor", "none"}
# Phrases that negate what follows (read as one negation each).
EN_NEG_PHRASES = [
    "no longer",
    "not any more",
    "not anymore",
    "gave up",
    "give up",
    "gives up",
    "can not stand",
    "stopped",
    "stops",
    "stop",
    "quit",
    "quits",
]
# Verbs of liking, consuming, using: one ENGAGE unit. The negative ones also negate.
EN_ENGAGE = {
    "like", "love", "enjoy", "prefer", "adore", "drink", "eat", "use", "consume", "have",
    "fancy", "play", "wear", "take", "smoke", "drive", "own", "speak", "go",
}  # fmt: skip
EN_NEG_ENGAGE = {"hate", "dislike", "detest", "loathe", "avoid", "skip"}
EN_STOP = set(
    "the a an user user's users i me my mine we our you your he she his her they their them it "
    "its is am are was were be been being has had to of in on at for with as and or but that "
    "this these those every each day days daily always usually often really very much still "
    "now currently already any more anymore longer all at fluently regularly yet again just "
    "last month months week year years ago since recently lately today yesterday "
    "also too some so lot lots quite pretty well completely totally whole own kind sort "
    "do does did doing done would will can could should must about than then".split()
)
EN_QUALIFIERS = set(
    "morning mornings afternoon afternoons evening evenings night nights weekend weekends "
    "weekday weekdays monday mondays tuesday tuesdays wednesday wednesdays thursday "
    "thursdays friday fridays saturday saturdays sunday sundays after before "
    "breakfast lunch dinner summer winter holiday holidays travel trip trips".split()
)
EN_HYPOTHETICAL = re.compile(
    r"\b(?:want|wants|wanted|would like|plan|plans|planning|hope|hopes|hoping|try|tries|"
    r"trying|might|maybe|considering|consider|thinking of|wish|wishes|learn to|"
    r"learning to|(?:am|is|are|was|were) going to)\b"
)
EN_PAST = re.compile(r"\b(?:used to|previously|formerly|back then|as a child|in the past)\b")
EN_IRREGULAR = {
    "children": "child", "kids": "kid", "went": "go", "goes": "go", "going": "go",
    "has": "have", "had": "have", "ate": "eat", "eaten": "eat", "drank": "drink",
    "drunk": "drink", "wore": "wear", "worn": "wear", "took": "take", "taken": "take",
    "spoke": "speak", "spoken": "speak", "drove": "drive", "driven": "drive",
    "swam": "swim", "ran": "run", "running": "run", "runs": "run", "lives": "live",
    "living": "live", "lived": "live", "loves": "love", "loved": "love", "likes": "like",
    "liked": "like", "uses": "use", "used": "use", "using": "use", "smokes": "smoke",
    "smoked": "smoke", "smoking": "smoke", "hates": "hate", "hated": "hate",
    "dislikes": "dislike", "disliked": "dislike", "avoids": "avoid", "skips": "skip",
    "women": "woman", "men": "man", "teeth": "tooth", "feet": "foot", "mice": "mouse",
    "movies": "movie", "films": "film", "plays": "play", "playing": "play",
}  # fmt: skip
EN_MEAT = {"meat", "chicken", "fish", "beef", "pork", "lamb", "bacon", "ham", "steak", "seafood"}
# "X is vegetarian" says "X does not eat meat".
EN_DIET = re.compile(r"\b(?:vegetarian|vegan|plant-based)\b")
EN_HYPERNYMS = {
    "instrument": {"guitar", "piano", "violin", "drum", "drums", "flute", "cello", "bass"},
    "pet": {"cat", "dog", "rabbit", "hamster", "parrot", "fish"},
    "alcohol": {"beer", "wine", "whisky", "whiskey", "vodka", "sake", "cocktail"},
    "sport": {"football", "soccer", "tennis", "basketball", "badminton", "golf"},
}
EN_RELATIONS = set(
    "wife husband partner boyfriend girlfriend son daughter child kid mother mom mum father "
    "dad sister brother friend colleague boss manager team lead parent parents cat dog "
    "pet grandmother grandfather aunt uncle cousin roommate neighbour neighbor".split()
)
# Relations a person usually has many of: "the user's friend lives in X" and "... in Y" may be
# two friends, so they are compared only when both name the same one ("friend Zoe").
EN_MANY = set("friend colleague cousin roommate neighbour neighbor".split())
# A sentence about someone else by name: "Sam likes tea" says nothing about the user.
EN_NAMED_VERBS = set(
    "likes loves lives works is has drinks eats hates plays speaks prefers owns wants "
    "studies goes uses enjoys dislikes".split()
)
EN_NOT_NAMES = set(
    "the i my our your his her their he she we they it this that user users every each "
    "lives works likes loves".split()
)

ZH_NEG_PHRASES = [
    "再也不", "不再", "从不", "从没", "从来不", "从来没", "不太", "不怎么", "没有", "不能",
    "不会", "戒掉", "戒了", "停止", "放弃", "不", "没", "别", "未", "戒",
]  # fmt: skip
ZH_NOT_NEGATION = ["不错", "不同", "不少", "不断", "不久", "不仅", "不如", "不然", "没错", "不只"]
ZH_ENGAGE = [
    "喜欢", "喜爱", "爱吃", "爱喝", "热爱", "享受", "偏好", "喝", "吃", "用", "玩", "抽",
    "爱", "穿", "戴", "养",
]  # fmt: skip
ZH_NEG_ENGAGE = ["讨厌", "厌恶", "受不了", "反感", "不喜欢", "恨", "避免", "忌"]
ZH_FLUFF = set("用户我你他她的了是在都也很就还已经每天天现一直总经常再个只会能可以要吧呢啊着过")
ZH_QUALIFIERS = [
    "早上", "早晨", "上午", "中午", "下午", "傍晚", "晚上", "夜里", "半夜", "周末", "工作日",
    "周一", "周二", "周三", "周四", "周五", "周六", "周日", "星期一", "星期二", "星期三",
    "星期四", "星期五", "星期六", "星期天", "星期日", "冬天", "夏天", "假期", "出差", "饭后",
    "睡前",
]  # fmt: skip
ZH_HYPOTHETICAL = re.compile(r"想|打算|计划|希望|考虑|准备|可能|也许|要学|学着")
ZH_PAST = re.compile(r"以前|曾经|之前|过去|小时候|原来")
ZH_MEAT = "肉鸡鸭鱼牛羊猪虾蟹"
ZH_DIET = re.compile(r"素食主义者|素食者|吃素|纯素|素食")
ZH_HYPERNYMS = {"乐器": "吉他钢琴小提琴鼓", "宠物": "猫狗兔鸟鱼", "酒": "啤红白"}
ZH_RELATIONS = [
    "妻子", "老婆", "丈夫", "老公", "儿子", "女儿", "孩子", "妈妈", "母亲", "爸爸", "父亲",
    "姐姐", "妹妹", "哥哥", "弟弟", "朋友", "同事", "老板", "领导", "猫", "狗", "室友",
]  # fmt: skip
ZH_MANY = {"朋友", "同事", "室友"}

# Mutually exclusive groups: each member is a tuple of (English, Chinese) phrases.
EXCLUSIVE = {
    "marital": [
        ("single", "unmarried", "单身", "未婚"),
        ("married", "已婚", "结婚了"),
        ("divorced", "离婚", "离异"),
    ],
    "handedness": [("left-handed", "左撇子", "左利手"), ("right-handed", "右撇子", "右利手")],
    "chronotype": [
        ("early riser", "morning person", "早起", "早睡早起"),
        ("night owl", "夜猫子", "熬夜"),
    ],
    "personality": [("introvert", "introverted", "内向"), ("extrovert", "extroverted", "外向")],
    "theme": [
        ("dark mode", "dark theme", "深色", "暗色"),
        ("light mode", "light theme", "浅色", "亮色"),
    ],
    "workplace": [
        ("from home", "remote", "在家办公", "居家办公"),
        ("in the office", "at the office", "去办公室", "去公司"),
    ],
}

# Single-valued slots: (slot, pattern with a `value` group and an optional `who` group).
_V_EN = r"(?P<value>[\w\-' ]+?)"
_END_EN = r"(?=$|[,.;!?]| now\b| last\b| this\b| since\b| in (?:19|20)\d\d| as\b| with\b)"
SLOTS_EN = [
    ("residence", rf"\b(?:lives?|living|reside[sd]?) in {_V_EN}{_END_EN}"),
    ("residence", rf"\b(?:moved|relocated|moving|relocating) to {_V_EN}{_END_EN}"),
    ("residence", rf"\bis based in {_V_EN}{_END_EN}"),
    ("employer", rf"\b(?:works?|working) (?:at|for) {_V_EN}{_END_EN}"),
    ("employer", rf"\b(?:joined|is employed by|is employed at) {_V_EN}{_END_EN}"),
    ("school", rf"\b(?:stud(?:y|ies|ying)) at {_V_EN}{_END_EN}"),
    ("age", r"\bis (?P<value>\d{1,3}) (?:years? old|yo)\b"),
    ("age", r"\bturned (?P<value>\d{1,3})\b"),
    ("birthday", rf"\bbirthday is (?:on )?{_V_EN}{_END_EN}"),
    ("native_language", rf"\bnative (?:language|tongue) is {_V_EN}{_END_EN}"),
    ("phone", r"\bphone (?:number )?is (?P<value>[\d\-+ ()]{5,})"),
    ("email", r"\bemail(?: address)? is (?P<value>\S+@\S+)"),
    ("favorite", r"\bfavou?rite (?P<what>\w+) is (?P<value>[\w\-' ]+?)(?=$|[,.;!?])"),
    ("name", r"(?P<who>\b\w+)'s name is (?P<value>[\w\-']+)"),
    ("name", r"\bmy name is (?P<value>[\w\-']+)"),
    ("name", r"(?P<who>\b\w+) is (?:called|named) (?P<value>[\w\-']+)"),
    ("count", r"\bhas (?P<value>\d+|one|two|three|four|five|six) (?P<what>\w+)"),
    ("preference", r"\bprefers? (?P<value>\w+) (?:over|to) (?P<what>\w+)"),
]
_V_ZH = r"(?P<value>[\w\u3400-\u9fff]+?)"
_END_ZH = r"(?=$|[，。；！？,.;!?]|了|工作|上班|任职|读书|上学|的时候)"
SLOTS_ZH = [
    ("residence", rf"住在{_V_ZH}{_END_ZH}"),
    ("residence", rf"(?:搬到|搬去|搬来|迁到|定居在|定居于|定居)(?:了)?{_V_ZH}{_END_ZH}"),
    ("residence", rf"家在{_V_ZH}{_END_ZH}"),
    ("employer", r"在(?P<value>[\w\u3400-\u9fff]+?)(?:工作|上班|任职)"),
    ("employer", rf"(?:就职于|入职|跳槽到|加入)(?:了)?{_V_ZH}{_END_ZH}"),
    ("school", r"在(?P<value>[\w\u3400-\u9fff]+?)(?:读书|上学|读研|读博)"),
    ("age", r"(?P<value>\d{1,3})岁"),
    ("birthday", r"生日是(?P<value>[\w\u3400-\u9fff]+)"),
    ("native_language", r"母语是(?P<value>[\w\u3400-\u9fff]+)"),
    ("favorite", r"最喜欢的(?P<what>[\u3400-\u9fff]+?)是(?P<value>[\w\u3400-\u9fff]+)"),
    ("name", r"(?P<who>[\u3400-\u9fff])叫(?P<value>[\w\u3400-\u9fff]+)"),
    ("name", r"名字(?:是|叫)(?P<value>[\w\u3400-\u9fff]+)"),
    ("count", r"有(?P<value>\d+|一|两|二|三|四|五)(?:个|只|条)(?P<what>[\u3400-\u9fff]+)"),
]
NUMBERS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6"}
NUMBERS.update({"一": "1", "两": "2", "二": "2", "三": "3", "四": "4", "五": "5"})
_VALUE_TAIL_EN = re.compile(r"\b(?:now|currently|too|as well|again)\b.*$")


# --------------------------------------------------------------------------------------
# Reading a text
# --------------------------------------------------------------------------------------


@dataclass(slots=True)  # up to 20,000 cached: no __dict__ each
class Claim:
    text: str
    negations: int = 0
    units: set[str] = field(default_factory=set)
    qualifiers: set[str] = field(default_factory=set)
    slots: dict[str, str] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)
    verbs: set[str] = field(default_factory=set)  # the ENGAGE verbs themselves
    subject: str = ""  # "" = the person; else a relation ("sister", "猫")
    hypothetical: bool = False
    past: bool = False

    @property
    def negated(self) -> bool:
        return self.negations % 2 == 1

    @property
    def current(self) -> bool:
        return not (self.hypothetical or self.past)


def _lemma(word: str) -> str:
    """A crude stem, the same for every form ("drive", "drives", "driving" -> "driv"): only
    ever compared with other stems, so consistency matters, not spelling."""
    word = EN_IRREGULAR.get(word, word)
    for suffix, repl in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: len(word) - len(suffix)] + repl
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # swimm -> swim
    return word


def _stems(words) -> set[str]:
    return {_lemma(w) for w in words}


STEMS = {
    "engage": _stems(EN_ENGAGE),
    "neg_engage": _stems(EN_NEG_ENGAGE),
    "stop": _stems(EN_STOP) | EN_STOP,
    "qualifiers": _stems(EN_QUALIFIERS),
    "meat": _stems(EN_MEAT),
    "relations": _stems(EN_RELATIONS),
}
HYPERNYM_STEMS = {_lemma(k): _stems(v) for k, v in EN_HYPERNYMS.items()}
# Verbs that only carry tense or possession ("has never smoked"): ENGAGE, never the act.
AUXILIARY = {_lemma("have")}
_CLOCK = re.compile(r"\b(\d{1,2})(?::\d\d)? ?(am|pm)\b")


def _en_text(text: str) -> str:
    text = text.lower().replace("’", "'")
    for short, full in EN_CONTRACTIONS.items():
        text = text.replace(short, full)
    return re.sub(r"\s+", " ", text).strip()


def _en_subject(raw: str) -> str:
    """Who the sentence is about: "" for the person, a relation ("sister", "friend:zoe"), or
    someone named ("@sam"). A relation people have many of, unnamed, reads "friend?"."""
    words = raw.strip().replace("’", "'").split()
    if len(words) >= 2 and words[0][:1].isupper() and words[0].lower() not in EN_NOT_NAMES:
        if words[1].lower() in EN_NAMED_VERBS:
            return "@" + words[0].lower()
    m = re.match(r"^(?:the user's|user's|my|his|her|their)\s+(\w+)(?:\s+([A-Z]\w+))?", raw, re.I)
    if m and _lemma(m[1].lower()) in STEMS["relations"]:
        relation = _lemma(m[1].lower())
        if m[1].lower() in EN_MANY:
            name = m[2] if m[2] and m[2][:1].isupper() else ""
            return f"{relation}:{name.lower()}" if name else relation + "?"
        return relation
    return ""


def _groups(text: str) -> dict[str, int]:
    found = {}
    for group, members in EXCLUSIVE.items():
        hits = {i for i, phrases in enumerate(members) for p in phrases if p in text}
        if len(hits) == 1:
            found[group] = hits.pop()
    return found


def _slots(text: str, patterns, subject: str) -> dict[str, str]:
    found = {}
    for slot, pattern in patterns:
        m = re.search(pattern, text)
        if not m:
            continue
        groups = m.groupdict()
        value = _clean_value(groups["value"])
        if not value:
            continue
        key = slot
        if groups.get("what"):
            key += ":" + _lemma(groups["what"])
        who = groups.get("who")
        if who and who not in ("user", "用户", "i", "my", "我"):
            key += "@" + _lemma(who)
        elif subject:
            key += "@" + subject
        if slot == "preference":
            key = "preference:" + "|".join(sorted([_lemma(value), _lemma(groups["what"])]))
            value = _lemma(value)
        found.setdefault(key, value)
    return found


# Places that are no employer or home town ("works from home", 在家工作): the exclusive
# group "workplace" reads those.
NOT_VALUES = {"home", "家", "家里", "公司", "办公室", "the office", "office"}


def _clean_value(value: str) -> str:
    value = _VALUE_TAIL_EN.sub("", value.strip().lower()).strip(" '-")
    value = re.sub(r"^(?:the|a|an)\s+", "", value)
    return "" if value in NOT_VALUES else NUMBERS.get(value, value)


def _count_negations_en(text: str) -> tuple[int, str]:
    count = 0
    for phrase in EN_NEG_PHRASES:
        pattern = rf"\b{re.escape(phrase)}\b"
        count += len(re.findall(pattern, text))
        text = re.sub(pattern, " ", text)
    return count, text


@functools.lru_cache(maxsize=20_000)
def read(text: str) -> Claim:
    """The claim a memory makes (cached: the nightly job reads every active fact)."""
    return _read_zh(text) if is_cjk(text) else _read_en(text)


def _read_en(raw: str) -> Claim:
    text = _en_text(raw)
    claim = Claim(raw, subject=_en_subject(raw))
    claim.hypothetical = bool(EN_HYPOTHETICAL.search(text))
    claim.past = bool(EN_PAST.search(text)) or bool(
        re.search(r"\b(?:lived|worked) (?:in|at)\b", text)
    )
    claim.groups = _groups(text)
    claim.slots = _slots(text, SLOTS_EN, claim.subject)
    for group, member in claim.groups.items():  # "night owl" is no "at night"
        claim.units.add(f"{group}={member}")
        for phrase in EXCLUSIVE[group][member]:
            text = text.replace(phrase, " ")
    for hour, half in _CLOCK.findall(text):
        claim.qualifiers.add(hour + half)
    text = _CLOCK.sub(" ", text)
    if EN_DIET.search(text):  # "is vegetarian" says "does not eat meat"
        claim.negations += 1
        claim.units |= {ENGAGE, MEAT}
        text = EN_DIET.sub(" ", text)
    negations, text = _count_negations_en(text)
    claim.negations += negations
    for word in re.findall(r"[a-z0-9][a-z0-9\-]*", text):
        _read_en_word(claim, word)
    return claim


def _read_en_word(claim: Claim, word: str) -> None:
    lemma = _lemma(word)
    if word in EN_NEGATIONS:
        claim.negations += 1
    elif lemma in STEMS["neg_engage"]:
        claim.negations += 1
        claim.units.add(ENGAGE)
    elif lemma in STEMS["engage"]:
        claim.units.add(ENGAGE)
        if lemma not in AUXILIARY:
            claim.verbs.add(lemma)
    elif lemma in STEMS["qualifiers"]:
        claim.qualifiers.add(lemma)
    elif word not in EN_STOP and lemma not in STEMS["stop"]:
        claim.units.add(MEAT if lemma in STEMS["meat"] else lemma)


def _zh_subject(text: str) -> str:
    m = re.match(r"^(?:用户|我|他|她)的(.+)", text)
    if m:
        for relation in ZH_RELATIONS:
            if m[1].startswith(relation):
                return relation + "?" if relation in ZH_MANY else relation
    return ""


def _read_zh(raw: str) -> Claim:
    text = re.sub(r"\s+", "", raw.lower())
    claim = Claim(raw, subject=_zh_subject(text))
    claim.hypothetical = bool(ZH_HYPOTHETICAL.search(text))
    claim.past = bool(ZH_PAST.search(text))
    claim.groups = _groups(text)
    claim.slots = _slots(text, SLOTS_ZH, claim.subject)
    for group, member in claim.groups.items():
        claim.units.add(f"{group}={member}")
        for phrase in EXCLUSIVE[group][member]:
            text = text.replace(phrase, "")
    text = re.sub(r"^(?:用户|我|他|她)", "", text).replace("用户", "")
    if ZH_DIET.search(text):
        claim.negations += 1
        claim.units |= {ENGAGE, MEAT}
        text = ZH_DIET.sub("", text)
    for i, word in enumerate(ZH_NOT_NEGATION):
        text = text.replace(word, f"\x00{i}\x00")  # shielded from the negation count
    for word in ZH_QUALIFIERS:
        if word in text:
            claim.qualifiers.add(word)
            text = text.replace(word, "")
    for word in ZH_NEG_ENGAGE:
        if word in text:
            claim.negations += text.count(word)
            claim.units.add(ENGAGE)
            text = text.replace(word, "")
    for word in ZH_NEG_PHRASES:
        if word in text:
            claim.negations += text.count(word)
            text = text.replace(word, "")
    for word in ZH_ENGAGE:
        if word in text:
            claim.units.add(ENGAGE)
            claim.verbs.add(word)
            text = text.replace(word, "")
    text = re.sub(r"\x00\d+\x00", "", text)
    for token in jieba.lcut(text):
        if re.fullmatch(r"[a-z0-9\-]+", token):
            claim.units.add(_lemma(token))
            continue
        for ch in token:
            if _CJK.match(ch) and ch not in ZH_FLUFF:
                claim.units.add(MEAT if ch in ZH_MEAT else ch)
    return claim


# --------------------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    rule: str  # negation, slot, exclusive
    detail: dict

    def to_dict(self) -> dict:
        return {"rule": self.rule, **self.detail}


def _covered(narrow: Claim, wide: Claim) -> bool:
    """Everything the negated claim says, the other says too (a broader word covers a
    narrower one: "any instrument" covers "the guitar", 宠物 covers 狗)."""
    missing = narrow.units - wide.units
    for unit in list(missing):
        kinds = HYPERNYM_STEMS.get(unit)
        if kinds and kinds & wide.units:
            missing.discard(unit)
        elif unit in ZH_HYPERNYMS_CHARS and ZH_HYPERNYMS_CHARS[unit] & wide.units:
            missing.discard(unit)
    return not missing


# 乐器 -> its characters stand for the word; each maps to the characters it covers.
ZH_HYPERNYMS_CHARS: dict[str, set[str]] = {}
for _word, _covers in ZH_HYPERNYMS.items():
    for _ch in _word:
        ZH_HYPERNYMS_CHARS.setdefault(_ch, set()).update(_covers)


def _negation(a: Claim, b: Claim) -> Verdict | None:
    if a.negated == b.negated:
        return None
    neg, pos = (a, b) if a.negated else (b, a)
    shared = (neg.units & pos.units) - {ENGAGE}
    # Without a shared object, "liking" and "drinking" are not the same act: the verbs must be.
    if not shared and not (neg.verbs and neg.verbs <= pos.verbs):
        return None
    if not _covered(neg, pos) or not neg.qualifiers <= pos.qualifiers:
        return None
    return Verdict("negation", {"shared": sorted(shared)})


def _slot(a: Claim, b: Claim) -> Verdict | None:
    for key in a.slots.keys() & b.slots.keys():
        x, y = a.slots[key], b.slots[key]
        if _agree(x, y):
            continue
        if a.negated or b.negated:
            continue  # "does not live in Paris" is no value
        return Verdict("slot", {"slot": key.split(":")[0].split("@")[0], "values": [x, y]})
    return None


def _agree(x: str, y: str) -> bool:
    """The same value, or one inside the other ("berlin" / "berlin, germany", 杭州 / 杭州西湖区)."""
    if x == y:
        return True
    if is_cjk(x) or is_cjk(y):
        return x in y or y in x
    xs, ys = set(re.findall(r"\w+", x)), set(re.findall(r"\w+", y))
    return bool(xs) and bool(ys) and (xs <= ys or ys <= xs)


def _exclusive(a: Claim, b: Claim) -> Verdict | None:
    if a.negated or b.negated or a.qualifiers != b.qualifiers:
        return None
    for group in a.groups.keys() & b.groups.keys():
        if a.groups[group] != b.groups[group]:
            return Verdict("exclusive", {"group": group})
    return None


RULES = (_slot, _exclusive, _negation)


def verdict(text_a: str, text_b: str) -> Verdict | None:
    """Why these two memories cannot both be true now, or None (they may be)."""
    a, b = read(text_a), read(text_b)
    if not (a.current and b.current) or a.subject != b.subject:
        return None
    if a.subject.endswith("?"):
        return None  # "a friend" here and "a friend" there may be two people
    if is_cjk(text_a) != is_cjk(text_b):
        return None  # the rules read each language on its own terms
    for rule in RULES:
        if found := rule(a, b):
            return found
    return None


def keys(text: str, *, cached: bool = True) -> set[str]:
    """What a pair must share to be worth checking: content units, slots, groups. A caller
    reading each of many texts once passes cached=False: the cache would only churn."""
    claim = read(text) if cached else read.__wrapped__(text)
    found = {f"unit:{u}" for u in claim.units - {ENGAGE}}
    found |= {f"slot:{k}" for k in claim.slots}
    found |= {f"group:{g}" for g in claim.groups}
    return found


def similarity(text_a: str, text_b: str) -> float:
    """How much of the shorter text's content the other shares (the overlap coefficient of
    the content units): the LLM's second look goes to pairs that say nearly the same."""
    a, b = read(text_a).units, read(text_b).units
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0
