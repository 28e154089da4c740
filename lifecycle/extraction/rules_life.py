"""What people say about their lives, in Chinese and English (pure patterns, no Django).

The rules extractor (rules.py) asks these first for every clause that is a statement:

- moves and locations with the date they became true ("I moved to Berlin last month",
  "上个月搬到了杭州"), hometowns, and "no longer lives in" when the person says so;
- family, people and pets with names and what is said about them ("my daughter is called
  Mia", "我上司的家乡在河北石家庄", "我养了一只猫，叫年糕");
- work, employer, school, major, and leaving a job;
- diet, allergies, what they do not eat or drink, and what they stopped ("I don't eat meat
  any more", "我不再喝咖啡了", "我戒烟了");
- habits and schedules ("every Friday I work from a café", "每周三健身", "我一般七点起床");
- plans and events with their dates ("I'm flying to New York on Friday", "我下周六要去爬山",
  "年会定在12月20日").

Predicates are stable and language-neutral where the thing is ("location", "employer",
"family: daughter", "preference: 咖啡", "allergy: peanuts"), so a later statement about the
same attribute supersedes the earlier one in the write path, a change of mind included:
"I don't eat meat any more" replaces "likes meat" instead of contradicting it.
"""

from __future__ import annotations

import re
from datetime import datetime

from lifecycle.extraction import ruledates
from lifecycle.extraction.rulebase import Ctx, RuleCandidate, key, make, third, trim, zh_about

# --------------------------------------------------------------------------------------
# Shared vocabulary
# --------------------------------------------------------------------------------------

EN_FAMILY = {
    "wife": "wife", "husband": "husband", "partner": "partner", "spouse": "spouse",
    "daughter": "daughter", "son": "son", "kid": "child", "child": "child", "baby": "baby",
    "mom": "mother", "mum": "mother", "mother": "mother", "dad": "father", "father": "father",
    "sister": "sister", "brother": "brother", "grandma": "grandmother",
    "grandmother": "grandmother", "grandpa": "grandfather", "grandfather": "grandfather",
    "aunt": "aunt", "uncle": "uncle", "cousin": "cousin", "niece": "niece",
    "nephew": "nephew", "parents": "parents", "brother-in-law": "brother-in-law",
    "sister-in-law": "sister-in-law", "mother-in-law": "mother-in-law",
    "father-in-law": "father-in-law", "stepmother": "stepmother", "stepfather": "stepfather",
    "stepson": "stepson", "stepdaughter": "stepdaughter", "godmother": "godmother",
    "godfather": "godfather", "godson": "godson", "goddaughter": "goddaughter",
    "adoptive father": "adoptive father", "adoptive mother": "adoptive mother",
    "stepbrother": "stepbrother", "stepsister": "stepsister", "half-brother": "half-brother",
    "half-sister": "half-sister", "grandson": "grandson", "granddaughter": "granddaughter",
    "stepdad": "stepfather", "stepmom": "stepmother", "stepmum": "stepmother",
    "in-laws": "parents-in-law", "grandparents": "grandparents", "son-in-law": "son-in-law",
    "daughter-in-law": "daughter-in-law", "kids": "children", "children": "children",
}  # fmt: skip
EN_PEOPLE = {
    "boss": "boss", "manager": "manager", "colleague": "colleague", "coworker": "colleague",
    "co-worker": "colleague", "best friend": "best friend", "friend": "friend",
    "roommate": "roommate", "flatmate": "roommate", "neighbor": "neighbor",
    "neighbour": "neighbor", "girlfriend": "girlfriend", "boyfriend": "boyfriend",
    "fiancé": "fiancé", "fiance": "fiancé", "fiancée": "fiancée", "fiancee": "fiancée",
    "teacher": "teacher", "mentor": "mentor", "therapist": "therapist", "landlord": "landlord",
    "classmate": "classmate", "schoolmate": "schoolmate", "teammate": "teammate",
    "neighbours": "neighbors", "neighbors": "neighbors", "roommates": "roommates",
    "flatmates": "roommates", "landlady": "landlord",
}  # fmt: skip
EN_PETS = {"cat": "cat", "dog": "dog", "kitten": "cat", "puppy": "dog", "rabbit": "rabbit",
           # a breed said instead of the animal: "we have a golden retriever named Max"
           "retriever": "dog", "labrador": "dog", "lab": "dog", "corgi": "dog", "poodle": "dog",
           "beagle": "dog", "husky": "dog", "terrier": "dog", "dachshund": "dog",
           "spaniel": "dog", "shepherd": "dog", "bulldog": "dog", "tabby": "cat",
           "parrot": "parrot", "hamster": "hamster", "horse": "horse",
           "turtle": "turtle"}  # fmt: skip
_EN_RELATIONS = EN_RELATIONS = {**EN_FAMILY, **EN_PEOPLE, **EN_PETS}
_EN_REL = "|".join(sorted(map(re.escape, _EN_RELATIONS), key=len, reverse=True))
EN_REL_ALT = _EN_REL  # the relation words as one alternation, for lifecycle.extraction.rules
_EN_MOD = r"(?:(?P<mod>older|younger|little|big|eldest|oldest|youngest|twin|step|new)\s+)?"
_NAME = r"(?-i:[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){0,2})"  # capitalised, even under re.I
_NUMBER_WORDS = r"\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"

ZH_FAMILY = {
    "老婆": "wife", "妻子": "wife", "太太": "wife", "媳妇": "wife", "爱人": "spouse",
    "老公": "husband", "丈夫": "husband", "女儿": "daughter", "儿子": "son", "孩子": "child",
    "妈妈": "mother", "母亲": "mother", "老妈": "mother", "妈": "mother",
    "爸爸": "father", "父亲": "father", "老爸": "father", "爸": "father",
    "姐姐": "older sister", "妹妹": "younger sister", "哥哥": "older brother",
    "弟弟": "younger brother", "爷爷": "grandfather", "奶奶": "grandmother",
    "外公": "maternal grandfather", "姥爷": "maternal grandfather",
    "外婆": "maternal grandmother", "姥姥": "maternal grandmother", "父母": "parents",
    "爸妈": "parents", "小舅子": "brother-in-law", "姐夫": "brother-in-law",
    "妹夫": "brother-in-law", "嫂子": "sister-in-law", "弟媳": "sister-in-law",
    "婆婆": "mother-in-law", "岳母": "mother-in-law", "丈母娘": "mother-in-law",
    "公公": "father-in-law", "岳父": "father-in-law", "老丈人": "father-in-law",
    "表哥": "cousin", "表姐": "cousin", "表弟": "cousin", "表妹": "cousin", "堂哥": "cousin",
    "堂姐": "cousin", "堂弟": "cousin", "堂妹": "cousin", "侄子": "nephew", "外甥": "nephew",
    "侄女": "niece", "外甥女": "niece", "舅舅": "uncle", "叔叔": "uncle", "伯伯": "uncle",
    "姑父": "uncle", "姨父": "uncle", "姑姑": "aunt", "阿姨": "aunt", "姨妈": "aunt",
    "舅妈": "aunt", "婶婶": "aunt", "孙子": "grandson", "孙女": "granddaughter",
    "继父": "stepfather", "继母": "stepmother", "后妈": "stepmother", "后爸": "stepfather",
    "养父": "adoptive father", "养母": "adoptive mother", "干妈": "godmother",
    "干爹": "godfather", "干儿子": "godson", "干女儿": "goddaughter", "那口子": "spouse",
    "另一半": "spouse", "表舅": "uncle (表舅)", "表叔": "uncle (表叔)", "表姨": "aunt (表姨)",
    "表姑": "aunt (表姑)", "堂叔": "uncle (堂叔)", "曾祖父": "great-grandfather",
    "曾祖母": "great-grandmother", "太爷爷": "great-grandfather", "太奶奶": "great-grandmother",
    "孙媳妇": "granddaughter-in-law", "儿媳": "daughter-in-law", "儿媳妇": "daughter-in-law",
    "女婿": "son-in-law", "妯娌": "sister-in-law", "连襟": "brother-in-law",
}  # fmt: skip
# Relatives said by their rank: "小姨", "二叔", "大舅妈", "三姐". Keyed with the word ("aunt
# (小姨)") so two aunts are two people. Not "大叔" (any man), "小哥" / "小姐" (strangers).
_RANKED_STEMS = {
    "姨": "aunt", "舅": "uncle", "叔": "uncle", "伯": "uncle", "姑": "aunt", "姑妈": "aunt",
    "姨妈": "aunt", "舅妈": "aunt", "婶": "aunt", "姨父": "uncle", "姑父": "uncle",
    "伯母": "aunt", "舅舅": "uncle", "哥": "older brother", "姐": "older sister",
    "嫂": "sister-in-law",
}  # fmt: skip
ZH_FAMILY.update({
    rank + stem: f"{relation} ({rank + stem})"
    for rank in ("大", "二", "三", "四", "五", "小", "老")
    for stem, relation in _RANKED_STEMS.items()
    if rank + stem not in ZH_FAMILY and rank + stem not in ("大叔", "小哥", "小姐", "老哥", "老姐",
                                                             "老叔", "老伯", "老姑", "老舅", "小叔")
    and not (rank in "小老" and stem in ("哥", "姐", "嫂"))
})  # fmt: skip
ZH_PEOPLE = {
    "上司": "boss", "领导": "boss", "老板": "boss", "主管": "boss", "经理": "manager",
    "同事": "colleague", "最好的朋友": "best friend", "好朋友": "best friend",
    "闺蜜": "best friend", "朋友": "friend", "室友": "roommate", "邻居": "neighbor",
    "男朋友": "boyfriend", "男友": "boyfriend", "女朋友": "girlfriend", "女友": "girlfriend",
    "对象": "partner", "未婚妻": "fiancée", "未婚夫": "fiancé", "导师": "mentor",
    "老师": "teacher", "班主任": "head teacher", "班主任老师": "head teacher",
    "同学": "classmate", "发小": "childhood friend",
    "合伙人": "business partner", "客户": "client", "下属": "report", "房东": "landlord",
    "新人": "new colleague", "实习生": "intern", "同组同事": "colleague",
    "师傅": "mentor", "教练": "coach", "牙医": "dentist", "医生": "doctor", "组长": "team lead",
    "上级": "boss", "同桌": "deskmate", "校友": "alumnus", "队友": "teammate",
    "战友": "comrade", "学长": "senior schoolmate", "学姐": "senior schoolmate",
    "师兄": "senior labmate", "师姐": "senior labmate", "前妻": "ex-wife", "前夫": "ex-husband",
    "前男友": "ex-boyfriend", "前女友": "ex-girlfriend", "徒弟": "apprentice",
    "舍友": "roommate", "网友": "online friend", "搭子": "buddy", "搭档": "partner at work",
}  # fmt: skip
ZH_PETS = {"猫咪": "cat", "小猫": "cat", "猫": "cat", "小狗": "dog", "狗狗": "dog", "狗": "dog",
           "兔子": "rabbit", "鹦鹉": "parrot", "仓鼠": "hamster", "乌龟": "turtle",
           # a breed said instead of the animal: "我养了一只金毛，叫旺财"
           "金毛": "dog", "柯基": "dog", "泰迪": "dog", "哈士奇": "dog", "边牧": "dog",
           "拉布拉多": "dog", "柴犬": "dog", "比熊": "dog", "萨摩耶": "dog", "博美": "dog",
           "橘猫": "cat", "布偶猫": "cat", "英短": "cat", "美短": "cat", "狸花猫": "cat",
           "蓝猫": "cat", "暹罗猫": "cat"}  # fmt: skip
