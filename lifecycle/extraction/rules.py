"""The offline rules extractor: explicit first-person statements in Chinese and English.

Pure functions (no Django), so the nightly job, the tests and the benchmark call it cheaply.
It catches what a person says outright about themselves or how the assistant must behave
("我叫李雷", "I prefer pytest", "以后回答用中文", "never force-push") and, through
rules_life, what people say about their lives: moves with their dates, family and
people, work and school, diet and allergies, habits, plans; everything subtle is the LLM
extractor's job. Confidence says how explicit the statement was: "记住 / remember" and names
are near-certain; a hedged statement ("maybe", "I think", "可能", "好像", "大概" ...) keeps
its hedge in the text and lands between the pending and write thresholds, so a person
reviews it and it is never written directly.

Subjects and predicates are stable keys so a later statement supersedes an earlier one in
the write path: the subject is the person (their display name, else "user"); predicates are
language-neutral ("name", "location", "preference: 拉面"), so "我住在北京" and a later
"I live in Hangzhou" are one history. Rules and free "remember" notes carry no subject and
predicate: the rules extractor cannot know which rule a new one replaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime

from lifecycle.extraction import ruledates, rules_attrs, rules_attrs_en, rules_life
from lifecycle.extraction.rulebase import DAY, PERMANENT, RuleCandidate, third, unfilled, zh_about  # noqa: F401
from lifecycle.extraction.rulebase import Ctx as _Ctx
from lifecycle.extraction.rulebase import make as _c

# --------------------------------------------------------------------------------------
# Clauses
# --------------------------------------------------------------------------------------

_ZH_SPLIT = re.compile(r"([。！？!?；;\n，,]+)")
# "Mr. Chen" is one name, not the end of a sentence.
_EN_SPLIT = re.compile(
    r"((?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)[.!?;\n]+(?:\s+|$)|,\s+but\s+|\s+but\s+)",
    re.I,
)
_CJK = re.compile(r"[\u4e00-\u9fff]")
_ZH_QUESTION = re.compile(
    r"(吗|么|呢|要不要|是不是|能不能|可不可以|会不会|有没有|什么|怎么|为什么|哪)"
)
_ZH_CONDITIONAL = re.compile(r"^(如果|假如|要是|假设|万一|即使|就算|如果说)")
# "我妈说明天会下雨", "我姐说她明年要去留学": someone else's words, not the person's facts.
_ZH_REPORTED = re.compile(
    rf"^(?:我(?:的|家)?)?(?:{rules_life.ZH_WHO}|[姐哥弟妹]|他们?|她们?|别人|大家|人家|朋友们)"
    r"(?:也|还|都|就|又|总)?(?:跟我|和我|对我)?(?:说(?!话)|讲(?!话)|告诉我|听说|觉得|认为)"
)
_ZH_HEARSAY = re.compile(r"^(?:我)?(?:听说|据说|听人说|听别人说|传说|网上说|新闻上说)")
_EN_QUESTION = re.compile(
    r"^(do|does|did|can|could|would|will|should|is|are|was|were|what|why|how|when|where|who)\b",
    re.I,
)
_EN_CONDITIONAL = re.compile(r"^(if|suppose|unless|when|whenever|even if|imagine)\b", re.I)
_ZH_HEDGE = re.compile(
    r"(我觉得|我猜|我估计|估计|可能|也许|好像|大概|或许|似乎|应该是|应该|说不定|貌似)"
)
_EN_HEDGE = re.compile(
    r"\b(maybe|probably|perhaps|possibly|kind of|sort of|i think|i guess|i suppose|i believe|"
    r"might|i'm not sure|not sure)\b,?",
    re.I,
)
HEDGE_PENALTY = 0.15
# A hedged candidate goes to review: between the default pending (0.60) and write (0.85)
# thresholds whatever pattern found it (lifecycle.extraction.extract clamps to the configured ones).
HEDGED_MIN, HEDGED_MAX = 0.65, 0.75


@dataclass
class Clause:
    text: str
    question: bool
    lang: str


def is_chinese(text: str) -> bool:
    cjk = len(_CJK.findall(text))
    if cjk and _CJK.match(text.strip()) and not re.search(r"\b[a-z]{2,}\s+[a-z]{2,}\b", text):
        return True  # "我的MBTI是INFJ", "我的手机是iPhone 15 Pro": Chinese with names in Latin
    return cjk > 0 and cjk * 3 >= len(re.sub(r"\s", "", text))


_PAIRS = {"“": "”", "‘": "’", "「": "」", "『": "』", "(": ")", "（": "）", '"': '"', "'": "'"}


def _unwrapped(body: str) -> str:
    """The clause without quotes or brackets around it; a quoted name inside keeps both of
    its quotes ('我参加的读书会叫"周末共读"' stays whole, '"我叫李雷"' loses them)."""
    body = body.strip().strip("*-_ ")
    while len(body) > 1:
        first, last = body[0], body[-1]
        closer = _PAIRS.get(first)
        openers = [o for o, c in _PAIRS.items() if c == last]
        if closer and last == closer and (first != last or body.count(first) == 2):
            body = body[1:-1]  # wrapped whole
        elif closer and closer not in body[1:]:
            body = body[1:]  # an opening mark left over from the split
        elif openers and not any(o in body[:-1] for o in openers):
            body = body[:-1]  # a closing mark left over
        elif openers and first != last and last in "\"'" and body.count(last) % 2:
            body = body[:-1]
        else:
            break
        body = body.strip().strip("*-_ ")
    return body


def clauses(text: str) -> list[Clause]:
    """Split into clauses, remembering which ended with a question mark."""
    lang = "zh" if is_chinese(text) else "en"
    parts = (_ZH_SPLIT if lang == "zh" else _EN_SPLIT).split(text or "")
    out = []
    for body, sep in zip(parts[::2], [*parts[1::2], ""], strict=True):
        body = _unwrapped(unfilled(_unwrapped(body)))
        if body:
            out.append(Clause(body, "?" in sep or "？" in sep, "zh" if is_chinese(body) else "en"))
    return out


def skipped(clause: Clause) -> bool:
    """Questions and hypotheticals state nothing about the person (the learned extractor's
    filter too)."""
    text = clause.text
    if clause.question:
        return True
    if clause.lang == "zh":
        return bool(_ZH_CONDITIONAL.match(text) or re.search(r"(吗|呢)$", text)
                    or _ZH_REPORTED.match(text) or _ZH_HEARSAY.match(text))  # fmt: skip
    return bool(_EN_QUESTION.match(text) or _EN_CONDITIONAL.match(text))


# --------------------------------------------------------------------------------------
# Objects: what follows "我喜欢 / I like"
# --------------------------------------------------------------------------------------

_ZH_TAIL = re.compile(r"(?:就行|就好|就可以|就成|[了啊呀吧哦哈啦嘛的呐])+$")
_ZH_DEICTIC = re.compile(r"^(这|那|它|你|他|她|谁|什么|啥|哪|怎么|吗)")
_EN_DEICTIC = re.compile(
    r"^(it|this|that|these|those|you|your|him|her|them|what|which|how|so|too|to think|when)\b",
    re.I,
)
_EN_TAIL = re.compile(
    r"\s+(too|as well|a lot|very much|so much|now|these days|any\s*more|after all)$", re.I
)
MAX_OBJECT = 40


def _zh_object(raw: str) -> str:
    value = _ZH_TAIL.sub("", raw.strip()).strip("“”\"'「」 ")
    if not value or len(value) > MAX_OBJECT or _ZH_DEICTIC.match(value):
        return ""
    return value


def _en_object(raw: str) -> str:
    value = re.split(r"\s+(?:and then|because|since|so that|when)\s+", raw.strip(), maxsplit=1)[0]
    value = _EN_TAIL.sub("", value).strip(" \"'“”")
    if not value or len(value) > MAX_OBJECT or _EN_DEICTIC.match(value):
        return ""
    return value


def _key(value: str) -> str:
    return rules_life.zh_key(value) if _CJK.search(value) else " ".join(value.lower().split())


# --------------------------------------------------------------------------------------
# Patterns. Each returns candidates for one clause.
# --------------------------------------------------------------------------------------

_ZH_NAME = re.compile(
    r"(?:我叫|我的名字(?:是|叫))(?P<x>[\u4e00-\u9fffA-Za-z·][\u4e00-\u9fffA-Za-z· ]{0,19})"
)
_ZH_ADDRESS = re.compile(
    r"(?:^|请|你可以|以后|都|大家|朋友们|别人)叫我"
    r"(?P<x>[\u4e00-\u9fffA-Za-z·][\u4e00-\u9fffA-Za-z· ]{0,9})"
)
_ZH_PLACE = re.compile(
    r"我(?:现在)?(?P<verb>住在|来自|生活在|在)(?P<x>[^，。]{1,20}?)(?P<tail>工作|上班|生活)?$"
)
_ZH_IAM = re.compile(r"^我(?:是|是一名|是一个|是个|是一位)(?P<x>.{1,20})$")
_ZH_IAM_STOP = re.compile(
    r"^(说|不是|在|想|要|觉得|真|有点|不|很|太|没|因为|为了|这么|那么|怎么|谁|什么|否|来|去|对|"
    r"从|把|被|第|刚|已经|还|也|都|就|会|能|的|问|指|这样|那样|认真|开玩笑)"
)
_ZH_DISLIKE = re.compile(
    r"(?<![比和跟像对给让被])我(?P<h>可能|也许|好像|大概|或许)?(?P<adv>(?:其实|真的|特别|非常|很|最|比较|有点|现在|已经|也){0,2})(?P<verb>不太喜欢|不喜欢|讨厌|不爱|受不了|反感|烦)(?P<x>.+)$"
)
_ZH_LIKE = re.compile(
    # "我老婆比我更喜欢猫": the 我 after 比 / 和 is not the one who likes
    r"(?<![比和跟像对给让被])我(?P<h>可能|也许|好像|大概|或许)?(?P<adv>(?:真的|特别|非常|很|最|更|比较|一直|还是|其实|现在|超级|超|巨|挺|蛮|也){0,2})(?<!不)(?P<verb>喜欢|爱用|偏好|偏爱|习惯用|爱)(?:的是)?(?P<x>.+)$"
)
_ZH_MY = re.compile(r"我的(?P<k>[\u4e00-\u9fffA-Za-z ]{1,10}?)(?P<v>是|叫|在)(?P<x>.{1,40})$")
_ZH_MY_STOP = re.compile(r"^(意思|问题|想法|看法|建议|理解|猜测|错|天|妈|乖)")
_ZH_REMEMBER = re.compile(
    r"^(?:请|你要|你)?(?:记住|记得|别忘了|不要忘了|不要忘记)[：:，, ]*(?P<x>.*)$"
)
_ZH_RULE_FROM_NOW = re.compile(
    r"^(?:请|你)?(?:以后|今后|从现在起|从现在开始|从今以后|往后)[，, ]*(?P<x>.+)$"
)
_ZH_FORBID = re.compile(r"^(?:请|你)?(?:禁止|严禁|不准|不许)(?P<x>.+)$")
_ZH_NEVER_AGAIN = re.compile(
    r"^(?:请|你)?(?:千万)?(?:别再|不要再|再也不要|永远不要|永远别|绝对不要|任何时候都不要)(?P<x>.+)$"
)
# "别担心", "不要放弃": comfort said to someone, not a rule for the assistant.
_ZH_DONT = re.compile(
    r"^(?:请|你)?(?:千万|也)?(?:不要|别|不用)(?!担心|放弃|难过|伤心|害怕|灰心|紧张|客气|着急|怕)"
    r"(?P<x>.+)$"
)
_ZH_ALWAYS = re.compile(r"^(?:请|你)?(?:总是|永远|每次都|一律|务必|一定要)(?P<x>.+)$")

_NAME_WORDS = r"[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){0,3}"  # case-sensitive on purpose
_EN_NAME = re.compile(rf"\b(?i:my name is|my name's|i am called|i'm called)\s+(?P<x>{_NAME_WORDS})")
_EN_ADDRESS = re.compile(
    rf"(?:^|\b(?i:please)\s+|\b(?i:everyone|everybody|people|friends|they)\s+)"
    rf"(?i:calls? me)\s+(?P<x>{_NAME_WORDS})"
)
_EN_DISLIKE = re.compile(
    r"\bi\s+(?P<adv>really\s+|truly\s+|absolutely\s+)?"
    r"(?P<verb>don't like|do not like|dislike|hate|can't stand|cannot stand|detest)\s+(?P<x>.+)$",
    re.I,
)
_EN_LIKE = re.compile(
    r"\bi\s+(?P<adv>really\s+|definitely\s+|always\s+|much\s+|strongly\s+)?(?P<verb>prefer|like|love|enjoy)\s+(?P<x>.+)$",
    re.I,
)
_EN_HABIT = re.compile(
    r"\bi\s+(?P<verb>always|usually|never)\s+(?P<x>(?:use|write|work|code|run|deploy|test|drink|eat)\b.+)$",
    re.I,
)
_EN_MY = re.compile(r"\bmy\s+(?P<k>[a-z][\w -]{0,30}?)\s+(?:is|are)\s+(?P<x>.{1,40})$", re.I)
# "I like" inside a subject ("the place I like is called …") and "my X" inside one ("the
# park near my house is …") say nothing of what the person likes or of X.
_EN_RELATIVE_VERB = re.compile(r"^(?:is|are|was|were|has|had|will|closes|opens)\b", re.I)
_EN_OTHER_SUBJECT = re.compile(
    r"\b(?:the|a|an|this|that)\s+[\w\s-]{1,30}?\b(?:near|by|next\s+to|behind|across\s+from|in|"
    r"at|of|from|for|with|on|around)\s+$",
    re.I,
)
_EN_OPINION = r"\b(?:thinks?|says?|said|believes?|feels?|told me|reckons?)\b"
_EN_MY_STOP = re.compile(
    r"^(point|question|problem|guess|bad|mistake|pleasure|fault|turn|concern|issue|idea|thought|plan|goal|understanding)$",
    re.I,
)
_EN_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|don't forget|do not forget|note|keep in mind)\b"
    r"(?:\s+that)?[:,]?\s*(?P<x>.*)$",
    re.I,
)
_EN_FROM_NOW = re.compile(
    r"^(?:please\s+)?(?:from now on|going forward|in the future|from here on)[:,]?\s*(?P<x>.+)$",
    re.I,
)
_EN_NEVER = re.compile(
    r"^(?:please\s+)?(?:you\s+(?:must|should)\s+)?"
    r"(?:never|don't ever|do not ever|never ever)\s+(?P<x>.+)$",
    re.I,
)
_EN_ALWAYS = re.compile(r"^(?:please\s+)?(?:you\s+(?:must|should)\s+)?always\s+(?P<x>.+)$", re.I)
_EN_DONT = re.compile(r"^(?:please\s+)?(?:don't|do not)\s+(?P<x>.+)$", re.I)
# Comfort and advice said to someone, not a rule for the assistant: "Don't give up on your
# dreams", "Always here to help", "Remember that staying positive is very important".
_EN_COMFORT = re.compile(
    r"^(?:give up|worry|let (?:anything|anyone|it|that|them|fear|others)|fear|be (?:afraid|"
    r"scared|sad|so hard|too hard|discouraged|shy)|stress|lose hope|hesitate|feel bad|beat "
    r"yourself|forget to (?:smile|enjoy|breathe|take care))\b|\byourself\b|\byour (?:dreams?|"
    r"goals?|passion|heart)\b|\byou down\b|^feel like\b|\byou(?:'ve)? got this\b",
    re.I,
)
_EN_NOT_A_VERB = re.compile(
    r"^(?:here|there|fun|good|great|nice|happy|glad|a pleasure|so|such|the best)\b", re.I
)
_EN_ADVICE = re.compile(
    r"\b(?:is|are|'s)\s+(?:so\s+|very\s+|really\s+)?(?:important|key|okay|ok|normal|worth it)\b"
    r"|^to (?:celebrate|cherish|breathe|smile|be kind|stay positive|believe|take care)\b"
    r"|\byourself\b|\byou(?:'ve)? got this\b|\btake it easy\b|\bfind joy\b|\bbelieve in\b",
    re.I,
)
_EN_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|we|us|our)\b", re.I)
_EN_MANNER = re.compile(
    r"^(?:please\s+)?(?:keep|make|write)\s+(?:your|the|all)\s+(?:answers?|replies|responses|"
    r"messages|explanations|summaries)\b.+$",
    re.I,
)
_ZH_MANNER = re.compile(r"^(?:请)?(?:回答|回复|解释|说话|总结)(?:尽量|请|都|要|一律)(?P<x>.+)$")
_EN_NOT_FAN = re.compile(
    r"\bi(?:'m| am)\s+not\s+(?:a\s+)?(?:big\s+|huge\s+|great\s+)?fan\s+of\s+(?P<x>.+)$", re.I
)
_EN_STATE = re.compile(
    r"^(broken|late|down|dead|slow|fine|ok|okay|ready|done|wrong|right|busy|here|there|on|off|"
    r"empty|full|missing|lost|gone|back|open|closed|over|out|away|finished)(?:\s+again)?$",
    re.I,
)
# What the person thinks of it, not what it is: "my boss is really nice", "my customers are
# key", "my hard work is paying off", "my fur babies are more important to me than anything".
_EN_VIEW = re.compile(
    r"^(?:(?:really|very|so|super|pretty|quite|kind\s+of|a\s+bit|too|extremely|such\s+an?|"
    r"both|the\s+most|more|most)\s+)*"
    r"(?:key|important|paying off|scary|rewarding|amazing|awesome|great|everything|wonderful|"
    r"incredible|exciting|fun|hard|tough|worth it|a blessing|a lot|learning|nice|cool|lovely|"
    r"sweet|mean|annoying|weird|in\s+trouble|at\s+(?:school|home|work)|asleep|awake|sick|ill|"
    r"home|out|away|a\s+(?:mess|disaster|nightmare|pain))\b",
    re.I,
)
_EN_FAN = re.compile(
    r"\bi(?:'m| am)\s+(?:a\s+)?(?:big\s+|huge\s+|great\s+)?fan\s+of\s+(?P<x>.+)$|"
    r"\bi(?:'m| am|'ve always been| have always been)\s+(?:really\s+|so\s+|totally\s+)?"
    r"(?:into|obsessed with|passionate about|drawn to|crazy about)\s+(?P<y>.+)$|"
    r"^(?P<z>[\w' -]{2,40}?)\s+(?:is|are)\s+(?:one of\s+)?my\s+(?:absolute\s+)?favou?rites?\b",
    re.I,
)
_EN_FAVOURITE = re.compile(r"\bmy\s+favou?rite\s+(?P<k>[a-z][\w ]{0,20}?)\s+is\s+(?P<x>.+)$", re.I)

_ZH_PLACE_KEYS = {"住在": "location", "生活在": "location", "来自": "hometown", "在": "workplace"}
_ZH_IDENTITY_KEYS = {
    "名字": "name", "生日": "birthday", "职业": "occupation", "工作": "occupation",
    "年龄": "age", "邮箱": "email", "电话": "phone", "家乡": "hometown",
}  # fmt: skip
_EN_SAID = {"don't like": "does not like", "do not like": "does not like", "hate": "hates",
            "dislike": "dislikes", "detest": "detests"}  # fmt: skip
_EN_IDENTITY_KEYS = {"name": "name", "birthday": "birthday", "job": "occupation",
                     "occupation": "occupation", "age": "age", "email": "email",
                     "hometown": "hometown"}  # fmt: skip


_ZH_RULE_START = re.compile(
    r"^(?:请|你)?(?:禁止|严禁|不准|不许|别再|不要再|再也不要|永远|绝对不要|以后|今后|从现在起|"
    r"从现在开始|从今以后|往后|总是|每次都|一律|务必|一定要)"
)
# "我改主意了，还是更喜欢用 Python": the person is still the one speaking after the comma.
_ZH_MEAL = re.compile(
    r"^(?:早饭|早餐|午饭|午餐|晚饭|晚餐|夜宵)(?:一般|通常|从来|都|基本)?(?:不|很少|只)(?:吃|喝)"
)
_ZH_SAME_SPEAKER = re.compile(r"^(?:还是|其实|反正)(?=.*(?:喜欢|爱|讨厌|不吃|不喝))")


# "我从去年开始不吃夜宵了", "我最近不喝奶茶了": when a habit or a diet began is said before
# it; the statement is read without it (same key, so it supersedes) and the time is kept.
_ZH_SINCE = re.compile(
    r"^我(?P<since>从(?P<t>[^，。]{1,8}?)(?:开始|起)|(?P<t2>去年|今年|上个月|上周|前年|上半年|"
    r"年初|月初)(?:开始|起)|最近|近来|这阵子|这段时间|现在)[，,]?"
    r"(?P<rest>(?:就|已经|都)?(?:不|没再|再也不|每|天天|坚持|戒|改).+)$"
)


def _zh_since(clause: str, who: _Ctx, now: datetime, whole: str) -> list[RuleCandidate]:
    m = _ZH_SINCE.match(clause)
    if m is None:
        return []
    found = _zh("我" + m["rest"], who, now, whole)
    when = m["t"] or m["t2"]
    span = ruledates.past(when, now) if when else None
    note = f"（{m['since']}：{ruledates.label(span)}）" if span else f"（{m['since']}）"
    return [replace(c, content=c.content + note) for c in found]


def _zh(clause: str, who: _Ctx, now: datetime, whole: str = "") -> list[RuleCandidate]:
    if found := _zh_since(clause, who, now, whole):
        return found
    if _ZH_RULE_START.match(clause) and (rules := _zh_rules(clause, _opens(clause, whole))):
        return rules  # how the assistant must behave, even with a time in it
    if _ZH_SAME_SPEAKER.match(clause) or _ZH_MEAL.match(clause) and whole.startswith("我"):
        clause = "我" + clause  # "我最近在减肥，晚饭不吃主食": the person's meal
    found: list[RuleCandidate] = _zh_names(clause, who)
    # People, items, places and events first: their attributes ("我上司的生日是三月十五日")
    # would otherwise read as plans or untyped "我的 X 是 Y" facts.
    found += rules_attrs.chinese(clause, who, now) or rules_life.chinese(clause, who, now, whole)
    return found or _zh_legacy(clause, who) or _zh_rules(clause, _opens(clause, whole))


def _opens(clause: str, whole: str) -> bool:
    """Does the clause open the turn (after at most an interjection: "好的，总是先…")? An
    instruction to the assistant does; "…，总是要炫耀自己多好" goes on about someone."""
    at = whole.find(clause)
    return at < 0 or len(re.sub(r"[\W_]", "", whole[:at])) <= 3


def _zh_names(clause: str, who: _Ctx) -> list[RuleCandidate]:
    found: list[RuleCandidate] = []
    s = who.subject
    if m := _ZH_NAME.search(clause):
        if x := _zh_object(m["x"]):
            found.append(_c("identity", s, "name", f"{who.zh}的名字是{x}", 0.95, 0.9, "zh:name"))
    if m := _ZH_ADDRESS.search(clause):
        if x := _zh_object(m["x"]):
            found.append(
                _c(
                    "identity",
                    s,
                    "address as",
                    f"{who.zh}希望被称呼为“{x}”",
                    0.92,
                    0.9,
                    "zh:address",
                )
            )
    return found


def _zh_legacy(clause: str, who: _Ctx) -> list[RuleCandidate]:
    """The first patterns: a place, "我是 X", likes and dislikes, "我的 X 是 Y"."""
    found: list[RuleCandidate] = []
    s = who.subject
    if m := _ZH_PLACE.search(clause):
        if (x := _zh_object(m["x"])) and (m["verb"] != "在" or m["tail"]):
            key = _ZH_PLACE_KEYS[m["verb"]]
            found.append(
                _c("fact", s, key, f"{who.zh}{m['verb']}{x}{m['tail'] or ''}", 0.9, 0.7, "zh:place")
            )
    if (m := _ZH_IAM.search(clause)) and not _ZH_IAM_STOP.match(m["x"]) and not found:
        if x := _zh_object(m["x"]):
            found.append(_c("identity", s, "identity", f"{who.zh}是{x}", 0.8, 0.8, "zh:i-am"))
    if m := _ZH_DISLIKE.search(clause):
        if x := _zh_object(m["x"]):
            conf = 0.88 if m["verb"] in ("讨厌", "受不了", "反感") else 0.85
            found.append(
                _c(
                    "preference",
                    s,
                    f"preference: {_key(x)}",
                    f"{who.zh}{m['h'] or ''}{m['adv']}{m['verb']}{x}",
                    conf,
                    0.7,
                    "zh:dislike",
                )
            )
    elif m := _ZH_LIKE.search(clause):
        if x := _zh_object(m["x"]):
            conf = (
                0.9
                if any(a in m["adv"] for a in ("最", "更", "一直", "还是"))
                or m["verb"] in ("偏好", "偏爱")
                else 0.85
            )
            conf -= 0.1 if "比较" in m["adv"] else 0
            found.append(
                _c(
                    "preference",
                    s,
                    f"preference: {_key(x)}",
                    f"{who.zh}{m['h'] or ''}{m['adv']}{m['verb']}{x}",
                    conf,
                    0.7,
                    "zh:like",
                )
            )
    # "我的作业弄丢了然后还说是…", "我的家人都在等我": no "我的 X 是 Y" in it.
    m = _ZH_MY.search(clause)
    if m and re.search(r"[了把被说都也还就]", m["k"]):
        m = None
    if m and not _ZH_MY_STOP.match(m["k"]) and not found:
        if re.search(r"[放停挂摆丢落忘掉留从]$", m["k"]):  # "我的自行车放在楼下": where it is now
            return found
        if re.search(r"[了说都也就还把被正]|然后", m["k"]):
            return found  # "我的作业弄丢了然后还说是…", "我的家人都在等我": no attribute
        if (x := _zh_object(m["x"])) and x != "我":
            x = zh_about(x, who)  # "我的上司是我大学师兄": the person, not "我"
            k = m["k"].strip()
            key = _ZH_IDENTITY_KEYS.get(k, k)
            kind = "identity" if k in _ZH_IDENTITY_KEYS else "fact"
            # The verb as said: "在X工作" is where they work, not what they are ("是X工作").
            said = f"{who.zh}的{k}{m['v']}{x}"
            found.append(_c(kind, s, key, said, 0.9, 0.7, "zh:my-x-is"))
    return found


def _zh_rules(clause: str, opening: bool = True) -> list[RuleCandidate]:
    if _ZH_MANNER.match(clause):
        return [_c("rule", "", "", clause, 0.8, 0.7, "zh:manner")]
    if m := _ZH_FORBID.match(clause):
        if _zh_object(m["x"]):
            return [_c("rule", "", "", clause, 0.92, 0.8, "zh:forbid")]
    if m := _ZH_NEVER_AGAIN.match(clause):
        if _zh_object(m["x"]):
            return [_c("rule", "", "", clause, 0.88, 0.8, "zh:never-again")]
    if m := _ZH_RULE_FROM_NOW.match(clause):
        if _zh_object(m["x"]):
            return [_c("rule", "", "", clause, 0.88, 0.8, "zh:from-now-on")]
    if (m := _ZH_ALWAYS.match(clause)) and (opening or clause.startswith(("请", "你"))):
        if _zh_object(m["x"]) and not re.match(r"(?:会)?(?:觉得|感觉|想)", m["x"]):
            return [_c("rule", "", "", clause, 0.85, 0.75, "zh:always")]
    if m := _ZH_DONT.match(clause):
        if _zh_object(m["x"]):
            # A bare "不要 X" is usually about the task at hand (seed 001: task rules, 24h).
            return [_c("rule", "", "", clause, 0.7, 0.6, "zh:dont", duration=DAY)]
    return []


_EN_RULE_START = re.compile(
    r"^(?:please\s+)?(?:you\s+(?:must|should)\s+)?(?:always|never|don't ever|do not ever|"
    r"from now on|going forward|in the future|from here on)\b",
    re.I,
)


def _en(clause: str, who: _Ctx, now: datetime, whole: str = "") -> list[RuleCandidate]:
    if _EN_RULE_START.match(clause) and (rules := _en_rules(clause)):
        return rules
    found = _en_names(clause, who)
    found += rules_attrs_en.english(clause, who, now) or rules_life.english(clause, who, now)
    return found or _en_legacy(clause, who) or _en_rules(clause)


def _en_names(clause: str, who: _Ctx) -> list[RuleCandidate]:
    found: list[RuleCandidate] = []
    s = who.subject
    if m := _EN_NAME.search(clause):
        found.append(
            _c(
                "identity",
                s,
                "name",
                f"{who.en_poss} name is {m['x'].strip()}",
                0.95,
                0.9,
                "en:name",
            )
        )
    if m := _EN_ADDRESS.search(clause):
        found.append(
            _c(
                "identity",
                s,
                "address as",
                f"{who.en} wants to be called “{m['x'].strip()}”",
                0.92,
                0.9,
                "en:address",
            )
        )
    return found


def _en_legacy(clause: str, who: _Ctx) -> list[RuleCandidate]:
    """The first patterns: likes and dislikes, habits, "my X is Y"."""
    found: list[RuleCandidate] = []
    s = who.subject
    if m := _EN_NOT_FAN.search(clause):
        if x := _en_object(m["x"]):
            content = f"{who.en} is not a fan of {x}"
            return [_c("preference", s, f"preference: {_key(x)}", content, 0.85, 0.7, "en:dislike")]
    if m := _EN_FAN.search(clause):
        if x := _en_object(m["x"] or m["y"] or m["z"]):
            content = f"{who.en} is a fan of {x}" if m["x"] else f"{who.en} likes {x}"
            return [_c("preference", s, f"preference: {_key(x)}", content, 0.88, 0.7, "en:fan")]
    if m := _EN_FAVOURITE.search(clause):
        if x := _en_object(m["x"]):
            k = m["k"].strip().lower()
            content = f"{who.en_poss} favourite {k} is {x}"
            return [_c("preference", s, f"favourite {k}", content, 0.9, 0.7, "en:favourite")]
    if m := _EN_DISLIKE.search(clause):
        if x := _en_object(m["x"]):
            verb = m["verb"].lower()
            conf = 0.88 if verb in ("hate", "can't stand", "cannot stand", "detest") else 0.85
            said = _EN_SAID.get(verb, "cannot stand")
            found.append(
                _c(
                    "preference",
                    s,
                    f"preference: {_key(x)}",
                    f"{who.en} {said} {x}",
                    conf,
                    0.7,
                    "en:dislike",
                )
            )
    elif (
        (m := _EN_LIKE.search(clause))
        and not re.search(r"\bi\s+(?:would|'d)\s+like\b", clause, re.I)
        and not _EN_RELATIVE_VERB.match(m["x"])  # "the place I like is called …": its name
    ):
        x = (
            _en_object(re.sub(r"^to\s+", "", m["x"]))
            if m["verb"].lower() == "prefer"
            else _en_object(m["x"])
        )
        if x:
            verb = m["verb"].lower()
            conf = 0.9 if verb == "prefer" or (m["adv"] or "").strip() else 0.85
            said = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys"}[verb]
            found.append(
                _c(
                    "preference",
                    s,
                    f"preference: {_key(x)}",
                    f"{who.en} {said} {x}",
                    conf,
                    0.7,
                    "en:like",
                )
            )
    if (m := _EN_HABIT.search(clause)) and not found:
        x = _en_object(m["x"])
        if x:
            found.append(
                _c(
                    "preference",
                    s,
                    f"habit: {_key(x)}",
                    f"{who.en_poss} habit: {m['verb'].lower()} {x}",
                    0.8,
                    0.6,
                    "en:habit",
                )
            )
    # "my lawyer thinks the contract is unfair": what someone thinks, not a "my X is Y".
    opinion = _EN_MY.search(clause) and re.search(_EN_OPINION, clause, re.I)
    if (m := _EN_MY.search(clause)) and not _EN_MY_STOP.match(m["k"].strip()) and not found:
        m = None if opinion else m
    if m and _EN_OTHER_SUBJECT.search(clause[: m.start()]):
        m = None  # "the park near my house is full of people": the park is, not the house
    if m and not found:
        x = _en_object(m["x"])
        if x and not (_EN_STATE.match(x) or _EN_VIEW.match(x)):  # "my laptop is broken"
            k = m["k"].strip().lower()
            kind = "identity" if k in _EN_IDENTITY_KEYS else "fact"
            found.append(
                _c(
                    kind,
                    s,
                    _EN_IDENTITY_KEYS.get(k, k),
                    f"{who.en_poss} {k} is {x}",
                    0.9,
                    0.7,
                    "en:my-x-is",
                )
            )
    return found


def _en_rules(clause: str) -> list[RuleCandidate]:
    if _EN_MANNER.match(clause):
        return [_c("rule", "", "", clause, 0.8, 0.7, "en:manner")]
    if m := _EN_FROM_NOW.match(clause):
        if _en_object(m["x"]) or len(m["x"]) > 3:
            return [_c("rule", "", "", clause, 0.9, 0.8, "en:from-now-on")]
    if m := _EN_NEVER.match(clause):
        if len(m["x"].split()) >= 1:
            return [_c("rule", "", "", clause, 0.88, 0.8, "en:never")]
    if m := _EN_ALWAYS.match(clause):
        if len(m["x"].split()) >= 1 and not _EN_NOT_A_VERB.match(m["x"]):
            return [_c("rule", "", "", clause, 0.88, 0.8, "en:always")]
    if m := _EN_DONT.match(clause):
        deictic = _EN_DEICTIC.match(m["x"]) or _EN_COMFORT.search(m["x"])
        if len(m["x"].split()) >= 1 and not deictic:
            return [_c("rule", "", "", clause, 0.7, 0.6, "en:dont", duration=DAY)]
    return []


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------

REMEMBER_FLOOR = 0.92  # "记住 / remember" is the most explicit a person can be


def _remember(clause: Clause) -> str | None:
    """The rest of a "记住 X / remember X" clause ('' for a bare "remember"), else None."""
    m = (_ZH_REMEMBER if clause.lang == "zh" else _EN_REMEMBER).match(clause.text)
    if m is None:
        return None
    rest = m["x"].strip()
    if clause.lang == "en" and _EN_ADVICE.search(rest) and not _EN_FIRST_PERSON.search(rest):
        return None  # "Remember that staying positive is very important": advice, not a fact
    return rest


def _unhedged(clause: Clause) -> tuple[str, str]:
    """The clause without its hedge words, and the first hedge ('' when it has none)."""
    hedge = _ZH_HEDGE if clause.lang == "zh" else _EN_HEDGE
    found = hedge.search(clause.text)
    if found is None:
        return clause.text, ""
    text = hedge.sub(" " if clause.lang == "en" else "", clause.text)
    return re.sub(r"\s+", " ", text).strip(" ,，、"), found[1].strip(", ")


def _hedged(c: RuleCandidate, word: str, lang: str) -> RuleCandidate:
    """Less sure, and saying so: the person reviews it (HEDGED_MIN..HEDGED_MAX)."""
    confidence = min(HEDGED_MAX, max(HEDGED_MIN, c.confidence - HEDGE_PENALTY))
    note = f"（原话带“{word}”，不确定）" if lang == "zh" else f" (said with “{word}”: not sure)"
    return replace(c, confidence=round(confidence, 2), hedged=True, content=c.content + note)


_ZH_BOTH = re.compile(rf"我(?:和|跟|与)我的?(?P<r>{rules_life.ZH_WHO})都(?P<rest>[^，。]{{2,20}})")


_EN_BOTH = re.compile(
    rf"(?P<my>my|our)\s+(?P<r>{rules_life.EN_REL_ALT})\s+and\s+I\s+(?P<are>are\s+)?(?:both\s+)?"
    r"(?P<rest>[^,;]{3,60}?)\.?",
    re.I,
)


def _both(clause: Clause, who: _Ctx, now: datetime, whole: str) -> list[RuleCandidate] | None:
    """ "我和我上司都是河北人", "My wife and I are both from Texas": said of the person and of
    the other one alike, read as two statements."""
    text = _unhedged(clause)[0]
    if skipped(clause):
        return None
    if clause.lang == "zh" and (m := _ZH_BOTH.fullmatch(text)):
        mine, theirs = "我" + m["rest"], f"我的{m['r']}{m['rest']}"
    elif clause.lang == "en" and (m := _EN_BOTH.fullmatch(text)):
        mine = f"I am {m['rest']}" if m["are"] else f"I {m['rest']}"
        theirs = f"My {m['r']} is {m['rest']}" if m["are"] else f"My {m['r']} {third(m['rest'])}"
    else:
        return None
    return _one(Clause(mine, clause.question, clause.lang), who, now, whole) + _one(
        Clause(theirs, clause.question, clause.lang), who, now, whole
    )


def _one(clause: Clause, who: _Ctx, now: datetime, whole: str = "") -> list[RuleCandidate]:
    if skipped(clause):
        return []
    text, hedge = _unhedged(clause)
    if not text:
        return []
    named = (rules_attrs if clause.lang == "zh" else rules_attrs_en).name_first(text)
    text = named or text  # "张伟是我的大学室友", "Sarah is my boss": said name first
    found = (_zh if clause.lang == "zh" else _en)(text, who, now, whole)
    return [_hedged(c, hedge, clause.lang) for c in found] if hedge else found


def _explicit(found: list[RuleCandidate]) -> list[RuleCandidate]:
    """ "Remember X": near-certain and permanent, unless the person hedged X itself."""
    return [c for c in found if c.hedged] + [
        replace(
            c,
            confidence=max(c.confidence, REMEMBER_FLOOR),
            duration=PERMANENT,
            importance=min(1.0, c.importance + 0.1),
        )  # fmt: skip
        for c in found
        if not c.hedged
    ]


_BARE_PREFIX = re.compile(
    r"^(?:请|你)?(?:以后|今后|从现在起|从现在开始|从今以后|往后|"
    r"from now on|going forward|in the future)$",
    re.I,
)


_NAMED_AFTER = re.compile(r"^(?:名字)?叫\S")
_ENDS_WITH_WHO = re.compile(rf"(?:{rules_life.ZH_WHO})$")


_EN_AND_HE = re.compile(
    rf"(?P<a>(?P<who>(?:my|our)\s+(?:\w+\s+)?(?:{rules_life.EN_REL_ALT}))\b.+?),?\s+and\s+"
    r"(?:he|she)(?:'s|’s|\s+is)\s+(?P<b>.+)",
    re.I,
)


def _and_he(parts: list[Clause]) -> list[Clause]:
    """ "My manager is called Priya and she's from Mumbai": the second half is said of the
    same person, so it is read as "My manager is from Mumbai"."""
    out: list[Clause] = []
    for clause in parts:
        m = _EN_AND_HE.fullmatch(clause.text) if clause.lang == "en" else None
        if m is None:
            out.append(clause)
            continue
        out.append(Clause(m["a"], clause.question, "en"))
        out.append(Clause(f"{m['who']} is {m['b']}", clause.question, "en"))
    return out


def _joined(parts: list[Clause]) -> list[Clause]:
    """ "以后，回答用中文" / "From now on, answer in English" are one statement, and so is
    "我养了一只猫，叫年糕" (a name after the comma belongs to the one named before it)."""
    out: list[Clause] = []
    for clause in parts:
        named = out and _NAMED_AFTER.match(clause.text) and _ENDS_WITH_WHO.search(out[-1].text)
        if out and (_BARE_PREFIX.match(out[-1].text) or named):
            sep = "，" if clause.lang == "zh" else ", "
            out[-1] = Clause(out[-1].text + sep + clause.text, clause.question, clause.lang)
        else:
            out.append(clause)
    return out


_ZH_PAST = re.compile(r"我(?:以前|过去|原来|曾经|之前)(?P<old>.+)")
_ZH_NOW = re.compile(r"(?:但|可|不过|而)?(?:我)?现在(?:我)?(?P<new>.+)")


def _then_now(parts: list[Clause]) -> list[Clause]:
    """ "我以前每天喝三杯咖啡，现在只喝一杯了" is one statement: the second clause has no
    subject, and the first alone would keep a habit the person has changed."""
    out: list[Clause] = []
    for clause in parts:
        if out and _ZH_PAST.fullmatch(out[-1].text) and _ZH_NOW.fullmatch(clause.text):
            out[-1] = Clause(out[-1].text + "，" + clause.text, clause.question, clause.lang)
        else:
            out.append(clause)
    return out


def _changed(clause: Clause, who: _Ctx, now: datetime, whole: str) -> list[RuleCandidate] | None:
    """What a joined "以前 X，现在 Y" says now: Y read as a statement of its own when it is
    one ("现在住在杭州"), else X's candidate carrying the whole sentence ("现在只喝一杯了")."""
    old, _, new = clause.text.partition("，")
    if not (_ZH_PAST.fullmatch(old) and (m := _ZH_NOW.fullmatch(new))):
        return None
    current = _one(Clause("我现在" + m["new"], clause.question, "zh"), who, now, whole)
    if current:
        return current
    said = zh_about(clause.text, who)
    before = _one(Clause(old, clause.question, "zh"), who, now, whole)
    return [replace(c, content=said) for c in before]