_ZH_RELATIONS = ZH_RELATIONS = {**ZH_FAMILY, **ZH_PEOPLE, **ZH_PETS}
_ZH_REL = "|".join(sorted(map(re.escape, _ZH_RELATIONS), key=len, reverse=True))
ZH_WHO = _ZH_REL  # a clause ending with one of these may be followed by its name
_ZH_NAME = r"[\u4e00-\u9fffA-Za-z·][\u4e00-\u9fffA-Za-z· ]{0,9}"
_ZH_N = r"[\d一二两三四五六七八九十百]{1,4}"


def _group(relation: str) -> str:
    if relation in EN_PETS.values() and relation not in EN_FAMILY.values():
        return "pet"
    family = set(EN_FAMILY.values()) | set(ZH_FAMILY.values())
    return "family" if relation in family else "people"


# --------------------------------------------------------------------------------------
# English
# --------------------------------------------------------------------------------------

_EN_TIME_TAIL = re.compile(
    r"\s+(?:now|these days|at the moment|right now|originally|for work|for good|"
    r"with (?:my|our) (?:family|wife|husband|partner|kids|parents)|"
    r"for (?:a|an|\d+|one|two|three|four|five|ten|a few|several) \w+(?: now)?|"
    r"since \w+(?: \d{4})?|until \w+(?: \w+)?|any\s*more)$",
    re.I,
)
JOB_WORDS = set(
    "teacher nurse engineer developer programmer designer scientist doctor physician lawyer "
    "student chef cook manager accountant architect writer author artist musician researcher "
    "professor lecturer consultant analyst photographer pilot driver farmer dentist "
    "pharmacist therapist journalist editor translator electrician plumber carpenter "
    "mechanic firefighter officer soldier cashier waiter waitress barista baker librarian "
    "salesperson entrepreneur founder freelancer intern technician surgeon vet veterinarian "
    "paramedic secretary assistant administrator clerk coach trainer tutor economist "
    "scientist biologist chemist physicist mathematician psychologist counsellor counselor "
    "actor actress singer dancer director producer banker trader broker agent realtor "
    "pastor priest nanny cleaner gardener builder welder tailor hairdresser stylist "
    "marketer recruiter".split()
)


def _en_clean(value: str, spans=()) -> str:
    for span in spans:
        if span is not None:
            value = value.replace(span.text, " ")
    value = re.sub(r"\s+", " ", value)
    previous = None
    while previous != value:
        previous, value = value, _EN_TIME_TAIL.sub("", value.strip())
    value = re.split(r"\s+(?:because|since|so that|but|and then|which|where)\s+", value)[0]
    return trim(value)


def _job(value: str) -> bool:
    words = value.lower().replace("-", " ").split()
    return bool(words) and (words[-1] in JOB_WORDS or words[-1].rstrip("s") in JOB_WORDS)


def _date_en(span) -> str:
    """The time as said and as a date: " (in June: 2027-06)"."""
    return f" ({span.text.strip()}: {ruledates.label(span)})" if span is not None else ""


class _En:
    """One English clause (hedges already removed) and what it says."""

    def __init__(self, text: str, who: Ctx, now: datetime):
        self.text, self.who, self.now = text, who, now
        self.found: list[RuleCandidate] = []

    def add(self, kind, predicate, content, conf, pattern, imp=0.7, subject=None):
        subject = self.who.subject if subject is None else subject
        self.found.append(make(kind, subject, predicate, content, conf, imp, pattern))

    def run(self) -> list[RuleCandidate]:
        for step in (self.age, self.move, self.background, self.location, self.relations,
                     self.work, self.school, self.food, self.habit, self.plan):  # fmt: skip
            step()
            if self.found:
                break
        return self.found

    # -- identity ---------------------------------------------------------------------

    def age(self):
        m = re.search(
            rf"\bI(?:'m| am)\s+(?P<n>{_NUMBER_WORDS})(?:\s+years?\s+old)?$|"
            rf"\bI\s+(?:just\s+)?turned\s+(?P<t>{_NUMBER_WORDS})\b",
            self.text,
            re.I,
        )
        if m:
            n = m["n"] or m["t"]
            self.add("identity", "age", f"{self.who.en} is {n} years old", 0.9, "en:age", 0.6)
        elif m := re.fullmatch(
            r"I\s+(?:get|feel|am|'m)\s+(?P<x>cold|hot|tired|carsick|seasick|airsick|nervous|"
            r"sunburnt)\s+(?:really\s+|very\s+)?easily\.?",
            self.text,
            re.I,
        ):  # not "I'm a morning person" (a way of talking, left alone)
            content = f"{self.who.en} {third(self.text[1:].strip().rstrip('.'))}"
            trait = f"gets {m['x'].lower()} easily"
            self.add("identity", f"trait: {key(trait)}", content, 0.85, "en:trait", 0.5)
        elif m := re.fullmatch(r"I(?:'m| am)\s+(?P<x>left|right)[- ]handed\.?", self.text, re.I):
            content = f"{self.who.en} is {m['x'].lower()}-handed"
            self.add("identity", "handedness", content, 0.9, "en:handedness", 0.5)

    # -- where they live --------------------------------------------------------------

    def move(self):
        m = re.search(
            r"\b(?P<s>I|we)\s+(?:have\s+|'ve\s+|just\s+|recently\s+|finally\s+|also\s+)*"
            r"(?P<v>moved|relocated)\s+(?:back\s+)?(?:(?:here\s+)?from\s+(?P<f>.+?)\s+)?"
            r"to\s+(?P<x>[^,;]+)$",
            self.text,
            re.I,
        )
        if m:
            since = ruledates.past(self.text, self.now)
            where = _en_clean(m["x"], [since])
            if where:
                when = ruledates.label(since) if since else f"{self.now:%Y-%m-%d}"
                content = f"{self.who.en} lives in {where} (moved there {when})"
                self.add("fact", "location", content, 0.9, "en:moved")
            return
        m = re.search(
            r"\b(?:I|we)\s*(?:'m|am|'re|are)?\s*(?:will\s+|'ll\s+|going\s+to\s+|planning\s+to\s+|"
            r"plan\s+to\s+)?(?:moving|move|relocating|relocate)\s+to\s+(?P<x>[^,;]+)$",
            self.text,
            re.I,
        )
        if m:
            when = ruledates.future(self.text, self.now)
            where = _en_clean(m["x"], [when])
            if where and (when is not None or re.search(r"\b(?:moving|planning|plan)\b",
                                                         self.text, re.I)):  # fmt: skip
                content = f"{self.who.en} plans to move to {where}{_date_en(when)}"
                self.add("fact", "plan: move", content, 0.85, "en:moving")

    def location(self):
        t, who = self.text, self.who.en
        if m := re.search(
            r"\bI(?:'m| am)?\s+(?:don't|do not|no longer|not)\s+(?:live|living)\s+in\s+(?P<x>.+)$",
            t,
            re.I,
        ):
            if where := _en_clean(m["x"]):
                self.add("fact", "location", f"{who} no longer lives in {where}", 0.9, "en:left")
            return
        if m := re.search(
            r"\bI\s*(?:'ve been|have been|am|'m)?\s*(?:now\s+|currently\s+|still\s+)?"
            r"(?:live|living)\s+in\s+(?P<x>[^,;]+)$|\bI(?:'m| am)\s+based\s+in\s+(?P<b>[^,;]+)$",
            t,
            re.I,
        ):
            where = _en_clean(m["x"] or m["b"], [ruledates.future(t, self.now)])
            if where and not re.match(r"(?:it|this|that|here|there)\b", where, re.I):
                self.add("fact", "location", f"{who} lives in {where}", 0.9, "en:place")
            return
        if m := re.search(
            r"\bI(?:'m| am)\s+(?:originally\s+)?from\s+(?P<x>[^,;]+)$|"
            r"\bI\s+(?:grew up|was born(?: and raised)?)\s+in\s+(?P<g>[^,;]+)$",
            t,
            re.I,
        ):
            where = _en_clean(m["x"] or m["g"])
            if where and where[:1].isupper() or re.match(r"(?:a|the)\s", where or ""):
                self.add("fact", "hometown", f"{who} is from {where}", 0.9, "en:hometown")

    # -- family, people, pets ---------------------------------------------------------

    def relations(self):
        t, who = self.text, self.who
        if m := re.search(rf"\bI(?:'m| am)\s+(?:married|engaged)\s+to\s+(?P<n>{_NAME})", t):
            engaged = "engaged" in m[0].lower()
            predicate = "people: fiancé" if engaged else "family: spouse"
            verb = "is engaged to" if engaged else "is married to"
            self.add("fact", predicate, f"{who.en} {verb} {m['n']}", 0.9, "en:married")
            return
        if m := re.search(
            r"\b(?:I|we)\s+(?:just\s+|recently\s+)?(?:adopted|got|rescued|have|own)\s+(?:a|an)\s+"
            rf"(?:[\w-]+\s+)?(?P<r>{'|'.join(EN_PETS)})\b.*?"
            r"(?:called|named|(?:her|his|its) name is)\s+"
            rf"(?P<n>{_NAME})",
            t,
            re.I,
        ):
            pet = EN_PETS[m["r"].lower()]
            self.add(
                "fact", f"pet: {pet}", f"{who.en_poss} {pet} is called {m['n']}", 0.9, "en:pet"
            )
            return
        if m := re.search(
            rf"\bI\s+have\s+(?P<c>{_NUMBER_WORDS}|a|an)\s+(?P<r>kids|children|sons|daughters|"
            rf"{_EN_REL})\b(?:\s*,?\s*(?:called|named)\s+(?P<n>{_NAME}))?",
            t,
            re.I,
        ):
            self._have(m)
            return
        m = re.search(
            rf"\b(?:my|our)\s+{_EN_MOD}(?P<r>{_EN_REL})(?P<p>(?:'s|’s)\s+name)?"
            rf"(?:\s*,?\s+(?P<n>{_NAME})\s*,?)?\s+(?P<rest>.+)$",
            t,
            re.I,
        )
        if m and not re.match(r"(?:'s|’s)\s+(?!name)", t[m.end("r") :]):
            self._relation(m)

    def _have(self, m):
        word, count = m["r"].lower(), m["c"].lower()
        if word in ("kids", "children", "sons", "daughters"):
            content = f"{self.who.en} has {count} {word}"
            self.add("fact", "family: children", content, 0.9, "en:children")
            return
        relation = _EN_RELATIONS.get(word)
        if relation and m["n"]:
            group = _group(relation)
            content = f"{self.who.en_poss} {relation} is called {m['n']}"
            self.add("fact", f"{group}: {relation}", content, 0.9, f"en:{group}")

    def _relation(self, m):
        relation = _EN_RELATIONS[m["r"].lower()]
        if m["mod"]:
            relation = f"{m['mod'].lower()} {relation}"
        group = _group(_EN_RELATIONS[m["r"].lower()])
        base, poss = f"{group}: {relation}", f"{self.who.en_poss} {relation}"
        rest, name = m["rest"].strip(), m["n"]
        said = re.match(rf"(?:is\s+(?:called\s+|named\s+)?|goes by\s+)(?P<n>{_NAME})$", rest)
        if said and (m["p"] or re.match(r"is\s+(?:called|named)|goes by", rest) or not name):
            self.add("fact", base, f"{poss} is called {said['n']}", 0.9, f"en:{group}")
            return
        if re.match(r"(?:'s|’s|is)\s+(?:called|named)\s+", rest) is None and name:
            self.add("fact", base, f"{poss} is called {name}", 0.9, f"en:{group}")
        self._attribute(base, poss, rest, group)

    def _attribute(self, base, poss, rest, group):
        patterns = (
            (
                rf"is\s+(?P<x>{_NUMBER_WORDS})(?:\s+years?\s+old)?$|just turned (?P<y>\d+)",
                "age",
                "is {} years old",
            ),
            (r"(?:is|works as)\s+(?:a|an)\s+(?P<x>[\w' -]{2,40})$", "occupation", "is a {}"),
            (r"works\s+(?:at|for|in)\s+(?P<x>[^,;]+)$", "employer", "works at {}"),
            (r"(?:lives|live)\s+in\s+(?P<x>[^,;]+)$", "location", "lives in {}"),
            (r"(?:is|comes|are|come)\s+from\s+(?P<x>[^,;]+)$", "hometown", "is from {}"),
            (r"(?:studies|is studying)\s+at\s+(?P<x>[^,;]+)$", "school", "studies at {}"),
            (r"(?:really\s+)?(?:likes|loves|enjoys)\s+(?P<x>[^,;]+)$", "likes", "likes {}"),
            (r"(?:also\s+)?(?:passed away|died)(?P<x>.*)$", "status", "passed away{}"),
        )
        for pattern, attribute, phrase in patterns:
            if m := re.match(pattern, rest, re.I):
                value = _en_clean(m["x"] or m.groupdict().get("y") or "")
                if attribute == "status":
                    when = ruledates.past(rest, self.now)
                    value = f" ({when.text}: {ruledates.label(when)})" if when else ""
                elif not value or (attribute == "occupation" and not _job(value)):
                    continue
                phrase = phrase.format(value)
                if re.search(r"(?:parents|neighbors|roommates)$", base):  # "my parents are …"
                    verbs = {"is": "are", "lives": "live", "works": "work", "likes": "like",
                             "studies": "study"}  # fmt: skip
                    first, _, tail = phrase.partition(" ")
                    phrase = f"{verbs.get(first, first)} {tail}".strip()
                content = f"{poss} {phrase}"
                self.add("fact", f"{base}: {attribute}", content, 0.85, f"en:{group}-{attribute}")
                return
        if when := ruledates.future(rest, self.now):
            event = _en_clean(rest, [when])
            if not event:
                return  # "… for my wife on Saturday": nothing said of the wife herself
            content = f"{poss} {event}{_date_en(when)}"
            self.add("fact", f"plan: {key(base.split(': ', 1)[1])} {key(event)}", content, 0.85,
                     "en:event")  # fmt: skip

    def background(self):
        """What they studied, when they married, what they can do, what kind of sleeper they
        are: "I studied chemistry at Purdue", "I got married in 2015", "I speak French and
        German", "I can't swim", "I'm a night owl"."""
        t, who = self.text.rstrip(". "), self.who.en
        said = f"{who} {third(t[1:].strip())}".replace(" my ", " their ")
        if re.fullmatch(
            r"I\s+live\s+(?:right\s+)?(?:near|close\s+to|next\s+to|by|around\s+the\s+corner\s+from)\s+"
            r"(?:the\s+)?(?-i:[A-Z])[^,;]{1,40}",
            t,
            re.I,
        ):  # near a landmark: where home is, not the city (no "location" to supersede)
            self.add("fact", "place: home: near", said, 0.85, "en:home-near")
            return
        if m := re.fullmatch(
            r"I\s+(?:studied|majored\s+in|did\s+(?:a\s+degree\s+in|my\s+degree\s+in))\s+"
            r"(?P<x>[\w' -]{2,30}?)\s+at\s+(?P<s>(?-i:[A-Z])[^,;]{1,40})",
            t,
            re.I,
        ):
            self.add("fact", "major", f"{who} studied {m['x']}", 0.88, "en:major")
            self.add("fact", "school", f"{who} studied at {m['s']}", 0.88, "en:school")
            return
        if m := re.fullmatch(
            r"I\s+got\s+married\s+(?P<x>in\s+\d{4}|\w+\s+years?\s+ago|last\s+\w+)", t
        ):
            when = ruledates.past(m["x"], self.now)
            self.add("fact", "married", f"{who} got married{_date_en(when)}", 0.85, "en:married")
            return
        if m := re.fullmatch(
            r"I(?:'m|\s+am)\s+(?:a\s+|an\s+|definitely\s+a\s+|more\s+of\s+a\s+)(?P<x>night\s+owl|"
            r"early\s+bird|early\s+riser|light\s+sleeper|"
            r"heavy\s+sleeper)",
            t,
            re.I,
        ):
            self.add("identity", f"trait: {m['x'].lower()}", said, 0.85, "en:trait")

    # -- work and school --------------------------------------------------------------

    def work(self):
        t, who = self.text, self.who.en
        # What they did before (not what they do now): "I used to work at Google", "I was a
        # teacher for ten years", "I worked as a nurse before the kids".
        if m := re.fullmatch(
            rf"I\s+(?:used\s+to\s+work|worked|once\s+worked)\s+(?:at|for)\s+"
            rf"(?P<o>(?-i:[A-Z])[^,;]*?){_EN_BACK}\.?|"
            r"I\s+(?:used\s+to\s+be|was|used\s+to\s+work\s+as|worked\s+as)\s+(?:a|an)\s+"
            rf"(?P<j>[\w' -]{{2,30}}?)(?:{_EN_WHEN_BACK}|\s+before\s+.+)?\.?",
            t,
            re.I,
        ):
            said = f"{who} {t[2:].strip().rstrip('.')}".replace(" my ", " their ")
            if m["o"] and (org := _en_clean(m["o"])):
                self.add("fact", "past employer", said, 0.88, "en:past-employer", 0.6)
                return
            if m["j"] and _job(job := _en_clean(m["j"])):
                self.add("fact", "past occupation", said, 0.88, "en:past-occupation", 0.6)
                return
        if m := re.search(
            r"\bI\s+(?:don't|do not|no longer)\s+work\s+(?:at|for)\s+(?P<x>.+)$|"
            r"\bI\s+(?:just\s+|also\s+)?(?:quit|left|lost)\s+(?:my\s+job\s+(?:at|with)\s+)(?P<j>.+)$|"
            r"\bI\s+(?:just\s+)?(?:quit|left)\s+(?P<c>[A-Z][^,;]*)$",
            t,
        ):
            org = _en_clean(m["x"] or m["j"] or m["c"], [ruledates.past(t, self.now)])
            if org:
                self.add("fact", "employer", f"{who} no longer works at {org}", 0.9, "en:left-job")
            return
        if m := re.search(r"\bI(?:'m| am)\s+(?:no longer|not)\s+(?:a|an)\s+(?P<x>[\w' -]+)$", t):
            job = _en_clean(m["x"])
            if job and _job(job):
                self.add("identity", "occupation", f"{who} is no longer a {job}", 0.9, "en:ex-job")
            return
        if m := re.search(
            r"\bI\s+(?:currently\s+|now\s+|still\s+)?work\s+(?:at|for)\s+(?P<x>[^,;]+)$|"
            r"\bI\s+(?:just\s+|recently\s+)?(?:started|got)\s+(?:a\s+)?(?:new\s+)?"
            r"(?:job|position|role)\s+(?:at|with)\s+(?P<n>[^,;]+)$|\bI\s+joined\s+(?P<j>[A-Z][^,;]*)$",
            t,
        ):
            org = _en_clean(m["x"] or m["n"] or m["j"], [ruledates.past(t, self.now)])
            if org:
                self.add("fact", "employer", f"{who} works at {org}", 0.9, "en:employer")
            return
        if m := re.search(
            r"\bI(?:'m| am)\s+(?:a|an)\s+(?P<job>[\w' -]{2,40}?)\s+(?:at|for|with)\s+"
            r"(?P<org>[^,;]+)$",
            t,
        ):
            job, org = _en_clean(m["job"]), _en_clean(m["org"])
            if job.lower().endswith("student"):
                self.add("fact", "school", f"{who} studies at {org}", 0.9, "en:school")
                return
            if _job(job):
                self._job(job)
                self.add("fact", "employer", f"{who} works at {org}", 0.9, "en:employer")
                return
        if m := re.search(r"\bI\s+work\s+as\s+(?:a|an)\s+(?P<x>[\w' -]{2,40})$", t, re.I):
            self._job(_en_clean(m["x"]))
            return
        if m := re.search(r"\bI(?:'m| am)\s+(?:now\s+)?(?:a|an)\s+(?P<x>[\w' -]{2,40})$", t):
            if _job(job := _en_clean(m["x"])):
                self._job(job)
            return
        if m := re.search(r"\bI(?:'m| am)\s+(?:now\s+)?(?P<x>retired|unemployed|self-employed)", t):
            self.add("identity", "occupation", f"{who} is {m['x']}", 0.9, "en:occupation")
            return
        if m := re.search(r"\bI\s+teach\s+(?P<x>[^,;]+)$", t, re.I):
            self.add("identity", "occupation", f"{who} teaches {_en_clean(m['x'])}", 0.9,
                     "en:occupation", 0.8)  # fmt: skip
            return
        if m := re.search(r"\bI\s+(?:run|own)\s+(?P<x>(?:my own|a|an)\s+[^,;]+)$", t, re.I):
            what = third(f"run {_en_clean(m['x'])}")
            self.add("identity", "occupation", f"{who} {what}", 0.9, "en:occupation")

    def _job(self, job: str):
        if job:
            article = "an" if job[:1].lower() in "aeiou" else "a"
            content = f"{self.who.en} is {article} {job}"
            self.add("identity", "occupation", content, 0.9, "en:occupation", 0.8)

    def school(self):
        t, who = self.text, self.who.en
        if m := re.search(
            r"\bI\s+(?:study|studied)\s+at\s+(?P<x>[^,;]+)$|\bI\s+graduated\s+from\s+(?P<g>[^,;]+)$|"
            r"\bI\s+go\s+to\s+(?P<u>[^,;]*\b(?:University|College|School|Academy|Institute)\b[^,;]*)$",
            t,
        ):
            place = _en_clean(m["x"] or m["g"] or m["u"], [ruledates.past(t, self.now)])
            if place:
                verb = "graduated from" if m["g"] else "studies at"
                self.add("fact", "school", f"{who} {verb} {place}", 0.9, "en:school")
            return
        if m := re.search(
            r"\bI(?:'m| am)\s+(?:studying|majoring in)\s+(?P<x>[^,;]+)$|"
            r"\bI\s+major(?:ed)?\s+in\s+(?P<y>[^,;]+)$|"
            r"\bI(?:'m| am)\s+doing\s+(?:a|my)\s+\S+\s+in\s+(?P<z>[^,;]+)$",
            t,
            re.I,
        ):
            if major := _en_clean(m["x"] or m["y"] or m["z"]):
                self.add("fact", "major", f"{who} studies {major}", 0.9, "en:major")

    # -- food, diet, allergies, giving things up ---------------------------------------

    def food(self):
        t, who = self.text, self.who.en
        # "I don't smoke or drink": the keys of "I quit smoking" / "I don't drink alcohol".
        if m := re.fullmatch(
            r"I\s+(?:don't|do\s+not|never)\s+(?P<a>smoke|drink)(?:\s+(?:or|and|nor)\s+(?P<b>smoke|drink))?"
            r"(?:\s+at\s+all)?\.?",
            t,
            re.I,
        ):
            for verb in filter(None, (m["a"], m["b"])):
                thing = "smoking" if verb.lower() == "smoke" else "alcohol"
                said = f"{who} does not {'smoke' if thing == 'smoking' else 'drink alcohol'}"
                self.add("preference", f"preference: {thing}", said, 0.9, "en:diet")
            return
        diets = (
            r"vegetarian|vegan|pescatarian|pescetarian|keto|gluten-free|halal|kosher|paleo|"
            r"dairy-free|plant-based|low-carb|low-fat|low-sodium|sugar-free|raw vegan"
        )
        # "I eat vegan", "I'm on a low-carb diet", "I follow a keto diet", "I keep kosher".
        if m := re.search(
            rf"\bI\s+(?:(?:mostly|only|strictly|now|usually)\s+)?(?:eat|keep|cook)\s+(?P<x>{diets})"
            r"(?:\s+(?:now|these\s+days|nowadays|at\s+home))?\W*$"
            rf"|\bI(?:'m| am)\s+(?:now\s+)?on\s+(?:a|the)\s+(?P<y>{diets}|mediterranean|"
            rf"ketogenic)\s+diet\b|\bI\s+(?:follow|stick\s+to)\s+(?:a|the)\s+(?P<z>{diets}|"
            rf"mediterranean|ketogenic)\s+diet\b",
            t,
            re.I,
        ):
            diet = (m["x"] or m["y"] or m["z"]).lower()
            content = f"{who} eats {diet}" if m["x"] else f"{who} is on a {diet} diet"
            self.add("preference", "diet", content, 0.9, "en:diet")
            return
        if m := re.search(
            rf"\bI(?:'m| am)\s+(?:not|no longer)\s+(?:a\s+)?(?P<x>{diets})\b", t, re.I
        ):
            self.add("preference", "diet", f"{who} is no longer {m['x'].lower()}", 0.9, "en:diet")
            return
        if m := re.search(
            rf"\bI(?:'m| am|'ve\s+been| have\s+been)\s+(?:now\s+)?(?:a\s+)?(?P<x>{diets})\b",
            t,
            re.I,
        ):
            self.add("preference", "diet", f"{who} is {m['x'].lower()}", 0.9, "en:diet")
            return
        if m := re.search(
            r"\bI(?:'m| am)\s+allergic\s+to\s+(?P<x>[^,;]+)$|"
            r"\bI\s+have\s+(?:a|an)\s+(?P<y>[\w-]+(?:\s[\w-]+)?)\s+allergy\b|"
            r"\bI(?:'m| am)\s+(?P<z>[\w-]+)\s+intolerant\b",
            t,
            re.I,
        ):
            thing = _en_clean(m["x"] or m["y"] or m["z"])
            word = "intolerant to" if m["z"] else "allergic to"
            self.add("preference", f"allergy: {key(thing)}", f"{who} is {word} {thing}", 0.92,
                     "en:allergy", 0.9)  # fmt: skip
            return
        if m := re.search(
            r"\bI\s+(?:don't|do not)\s+(?:like|enjoy|love)\s+(?P<x>.+?)\s+any\s*more$", t, re.I
        ):
            thing = _en_clean(m["x"])
            self.add("preference", f"preference: {_food_key(thing)}",
                     f"{who} no longer likes {thing}", 0.9, "en:changed-mind")  # fmt: skip
            return
        if m := re.search(
            r"\bI\s+(?:no longer|don't|do not)\s+(?P<v>eat|drink)\s+(?P<x>.+?)\s*"
            r"(?P<a>any\s*more)?$|"
            r"\bI\s+(?:stopped|quit)\s+(?P<w>eating|drinking|smoking)\s+(?P<y>[^,;]+)$|"
            r"\bI\s+(?:gave up|stopped|quit)\s+(?P<z>(?!my\b|the job|work)[^,;]+)$|"
            r"\bI\s+(?:can't|cannot)\s+(?P<c>eat|drink)\s+(?P<q>[^,;]+)$",
            t,
            re.I,
        ):
            self._not_eating(m)

    def _not_eating(self, m):
        who = self.who.en
        past = ruledates.past(self.text, self.now)
        if m["x"]:
            thing = _en_clean(m["x"], [past])
            if not thing or re.match(r"(?:enough|much|many|anything|it|that)\b", thing, re.I):
                return
            stopped = bool(m["a"]) or "no longer" in m[0].lower()
            verb = m["v"].lower()
            said = f"no longer {verb}s" if stopped else f"does not {verb}"
            content = f"{who} {said} {thing}"
        elif m["q"]:
            thing = _en_clean(m["q"])
            content = f"{who} cannot {m['c'].lower()} {thing}"
        else:
            verb = (m["w"] or "").lower()
            thing = _en_clean(m["y"] or m["z"] or "", [past]) or verb
            if verb and thing != verb:
                content = f"{who} no longer {verb[:-3] if verb != 'smoking' else 'smoke'}s {thing}"
            elif thing.endswith("ing"):  # "I quit smoking"
                content = f"{who} gave up {thing}"
            else:
                content = f"{who} no longer has {thing} (gave it up)"
        if thing:
            self.add("preference", f"preference: {_food_key(thing)}", content, 0.9, "en:diet")

    # -- habits -----------------------------------------------------------------------

    _FREQ = re.compile(
        r"\b(?:every\s+(?:single\s+|other\s+|second\s+|few\s+)?(?:day|morning|evening|night|week|"
        r"weekend|month|year|(?:mon|tues|wednes|thurs|fri|satur|sun)day)s?"
        r"(?:\s+(?:morning|evening|night|afternoon))?|every\s+\w+\s+(?:days|weeks|months)|"
        r"on\s+(?:weekends|weekdays|(?:mon|tues|wednes|thurs|fri|satur|sun)days)"
        r"(?:(?:,\s*|\s+and\s+|\s+or\s+)(?:(?:mon|tues|wednes|thurs|fri|satur|sun)days|weekends))*|"
        r"(?:once|twice|\w+\s+times)\s+a\s+(?:day|week|month|year)|daily|weekly|"
        r"most\s+(?:days|mornings|evenings|nights)|each\s+(?:day|morning|evening|week))\b",
        re.I,
    )
    _ADVERB = re.compile(r"\bI\s+(?P<a>usually|always|often|never|normally|generally)\s+", re.I)

    def habit(self):
        t, who = self.text, self.who.en
        if m := re.search(
            r"\bI\s+(?:don't|do not|no longer)\s+"
            r"(?P<x>(?!live\b|work (?:at|for)\b|eat\b|drink\b|like\b|"
            r"love\b|know\b|think\b|have\b|want\b|need\b)\w+[^,;]*?)\s*(?P<a>any\s*more)?$",
            t,
            re.I,
        ):
            if m["a"] or "no longer" in m[0].lower():
                what = _en_clean(m["x"])
                content = f"{who} no longer {what}".replace(" my ", " their ")
                self.add("preference", f"habit: {key(what)}", content, 0.85, "en:habit-ended")
            return
        freq = self._FREQ.search(t)
        adverb = self._ADVERB.search(t)
        if not freq and not adverb:
            return
        rest = self._FREQ.sub(" ", t) if freq else t
        m = re.search(
            r"\bI\s+(?:usually\s+|always\s+|often\s+|never\s+|normally\s+)?(?P<vp>[a-z][^,;]+)$",
            rest,
        )
        if not m or re.match(r"(?:am|'m|was|think|guess|hope|want|need|feel)\b", m["vp"], re.I):
            return
        vp = _en_clean(m["vp"])
        if not vp:
            return
        prefix = f"{adverb['a'].lower()} " if adverb else ""
        when = f" {freq[0][:1].lower()}{freq[0][1:]}" if freq else ""
        content = f"{who} {prefix}{third(vp)}{when}"
        self.add("preference", f"habit: {key(vp)}", content, 0.85, "en:habit", 0.6)

    # -- plans ------------------------------------------------------------------------

    def plan(self):
        t, who = self.text, self.who.en
        when = ruledates.future(t, self.now)
        if m := re.search(
            rf"\bmy\s+(?P<r>{_EN_REL})(?:'s|’s)\s+(?P<e>wedding|birthday(?: party)?|graduation|"
            r"party|surgery|operation|concert|exam|interview|visit|trip|flight)\s+is\s+(?P<t>.+)$",
            t,
            re.I,
        ):
            if when is not None:
                event = f"{m['r'].lower()}'s {m['e'].lower()}"
                content = f"{self.who.en_poss} {event} is {_en_clean(m['t'])}{_date_en(when)}"
                self.add("fact", f"plan: {key(event)}", content, 0.85, "en:event")
            return
        m = re.search(
            r"\bI(?:'m| am)?\s*(?P<v>planning|plan|intend|intending|hope|hoping|going|about)"
            r"\s+to\s+"
            r"(?P<x>[^,;]+)$|\bI\s*(?:will|'ll|shall)\s+(?P<w>[^,;]+)$|"
            r"\bI(?:'m| am)\s+thinking\s+(?:about|of)\s+(?P<k>[^,;]+)$|"
            r"\b(?P<s>I|we)(?:'m| am|'re| are)\s+(?P<g>\w+ing\b[^,;]*)$|"
            r"\bI\s+have\s+(?:a|an)\s+(?P<e>[\w ]{2,30}?(?:appointment|meeting|interview|exam|"
            r"flight|trip|concert|date|party|wedding))\b",
            t,
            re.I,
        )
        if m is None:
            return
        planned = (m["v"] or "").lower() in ("planning", "plan", "intend", "intending")
        thinking = bool(m["k"])
        if when is None and not planned and not thinking:
            return
        if m["x"]:
            verb = (m["v"] or "").lower()
            what = _en_clean(m["x"], [when])
            content = (f"{who} is going to {what}" if verb in ("going", "about")
                       else f"{who} plans to {what}")  # fmt: skip
        elif m["w"]:
            what = _en_clean(m["w"], [when])
            content = f"{who} will {what}"
        elif m["g"]:
            what = _en_clean(m["g"], [when])
            if m["g"].lower().startswith(("looking", "feeling", "trying", "wondering")):
                return
            content = f"{who} is {what}"
        elif m["k"]:
            what = _en_clean(m["k"], [when])
            content = f"{who} is thinking about {what}"
        else:
            what = _en_clean(m["e"])
            content = f"{who} has {'an' if what[:1] in 'aeiou' else 'a'} {what}"
        if what:
            confidence = 0.7 if thinking else 0.85
            self.add("fact", f"plan: {key(what)}", content + _date_en(when), confidence, "en:plan")