def _going_on(parts: list[Clause], now: datetime) -> list[Clause]:
    """A Chinese clause without a subject of its own that tells more about the subject of the
    clause before it ("…举行，时间是下周六", "我的上司叫赵雅琳，老家在河北") is read with it."""
    out: list[Clause] = []
    for clause in parts:
        before = out[-1] if out else None
        if before and clause.lang == before.lang == "zh" and not before.question:
            said = rules_attrs.goes_on(_unhedged(before)[0], clause.text, now)
            clause = Clause(said, clause.question, clause.lang) if said else clause
        out.append(clause)
    return out


def extract(text: str, name: str = "", now: datetime | None = None) -> list[RuleCandidate]:
    """Candidates stated in `text` (one user turn); `name` is the person's display name and
    `now` when it was said (relative times: "last month", "下周六")."""
    who = _Ctx(name.strip())
    now = now or datetime.now()
    found: list[RuleCandidate] = []
    carry = False  # a bare "记住：" / "remember:" applies to the clause after it
    for clause in _going_on(_then_now(_joined(_and_he(clauses(text)))), now):
        rest = _remember(clause)
        if rest == "":
            carry = True
            continue
        if rest is not None:
            inner = _one(Clause(rest, clause.question, clause.lang), who, now, text)
            if not inner and not skipped(clause):
                content = rest if clause.lang == "en" else rest
                inner = [
                    _c("fact", "", "", content, REMEMBER_FLOOR, 0.7, f"{clause.lang}:remember")
                ]
            found += _explicit(inner)
        else:
            one = _changed(clause, who, now, text)
            one = _both(clause, who, now, text) if one is None else one
            one = _one(clause, who, now, text) if one is None else one
            found += _explicit(one) if carry else one
        carry = False
    return _unique(found)


def _unique(found: list[RuleCandidate]) -> list[RuleCandidate]:
    """Each candidate once; of two plans for the same event in one turn the last said wins
    ("周五的团建取消了，改到下周五" is the new time, not a cancelled and a moved plan)."""
    last_plan = {
        (c.subject, c.predicate): i for i, c in enumerate(found) if c.predicate.startswith("plan: ")
    }
    seen, out = set(), []
    for i, c in enumerate(found):
        key = (c.subject, c.predicate, c.content)
        if c.predicate.startswith("plan: ") and last_plan[(c.subject, c.predicate)] != i:
            continue
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out