def _food_key(thing: str) -> str:
    return key(
        re.sub(r"^(?:eating|drinking|to eat|to drink|using|to use)\s+", "", thing, flags=re.I)
    )


def english(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    return _En(text, who, now).run()


# --------------------------------------------------------------------------------------
# Chinese
# --------------------------------------------------------------------------------------

_ZH_TAIL = re.compile(r"(?:了|啦|呢|吧|呀|哦|的|住|啊)+$")
_PROVINCES = (
    "北京|上海|天津|重庆|河北|山西|辽宁|吉林|黑龙江|江苏|浙江|安徽|福建|江西|山东|河南|湖北|"
    "湖南|广东|海南|四川|贵州|云南|陕西|甘肃|青海|台湾|内蒙古|广西|西藏|宁夏|新疆|香港|澳门|"
    "东北|杭州|南京|广州|深圳|成都|武汉|西安|苏州|长沙|青岛|大连|厦门|宁波|温州|福州|昆明|"
    "合肥|郑州|济南|沈阳|哈尔滨|长春|石家庄|太原|南昌|贵阳|南宁|兰州|呼和浩特|乌鲁木齐|无锡"
)
_ZH_JOB_SUFFIX = (
    "工程师", "设计师", "程序员", "老师", "教师", "教授", "医生", "护士", "律师", "会计",
    "厨师", "司机", "记者", "编辑", "作家", "画家", "演员", "歌手", "警察", "学生", "研究生",
    "博士", "经理", "总监", "主管", "店主", "老板", "创业者", "自由职业者", "公务员", "销售",
    "产品经理", "运营", "分析师", "咨询师", "建筑师", "摄影师", "翻译", "保安", "工人", "农民",
    "快递员", "外卖员", "服务员", "咖啡师", "理发师", "研究员", "科学家", "志愿者", "实习生",
    "店员", "职员", "员工", "导游", "教练", "医师", "药剂师", "心理咨询师", "员", "师",
)  # fmt: skip
_ZH_FOOD_VERB = re.compile(r"^(?:吃|喝|看|听|玩|用|抽)(?=.)")
_ZH_QUIT_VERB = {"烟": "抽烟", "酒": "喝酒", "咖啡": "喝咖啡", "茶": "喝茶", "奶茶": "喝奶茶"}


def _zh_clean(value: str, spans=()) -> str:
    for span in spans:
        if span is not None:
            value = value.replace(span.text, "")
    return trim(_ZH_TAIL.sub("", trim(value)))


def zh_key(thing: str) -> str:
    return key(_ZH_FOOD_VERB.sub("", thing))


def _zh_job(value: str) -> bool:
    value = re.sub(r"^(?:一名|一个|一位|个|位|名)", "", value)
    return value.endswith(_ZH_JOB_SUFFIX) or bool(re.fullmatch(r"大[一二三四]学生?", value))


def _date_zh(span) -> str:
    return f"（{span.text}：{ruledates.label(span)}）" if span is not None else ""


_ZH_FREQ = re.compile(
    r"(每个?工作日|每个?周末|每逢(?:周|星期|礼拜)?[一二三四五六日天末]|"
    r"每隔[一两二三四五六七八九十几半\d]{1,3}个?(?:天|周|星期|礼拜|月|小时|年)|"
    r"每天(?:早上|早晨|晚上|中午|下午|傍晚|早晚)?|每晚|每早|天天|"
    # "每周二和周四", "每周一三五": several days are one frequency
    r"每个?(?:周|星期|礼拜)[一二三四五六日天](?:[和、及跟](?:周|星期|礼拜)?[一二三四五六日天])+|"
    r"每个?(?:周|星期|礼拜)[一二三四五六日天]?|"
    r"一(?:周|星期|个月|天)(?=.{0,4}?[一两二三四五六七八九十\d]次)|"
    r"每个?月|每年|(?<![这下本])周末(?!的(?!时候))|平时|平常|一般|通常|经常|总是|常常|习惯|"
    r"(?:周|星期)[一二三四五六日天]到(?:周|星期)?[一二三四五六日天]|工作日)"
)
_ZH_CLOCK = re.compile(
    r"(?:早上|晚上|中午|下午|凌晨)?[零一二两三四五六七八九十\d]{1,3}点(?:半|钟)?"
    r"(?P<v>起床|睡觉|上班|下班|吃饭|吃早饭|吃午饭|吃晚饭|午睡|到家|出门)"
)
# How long or when, after a past job: "for ten years", "back in 2015".
_EN_WHEN_BACK = r"\s+for\s+(?:\w+|\d+)\s+years?|\s+(?:back\s+)?in\s+(?:college|\d{4})"
_EN_BACK = rf"(?:{_EN_WHEN_BACK})?"
_ZH_BEFORE = (
    r"以前|之前|过去|曾经|原来|早年|年轻时|年轻的时候|退休前|毕业后|刚毕业的时候|刚毕业时|"
    r"大学的时候|大学时|读书的时候|上学的时候|读研的时候|读研时"
)
_DEGREES = "研究生|本科|博士|硕士|大学|高中|初中|专科"


# What the mind does and what one cannot do are not habits ("总是想起", "总是记不清怎么算").
_ZH_NOT_A_HABIT = re.compile(
    r"^(?:最近|一直)?(?:在)?(?:想|担心|害怕|怕|思念|记不|忘|觉得|感觉|感到|等着|难过|后悔|纠结|犹豫)"
    r"|[^\s]不(?:出来|清|懂|会|明白|进去)"
)
_ZH_PLAN = re.compile(r"(要|打算|准备(?!好)|计划(?!好)|将要|将|预计)")  # "准备好了": ready, done
# A time said before the person: "下周三下午两点", "明天早上八点半", "月底".
_ZH_LEADING_TIME = re.compile(
    r"^(?:(?:下下|下|这|本)(?:个)?(?:周|星期|礼拜)[一二三四五六日天]?|(?:下下|下|这|本)个?月"
    r"(?:[\d一二三四五六七八九十]{1,3}[号日])?|明天|后天|大后天|今晚|明年|今年|月底|月初|周末|"
    r"[\d一二三四五六七八九十]{1,3}月[\d一二三四五六七八九十]{1,3}[号日])"
    r"(?:早上|上午|中午|下午|傍晚|晚上|凌晨)?(?:[零一二两三四五六七八九十\d]{1,3}点(?:半|钟|\d{1,2}分)?)?"
)


class _Zh:
    """One Chinese clause (hedges already removed) and what it says."""

    def __init__(self, text: str, who: Ctx, now: datetime, whole: str = ""):
        self.text, self.who, self.now, self.whole = text, who, now, whole
        self.found: list[RuleCandidate] = []

    def add(self, kind, predicate, content, conf, pattern, imp=0.7):
        self.found.append(make(kind, self.who.subject, predicate, content, conf, imp, pattern))

    def run(self) -> list[RuleCandidate]:
        for step in (self.age, self.move, self.background, self.location, self.relations,
                     self.work, self.food, self.habit, self.plan):  # fmt: skip
            step()
            if self.found:
                break
        return self.found

    def age(self):
        if m := re.fullmatch(rf"我(?:今年|现在)?(?P<n>{_ZH_N})岁了?", self.text):
            self.add("identity", "age", f"{self.who.zh}今年{m['n']}岁", 0.9, "zh:age", 0.6)
        elif m := re.fullmatch(
            r"我(?:这个人)?(?:比较|很|特别|有点|非常|一直|天生|是个?|属于)*(?P<x>怕冷|怕热|怕黑|怕疼|"
            r"怕吵|怕晒|路痴|夜猫子|慢热|起床困难户?|容易紧张|容易晕|早起的人|急性子|慢性子)的?人?",
            self.text,
        ):
            said = zh_about(self.text, self.who)
            self.add("identity", f"trait: {m['x']}", said, 0.85, "zh:trait")
        elif m := re.fullmatch(r"我是(?:个|一个)?(?P<x>左撇子|右撇子|左利手|右利手)", self.text):
            self.add(
                "identity", "handedness", f"{self.who.zh}是{m['x']}", 0.9, "zh:handedness", 0.5
            )

    # -- where they live --------------------------------------------------------------

    def move(self):
        m = re.search(
            r"(?P<v>搬到|搬来|搬去|搬回|搬进|迁到|迁居到|定居到)了?(?P<x>[\u4e00-\u9fffA-Za-z]{1,12})",
            self.text,
        )
        if m is None:
            return
        before = self.text[: m.start()]
        done = self.text[m.end("v") : m.end("v") + 1] == "了"  # "搬到了": it happened
        later = None if done else ruledates.future(before, self.now)
        since = None if later else ruledates.past(before, self.now)
        rest = before
        for span in (later, since):
            if span is not None:
                rest = rest.replace(span.text, "")
        rest = re.sub(r"从[\u4e00-\u9fffA-Za-z]{1,8}$", "", rest)
        rest = re.sub(r"^(?:我们家|我家|我们|咱们|我)", "", rest)
        rest = re.sub(r"(?:我们|我)", "", rest)
        if re.sub(
            r"(?:刚刚|刚|已经|最近|终于|又|要|打算|准备|计划|会|将|就|也|都|春天|夏天|秋天|冬天|"
            r"年初|年底|月初|月底|初|底)",
            "",
            rest,
        ):
            return  # someone else moved ("电影里的主角搬到了巴黎")
        where = _zh_clean(m["x"])
        if not where:
            return
        who = self.who.zh
        if later is not None or re.search(r"要|打算|准备|计划|会|将", before):
            content = f"{who}计划搬到{where}{_date_zh(later)}"
            self.add("fact", "plan: move", content, 0.85, "zh:moving")
            return
        when = ruledates.label(since) if since else f"{self.now:%Y-%m-%d}"
        self.add("fact", "location", f"{who}住在{where}（{when}搬去）", 0.9, "zh:moved")

    def location(self):
        t, who = self.text, self.who.zh
        if m := re.fullmatch(
            r"我(?:已经|现在)?(?:不再|不)(?:住在(?P<x>[\u4e00-\u9fffA-Za-z]{1,12}?)|"
            r"在(?P<y>[\u4e00-\u9fffA-Za-z]{1,12}?)住)了",
            t,
        ):
            self.add("fact", "location", f"{who}不再住在{m['x'] or m['y']}", 0.9, "zh:left")
            return
        if m := re.fullmatch(
            r"我(?:们)?(?:(?:和|跟)[^，。]{1,6}?(?:一起)?)?(?:现在|目前|一直|还|暂时)?"
            r"(?:住在|生活在|居住在|定居在)(?P<x>[^，。]{1,20})|"
            r"我(?:们)?(?:现在|目前)?在(?P<y>[\u4e00-\u9fffA-Za-z]{1,10})(?:住了|生活了|定居了)"
            r".{0,8}",
            t,
        ):
            if where := _zh_clean(m["x"] or m["y"]):
                self.add("fact", "location", f"{who}住在{where}", 0.9, "zh:place")
            return
        if m := re.fullmatch(
            r"我的?(?:老家|家乡)(?:在|是)(?P<x>.{1,12})|我(?:是在|在)(?P<y>.{1,10})长大的?|"
            rf"我是(?P<z>(?:{_PROVINCES})\S{{0,4}}?)人|我来自(?P<w>.{{1,12}})",
            t,
        ):
            if where := _zh_clean(m["x"] or m["y"] or m["z"] or m["w"]):
                self.add("fact", "hometown", f"{who}的家乡是{where}", 0.9, "zh:hometown")

    # -- family, people, pets ---------------------------------------------------------

    def relations(self):
        t, who = self.text, self.who.zh
        if m := re.fullmatch(rf"我(?:和|跟)(?P<n>{_ZH_NAME}?)结婚(?:了|.{{1,6}}了)?", t):
            self.add("fact", "family: spouse", f"{who}和{m['n']}结婚了", 0.9, "zh:married")
            return
        if m := re.fullmatch(rf"我有(?P<c>{_ZH_N})个(?:孩子|小孩)", t):
            self.add("fact", "family: children", f"{who}有{m['c']}个孩子", 0.9, "zh:children")
            return
        if m := re.fullmatch(
            rf"我(?:们|家)?.{{0,6}}?(?:有|养了?|领养了?|收养了?|买了)(?:一|两|1|2)?(?:个|只|条|位)?"
            rf"(?P<r>{_ZH_REL})[，,]?(?:名字)?(?:叫|名叫)(?P<n>{_ZH_NAME})",
            t,
        ):
            self._named(m["r"], m["n"])
            return
        m = re.match(rf"我(?:家)?(?:的)?(?P<r>{_ZH_REL})(?P<rest>.+)$", t)
        if m is None:
            return
        rest = m["rest"]
        if re.match(r"的(?!名字|家乡|老家|生日|工作|职业)", rest):
            return  # "我同事的狗": someone else's
        if n := re.fullmatch(
            rf"(?:的名字|名字)?(?:叫|名叫|叫做|是叫|的名字是|名字是)(?P<n>{_ZH_NAME})", rest
        ):
            self._named(m["r"], n["n"])
            return
        if n := re.match(
            r"(?P<n>(?:小|老|阿)(?!家|公|婆|板|乡|区|时|学)[\u4e00-\u9fff]{1,2}|[A-Z][a-z]+)"
            r"(?=今年|现在|已经|在|上|是|也)",
            rest,
        ):
            self._named(m["r"], n["n"])  # "我儿子小宝上二年级了": a nickname right after
            return
        self._attribute(m["r"], rest)

    def _named(self, word: str, name: str):
        relation = _ZH_RELATIONS[word]
        group = _group(relation)
        name = _zh_clean(name)
        if name and not re.search(r"什么|谁|啥", name):
            self.add("fact", f"{group}: {relation}", f"{self.who.zh}的{word}叫{name}", 0.9,
                     f"zh:{group}")  # fmt: skip

    def _attribute(self, word: str, rest: str):
        relation = _ZH_RELATIONS[word]
        group = _group(relation)
        base, poss = f"{group}: {relation}", f"{self.who.zh}的{word}"
        patterns = (
            (r"的?(?:家乡|老家)(?:在|是)(?P<x>.+)", "hometown", "{p}家乡在{x}"),
            (r"(?:现在|目前)?(?:住在|在(?P<y>.{1,8})住)(?P<x>.*)", "location", "{p}住在{x}"),
            (r"(?:在|去)(?P<x>.{1,12}?)(?:工作|上班)", "employer", "{p}在{x}工作"),
            (rf"(?:今年)?(?P<x>{_ZH_N})岁了?", "age", "{p}今年{x}岁"),
            (
                r"(?:在读|在(?P<y>.{1,10})(?:读书|上学|读研|读博|念书))(?P<x>.*)",
                "school",
                "{p}在读{x}",
            ),
            (r"是(?:一名|一个|一位|个|位|名)?(?P<x>.{1,10})", "occupation", "{p}是{x}"),
            (r"(?:特别|很|最|非常|超)?(?:喜欢|爱)(?P<x>.{1,12})", "likes", "{p}喜欢{x}"),
        )
        for pattern, attribute, phrase in patterns:
            if m := re.fullmatch(pattern, rest):
                value = _zh_clean(m.groupdict().get("y") or m["x"] or "") if attribute in (
                    "location", "school") else _zh_clean(m["x"])  # fmt: skip
                if not value or (attribute == "occupation" and not _zh_job(value)):
                    continue
                content = phrase.format(p=poss, x=value)
                self.add("fact", f"{base}: {attribute}", content, 0.85, f"zh:{group}-{attribute}")
                return
        if (when := ruledates.future(rest, self.now)) is not None:
            event = _zh_clean(rest, [when])
            content = f"{poss}{rest}{_date_zh(when)}"
            self.add("fact", f"plan: {word}{event}", content, 0.85, "zh:event")

    # -- work and school --------------------------------------------------------------

    def work(self):
        t, who = self.text, self.who.zh
        rules = (
            (r"我.{0,4}?从(?P<x>.{1,12}?)离职了?", "employer", "{w}不再在{x}工作", "zh:left-job"),
            (r"我(?:已经|现在)?不(?:再)?在(?P<x>.{1,12}?)(?:工作|上班)了", "employer",
             "{w}不再在{x}工作", "zh:left-job"),
            (r"我(?:已经|现在)?不(?:再)?是(?P<x>.{1,10}?)了", "occupation", "{w}不再是{x}",
             "zh:ex-job"),
            (r"我(?:已经)?退休了?", "occupation", "{w}已经退休", "zh:retired"),
            (r"我(?:现在|目前)?在(?P<x>.{1,12}?)(?:工作|上班)", "employer", "{w}在{x}工作",
             "zh:employer"),
            (r"我(?:现在|目前)?在(?P<x>.{1,12}?)(?:读书|上学|读研|读博|念书|读大学|上大学)",
             "school", "{w}在{x}读书", "zh:school"),
            (r"我是(?P<x>.{1,12}?)毕业的|我毕业于(?P<y>.{1,12})", "school", "{w}毕业于{x}",
             "zh:school"),
            (r"我的?专业是(?P<x>.{1,12})", "major", "{w}的专业是{x}", "zh:major"),
            (r"我是做(?P<x>.{1,10}?)的", "occupation", "{w}是做{x}的", "zh:occupation"),
            (r"我(?:自己)?开了(?P<x>(?:一家|一个|家|个).{1,10})", "occupation", "{w}开了{x}",
             "zh:occupation"),
        )  # fmt: skip
        for pattern, predicate, phrase, name in rules:
            if m := re.fullmatch(pattern, t):
                value = _zh_clean(m.groupdict().get("x") or m.groupdict().get("y") or "")
                value = re.sub(r"^(?:一家|一个|家|个)(?=.{2})", "", value) if predicate == (
                    "employer") else value  # fmt: skip
                if "{x}" in phrase and not value:
                    continue
                if predicate == "occupation" and "不再是" in phrase and not _zh_job(value):
                    continue
                self.add("identity" if predicate == "occupation" else "fact", predicate,
                         phrase.format(w=who, x=value), 0.9, name, 0.8)  # fmt: skip
                return
        if self.past_work():
            return
        if m := re.fullmatch(r"我(?:现在|目前)?在(?P<o>.{1,10}?)教(?P<x>.{1,8})", t):
            content = f"{who}在{_zh_clean(m['o'])}教{_zh_clean(m['x'])}"
            self.add("identity", "occupation", content, 0.9, "zh:occupation", 0.8)
            return
        if m := re.fullmatch(r"我(?:现在|目前)?在(?P<o>.{1,10}?)(?:做|当|担任)(?P<j>.{1,10})", t):
            org, job = _zh_clean(m["o"]), _zh_clean(m["j"])
            self.add("fact", "employer", f"{who}在{org}工作", 0.9, "zh:employer", 0.8)
            self.add("identity", "occupation", f"{who}是{job}", 0.9, "zh:occupation", 0.8)
            return
        if m := re.fullmatch(r"我(?:现在|目前)?是(?P<x>(?:一名|一个|一位|个|位|名)?.{1,12})", t):
            job = _zh_clean(m["x"])
            if _zh_job(job):
                self.add("identity", "occupation", f"{who}是{job}", 0.9, "zh:occupation", 0.8)
                return
        if m := re.search(
            r"(?:换工作|跳槽|换了(?:一份)?新?工作|找到了新工作)了?[，,]\s*(?:现在)?(?:在|去了)"
            r"(?P<x>[^，。]{1,10})",
            self.whole,
        ):
            if t.startswith(("现在在", "现在去了", "在", "去了")) and (org := _zh_clean(m["x"])):
                org, _, job = re.sub(r"(?:做|当|担任|干)", "|", org, count=1).partition("|")
                self.add("fact", "employer", f"{who}在{org}工作", 0.9, "zh:employer", 0.8)
                if job and _zh_job(job):  # "现在在美团做运营"
                    self.add("identity", "occupation", f"{who}是{job}", 0.9, "zh:occupation", 0.8)

    def past_work(self) -> bool:
        """What the person did before and where they studied, said with a time: "我以前在
        新东方当过英语老师" (`past employer`, `past occupation`: not what they do now), "我
        2019年从武汉大学毕业" (`school`, the year kept in the content)."""
        t, said = self.text, zh_about(self.text, self.who)
        if m := re.fullmatch(
            rf"我(?:[^，。从]{{0,8}}?)?从(?P<x>[^，。]{{2,12}}?)(?:{_DEGREES})?毕业(?:的|了)?", t
        ):
            school = _zh_clean(m["x"])
            if school and not re.fullmatch(rf"{_DEGREES}|小学|幼儿园|什么.*|哪.*", school):
                when = ruledates.past(t, self.now)
                self.add("fact", "school", said + (_date_zh(when) if when else ""), 0.88,
                         "zh:school-from", 0.8)  # fmt: skip
                return True
        m = re.fullmatch(
            rf"我(?:{_ZH_BEFORE})(?:也|还|曾|曾经)?(?:在(?P<o>[^，。]{{1,12}}?)(?:(?:做|当|干)过?"
            r"(?:一名|一个|一位|几年|一段时间|两年)?(?P<j>[^，。]{1,10})|(?:(?:工作|上班|打工|实习|任职)过?|"
            r"打过工|上过班)"
            r"(?:[\d一二两三四五六七八九十几半]{1,3}个?(?:年|月)多?)?)|(?:是|当过|做过|干过)(?:一名|一位|一个)?"
            r"(?P<k>[^，。]{1,10}))",
            t,
        )
        if m is None or re.search(r"什么|哪|谁", t):
            return False
        job = _zh_clean(m["j"] or m["k"] or "")
        if m["k"] and not _zh_job(job):
            return False  # "我以前是个胖子": what they were like, not a job
        if m["o"] and _zh_clean(m["o"]):
            self.add("fact", "past employer", said, 0.88, "zh:past-employer", 0.6)
        if job and _zh_job(job):
            self.add("fact", "past occupation", said, 0.88, "zh:past-occupation", 0.6)
        return bool(m["o"] or job)

    def background(self) -> bool:
        """Where they grew up and what they studied: "我小时候在外婆家长大", "我大学学的是金融"
        (skills, languages, loans and how long they have worked or been married are the
        learned extractor's)."""
        t, said = self.text, zh_about(self.text, self.who)
        if re.search(r"什么|哪|谁|吗|呢", t):
            return False
        rules = (
            (r"我(?:从小|小时候|是)?在(?P<x>[^，。]{2,12}?)(?:出生(?:并|和)?)?长大的?", "hometown",
             "zh:grew-up"),
            (r"我(?:大学|本科|研究生|硕士|博士|读研|读博)?(?:的时候)?(?:学|读|念|选)的(?:专业)?是"
             r"(?P<x>[^，。]{2,12}?)(?:专业)?", "major", "zh:major"),
        )  # fmt: skip
        for pattern, attribute, name in rules:
            if (m := re.fullmatch(pattern, t)) and _zh_clean(m["x"]):
                self.add("fact", attribute, said, 0.85, name, 0.6)
                return True
        return False

    # -- food, diet, allergies ----------------------------------------------------------

    def food(self):
        t, who = self.text, self.who.zh
        # "我喝牛奶会拉肚子": what does not agree with them, kept with the allergies.
        if m := re.fullmatch(
            r"我(?:一)?(?:喝|吃)(?P<x>[\u4e00-\u9fff]{1,5}?)(?:就|会|容易|都会|就会)+"
            r"(?P<y>拉肚子|过敏|胃疼|胃痛|肚子疼|头疼|头痛|长痘|胀气|不舒服|起疹子|呕吐|失眠)了?",
            t,
        ):
            thing = _zh_clean(m["x"])
            self.add("preference", f"allergy: {key(thing)}", zh_about(t, self.who), 0.88,
                     "zh:intolerance", 0.9)  # fmt: skip
            return
        # "我最近迷上了做手工": a new liking.
        if m := re.fullmatch(
            r"我(?:最近|这段时间|这阵子|今年)?(?:迷上了|爱上了|喜欢上了)(?P<x>[^，。]{1,12})", t
        ):
            thing = _zh_clean(m["x"])
            self.add("preference", f"preference: {zh_key(thing)}", zh_about(t, self.who), 0.85,
                     "zh:taken-to")  # fmt: skip
            return
        # "我养了两只猫", "我们家有三口人": how many.
        if m := re.fullmatch(
            r"我(?:家|们家)?(?:养了|有)(?P<n>一|两|二|三|四|五|几)(?:只|条|个)(?P<x>猫|狗|兔子|仓鼠|鹦鹉)",
            t,
        ):
            relation = _ZH_RELATIONS[m["x"]]
            self.add("fact", f"pet: {relation}: count", zh_about(t, self.who), 0.88, "zh:pets")
            return
        if re.fullmatch(r"我(?:现在|已经)?不再吃素了?|我(?:现在)?不吃素了", t):
            self.add("preference", "diet", f"{who}不再吃素", 0.9, "zh:diet")
            return
        if m := re.fullmatch(
            r"我(?:现在|已经|也)?(?P<x>吃素|吃全素|吃斋|是素食主义者|是素食者)"
            r"(?:已经|都)?(?:有)?(?:[\d一二两三四五六七八九十几]{1,3}年(?:多)?)?了?",
            t,
        ):
            self.add("preference", "diet", f"{who}{m['x']}", 0.9, "zh:diet")
            return
        if m := re.fullmatch(
            r"我对(?P<x>.{1,10}?)(?:有点|有些|轻微|轻度|严重|很|特别)?过敏|"
            r"我(?P<y>[\u4e00-\u9fff]{1,6}?)过敏|我(?P<z>乳糖|麸质|酒精)不耐受",
            t,
        ):
            thing = _zh_clean(m["x"] or m["y"] or m["z"])
            said = f"{who}{thing}不耐受" if m["z"] else f"{who}对{thing}过敏"
            self.add("preference", f"allergy: {key(thing)}", said, 0.92, "zh:allergy", 0.9)
            return
        if m := re.fullmatch(
            r"我(?:已经)?.{0,5}?戒(?:了)?(?P<x>烟|酒|糖|咖啡|奶茶|茶|[\u4e00-\u9fff]{1,4}?)(?:了|.{1,4}了)?",
            t,
        ):
            thing = m["x"]
            verb = _ZH_QUIT_VERB.get(thing, f"吃{thing}")
            self.add("preference", f"preference: {zh_key(thing)}",
                     f"{who}不再{verb}（已戒{thing}）", 0.9, "zh:quit")  # fmt: skip
            return
        if m := re.fullmatch(
            r"我(?:现在|已经)?(?:不再|不)(?P<v>吃|喝|抽|碰)(?P<x>.{1,10}?)了|我不再(?P<w>吃|喝|抽)(?P<y>.{1,10}?)了?",
            t,
        ):
            verb, thing = m["v"] or m["w"], _zh_clean(m["x"] or m["y"])
            if thing:
                self.add("preference", f"preference: {zh_key(thing)}", f"{who}不再{verb}{thing}",
                         0.9, "zh:changed-mind")  # fmt: skip
            return
        if m := re.fullmatch(r"我(?P<d>不太|不怎么|不大|不是很|不)能(?P<v>吃|喝)(?P<x>.{1,10})", t):
            thing = _zh_clean(m["x"])  # "我不太能吃辣": what they cannot take, said mildly
            if thing and not re.match(r"(?:饭|东西|饱|多|太|完)", thing):
                self.add("preference", f"preference: {zh_key(thing)}",
                         f"{who}{m['d']}能{m['v']}{thing}", 0.88, "zh:diet")  # fmt: skip
            return
        if m := re.fullmatch(
            r"我(?P<a>从来|从|一直|平时|基本|基本上|几乎|一般)?(?:不(?P<v>吃|喝|抽)|(?P<w>吃|喝)不了)"
            r"(?P<x>.{1,10})",
            t,
        ):
            thing, verb = _zh_clean(m["x"]), m["v"] or f"{m['w']}不了"
            said = f"{who}{m['a'] or ''}{'不' + verb if m['v'] else verb}{thing}"
            if thing and not re.match(r"(?:饭|东西|饱)$", thing):
                self.add("preference", f"preference: {zh_key(thing)}", said, 0.9, "zh:diet")
            return
        if m := re.fullmatch(
            r"我最(?:喜欢|爱)(?P<v>吃|喝|看|听|玩|用|去|读)?的(?P<k>.{1,6}?)是(?P<x>.{1,20})", t
        ):  # "我最爱吃的水果是榴莲": the favourite fruit (the verb only says how)
            said = f"{who}最喜欢{m['v'] or ''}的{m['k']}是{_zh_clean(m['x'])}"
            self.add("preference", f"favourite {m['k']}", said,
                     0.9, "zh:favourite")  # fmt: skip

    # -- habits -----------------------------------------------------------------------

    def habit(self):
        t, who = self.text, self.who.zh
        if (m := re.fullmatch(r"我(?:已经|现在)?不再(?P<x>.{2,12}?)了?", t)) and m["x"][0] != "是":
            self.add("preference", f"habit: {_zh_clean(m['x'])}", f"{who}不再{_zh_clean(m['x'])}",
                     0.85, "zh:habit-ended")  # fmt: skip
            return
        if re.search(r"(?:这|下|本|上)(?:个)?周末|明天|后天|下周|(?<![都总])要|打算|准备|计划", t):
            return  # a plan, not a habit ("每个周末都要…" is still one)
        freq, clock = _ZH_FREQ.search(t), _ZH_CLOCK.search(t)
        if not freq and not clock:
            return
        subject = re.sub(r"^(?:每\S{0,4}?|周末|平时|一般|通常)?", "", t)
        if not (t.startswith(("我", "每", "周末", "平时", "一般", "通常")) or "我" in t[:8]):
            return
        if re.search(r"(?:(?<![吉其])他|她|你|小明|老板)", subject):  # not 吉他, 其他
            return
        if not self._habit_is_theirs(t, freq or clock):
            return
        activity = _ZH_FREQ.sub("", t)
        # The person and the adverbs around the time phrase go ("我都会去爬山" -> "去爬山");
        # a 会 inside the activity stays ("开会").
        activity = re.sub(
            r"^我(?:们|的)?|我(?=都|会|也)|(?:早上|晚上|中午|下午|凌晨)", "", activity
        )
        activity = re.sub(r"^(?:以前|过去|原来|曾经|之前)", "", activity)  # the same habit, then
        activity = re.sub(r"^(?:我|都|也|会|还|要|固定)+", "", activity)
        activity = _ZH_CLOCK.sub(lambda c: c["v"], activity)
        activity = _zh_clean(activity)
        if not activity or re.match(r"(?:很|太|特别|非常|有点|比较|挺|好|超)", activity):
            return  # "我每周一都很忙": how it feels, not a habit
        if _ZH_NOT_A_HABIT.search(activity):
            return  # "我总是担心…", "我总是算不出来": a worry or a struggle, not a habit
        if re.search(r"(?:很|太|特别|非常|挺|好|超)(?:忙|累|闲|困|烦|辛苦|开心|无聊)", activity):
            return  # "我老公每天都很忙": how someone feels, not what they do
        if re.match(r"[^，。]{1,6}的", activity):
            return  # "我常去的那家面包店周末会打折": the shop's habit, not the person's
        content = zh_about(t if "我" in t else who + t, self.who)
        self.add("preference", f"habit: {activity}", content, 0.85, "zh:habit", 0.6)

    def _habit_is_theirs(self, t: str, when: re.Match) -> bool:
        """Who keeps the habit: before its time word only the person ("我", "我们", "我的X"
        for their things' routines) or nobody, and a clause with no subject of its own must
        not go on about someone else ("他干活总是…，平时还喜欢抄作业")."""
        head = t[: when.start()]
        if head and not head.startswith("我"):
            return False  # "叔叔总是说我…", "看到很多我平时看不到的…"
        if head:
            return True
        before = self.whole[: max(self.whole.find(t), 0)]
        return not re.search(r"(?<![吉其])他|她|同学|朋友|[A-Z][a-z]+", before)

    # -- plans and events -------------------------------------------------------------

    def plan(self):
        t = self.text
        when = ruledates.future(t, self.now)
        if m := re.fullmatch(
            r"(?P<w>[\u4e00-\u9fffA-Za-z0-9]{2,20}?)(?:的时间是|定在|定于|将在|将于)(?P<t>.+?)"
            r"(?:举行|开始|举办|召开)?",
            t,
        ):
            if when is not None and not re.match(r"(?:他|她|你)", m["w"]):
                event = _zh_clean(m["w"])
                content = f"{zh_about(event, self.who)}：{m['t']}{_date_zh(when)}"
                self.add("fact", f"plan: {zh_about(event, self.who)}", content, 0.85, "zh:event")
            return
        said_by = _ZH_LEADING_TIME.sub("", t)  # "下周三下午两点我要去医院复查": the time first
        if (not said_by.startswith("我") and "我" not in t[:6]) or said_by.startswith("我的"):
            return  # someone else's plan, or a date about a thing ("我的护照八月到期")
        plan = _ZH_PLAN.search(t)
        firm = plan is not None and plan[0] in ("打算", "准备", "计划")
        if when is None and not firm:
            return
        if plan is None and when is None:
            return
        what = t[plan.end() :] if plan else t
        what = _zh_clean(what.replace(when.text, "") if when else what)
        what = re.sub(r"^(?:我们|我)", "", what)
        if not what or (plan is None and not re.search(r"[去回飞到见开做参加结婚出差考约]", what)):
            return
        content = zh_about(t, self.who) + _date_zh(when)
        self.add("fact", f"plan: {what}", content, 0.85, "zh:plan")


def chinese(text: str, who: Ctx, now: datetime, whole: str = "") -> list[RuleCandidate]:
    return _Zh(text, who, now, whole).run()


# What lifecycle.extraction.rules_attrs and rules_attrs_en share with the patterns above.
group_of, zh_clean, date_zh, en_clean, date_en = _group, _zh_clean, _date_zh, _en_clean, _date_en
zh_job = _zh_job
