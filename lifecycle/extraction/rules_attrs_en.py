"""Statements about the people, things, places and events in a person's life, in English
(pure patterns, no Django; the Chinese ones and the reasoning are in rules_attrs).

"My boss's height is 1.68 m", "my new phone is a Huawei Mate 60", "the gym I go to is across
from the office", "the team dinner will be at the Hilton", "about fifty people will attend the
offsite", "I'm hosting the project review". A subject phrase is read by its head noun (a
relation, an item, a place or an event); the attribute comes from an attribute word ("'s
height is", "the topic of ... is") or from the verb ("cost", "is called", "is across from").
Predicates match the Chinese ones: "people: boss: height", "item: phone: price",
"place: gym", "event: team dinner: place", and "plan: team dinner" for an event's time.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from lifecycle.extraction import ruledates
from lifecycle.extraction.rulebase import Ctx, RuleCandidate, key, make, third
from lifecycle.extraction.rules_life import EN_RELATIONS, JOB_WORDS, date_en, en_clean, group_of

PEOPLE_ATTRS = {
    "name": "name", "full name": "name", "first name": "name", "last name": "surname",
    "surname": "surname", "age": "age", "height": "height", "weight": "weight",
    "birthday": "birthday", "date of birth": "birthday", "hometown": "hometown",
    "address": "address", "company": "company", "employer": "company",
    "workplace": "work place", "office": "work place", "job": "occupation",
    "occupation": "occupation", "profession": "occupation", "position": "position",
    "title": "position", "job title": "position", "role": "position",
    "education": "education", "degree": "education", "major": "major", "school": "school",
    "university": "school", "college": "school", "hobby": "hobby", "hobbies": "hobby",
    "phone number": "phone", "phone": "phone", "number": "phone", "mobile": "phone",
    "cell": "phone", "email": "email", "email address": "email",
    "personality": "personality", "star sign": "zodiac sign", "zodiac sign": "zodiac sign",
    "blood type": "blood type", "grade": "grade",
}  # fmt: skip
ITEM_ATTRS = {"brand": "brand", "model": "model", "colour": "colour", "color": "colour",
              "price": "price", "size": "size", "name": "name", "range": "range",
              "battery life": "battery", "capacity": "capacity", "memory": "memory",
              "storage": "storage", "weight": "weight", "mileage": "mileage"}  # fmt: skip
PLACE_ATTRS = {
    "name": "name", "address": "address", "location": "address",
    "opening hours": "opening hours", "hours": "opening hours", "phone number": "phone",
    "specialty": "features", "speciality": "features",
}  # fmt: skip
EVENT_ATTRS = {
    "time": "time", "date": "time", "start time": "time", "venue": "place",
    "location": "place", "place": "place", "topic": "topic", "theme": "topic",
    "agenda": "agenda", "host": "host", "organizer": "organiser", "organiser": "organiser",
    "dress code": "dress code", "budget": "cost", "cost": "cost", "size": "scale",
    "registration deadline": "deadline", "deadline": "deadline", "sign-up deadline": "deadline",
    "entry fee": "cost", "fee": "cost", "ticket price": "cost", "registration fee": "cost",
    "duration": "duration", "length": "duration", "meeting point": "meeting point",
    "prize": "prize", "route": "route", "format": "format", "destination": "destination",
}  # fmt: skip
ITEMS = (
    "phone", "smartphone", "laptop", "computer", "pc", "tablet", "ipad", "kindle", "bike",
    "bicycle", "e-bike", "scooter", "car", "motorcycle", "motorbike", "watch", "smartwatch",
    "backpack", "bag", "handbag", "wallet", "camera", "headphones", "earbuds", "earphones",
    "speaker", "vacuum", "robot vacuum", "tv", "television", "fridge", "sofa", "couch",
    "guitar", "piano", "keyboard", "mouse", "monitor", "desk", "chair", "jacket", "coat",
    "shoes", "sneakers", "boots", "glasses", "sunglasses", "ring", "necklace", "bracelet",
    "drone", "console", "printer", "umbrella", "suitcase", "mattress", "bed", "lamp",
    "mug", "bottle", "water bottle", "scarf", "hat", "dress", "coffee machine", "phone case",
)  # fmt: skip
PLACES = (
    "gym", "café", "cafe", "coffee shop", "restaurant", "bar", "pub", "supermarket",
    "grocery store", "store", "shop", "mall", "park", "hospital", "clinic", "school",
    "kindergarten", "library", "bookstore", "bookshop", "bank", "canteen", "cafeteria",
    "market", "pool", "swimming pool", "stadium", "cinema", "theater", "theatre", "hotel",
    "station", "subway station", "metro station", "bus stop", "parking lot", "church",
    "temple", "museum", "gallery", "salon", "barber", "barbershop", "bakery", "pharmacy",
    "office", "studio", "noodle shop", "diner", "pizzeria", "playground", "court",
    "company", "department", "campus", "dorm", "factory", "warehouse", "shop", "convenience store",
    "laundromat", "bakery", "restaurant", "market", "daycare", "university", "college",
    "place", "spot", "joint", "food court", "food truck", "deli", "bistro", "tea house",
    "apartment", "flat", "condo",
)  # fmt: skip
EVENTS = (
    "dinner", "lunch", "party", "meeting", "review", "offsite", "off-site", "conference",
    "workshop", "wedding", "reunion", "ceremony", "concert", "trip", "retreat", "gathering",
    "celebration", "seminar", "talk", "presentation", "interview", "exam", "game", "match",
    "tournament", "festival", "fair", "show", "exhibition", "meetup", "hackathon", "kickoff",
    "kick-off", "appointment", "picnic", "barbecue", "bbq", "banquet", "gala", "launch",
    "recital", "graduation", "marathon", "race", "checkup", "check-up", "book club",
    "team building", "team-building", "standup", "sync", "webinar", "training",
    "charity run", "fun run", "fundraiser", "bake sale", "open day", "open house", "camp",
    "tour", "parade", "carnival", "potluck", "quiz night", "game night", "club",
)  # fmt: skip


def _alt(words) -> str:
    return "|".join(sorted(map(re.escape, words), key=len, reverse=True))


_REL = _alt(EN_RELATIONS)
# A qualifier before someone of the people group says which one: "my college roommate",
# "my former boss", "my ex-colleague". Not before family ("my old man" is not "old father").
QUALIFIERS = {
    "college": "college", "university": "college", "uni": "college",
    "high school": "high school", "middle school": "middle school",
    "primary school": "primary school", "elementary school": "primary school",
    "grad school": "graduate school", "former": "former", "ex-": "former", "ex": "former",
    "old": "old", "childhood": "childhood", "current": "current", "work": "work",
}  # fmt: skip
_PEOPLE_REL = _alt(k for k, v in EN_RELATIONS.items() if group_of(v) == "people")
# A person named by what they do for the person: "my personal trainer", "my financial
# advisor", "our nanny" (keyed by the words: "people: personal trainer: height").
ROLE_ENDS = (
    "trainer", "advisor", "adviser", "instructor", "tutor", "nanny", "lawyer", "attorney",
    "accountant", "doctor", "physician", "physio", "physiotherapist", "pediatrician",
    "dermatologist", "driver", "chauffeur", "realtor", "agent", "housekeeper", "babysitter",
    "cleaner", "hairdresser", "barber", "stylist", "caregiver", "nurse", "coach",
    "counsellor", "counselor", "consultant", "planner", "secretary", "assistant",
    "dentist", "vet", "veterinarian", "plumber", "electrician", "mechanic", "optician",
    "pharmacist", "psychiatrist", "psychologist", "gardener", "handyman", "piano teacher",
    "dog walker", "pediatrist", "surgeon", "midwife", "gp", "buddy", "pal",
)  # fmt: skip
_ROLE = rf"(?:(?!(?:{_REL})\b)[a-z-]+\s+)?(?:{_alt(ROLE_ENDS)})"
_QUALIFIED = re.compile(
    rf"^(?P<my>my|our)\s+(?P<q>{_alt(QUALIFIERS)})\s*(?=(?:{_PEOPLE_REL})\b)", re.I
)
_MOD = r"(?:(?P<mod>older|younger|little|big|eldest|oldest|youngest|twin)\s+)?"
_IS = r"(?:is|was|are|were|'s|will be|is going to be)"
_TIME = re.compile(
    r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\bo'clock\b|\bnoon\b|\bmidnight\b|"
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\btomorrow\b|\btonight\b",
    re.I,
)
_PAST = re.compile(
    r"^(?:\w+ed|bought|got|paid|spent|gave|was|were|had|did|went|made|took|"
    r"will|can|could|would|should|might|must)$",
    re.I,
)


def said(text: str, who: Ctx) -> str:
    """The clause said of the person: "I'm hosting" -> "The user is hosting", "the gym I go
    to" -> "the gym the user goes to", "my" -> "the user's" (then "their")."""
    person = who.en if who.en != "The user" else "the user"
    poss = who.en_poss if who.en != "The user" else "the user's"
    if m := re.search(r"\bI(?:'ve|’ve| have)\s+(?=been|had|worked|lived|owned|used)", text):
        rest = re.sub(r"\bmy\b|\bour\b", "their", text[m.end() :], flags=re.I)
        text = f"{text[: m.start()]}{person} has {rest}"  # "I've been learning …"
    elif m := re.search(r"\bI(?:'m| am)\s+|\bI\s+", text):
        rest = text[m.end() :]
        if m[0].strip() != "I":
            rest = "is " + re.sub(r"\bmy\b|\bour\b", "their", rest, flags=re.I)
        elif not _PAST.match(rest.split()[0] if rest.split() else ""):
            rest = third(rest)
        else:
            rest = re.sub(r"\bmy\b|\bour\b", "their", rest, flags=re.I)
        text = f"{text[: m.start()]}{person} {rest}"
    text = re.sub(r"\bmy\b|\bour\b", poss, text, flags=re.I)
    text = re.sub(r"\bme\b|\bus\b", person, text, flags=re.I)
    return text[:1].upper() + text[1:]


def _add(who: Ctx, predicate: str, text: str, conf: float, pattern: str) -> list[RuleCandidate]:
    return [make("fact", who.subject, predicate, said(text, who), conf, 0.6, pattern)]


# --------------------------------------------------------------------------------------
# People: "my boss's height is ...", "my brother works as a nurse", "my cousin is studying ..."
# --------------------------------------------------------------------------------------

_PERSON = re.compile(
    rf"^(?:my|our)\s+{_MOD}(?P<r>{_REL}|{_ROLE})(?:'s|’s|s'|s’)\s+(?P<a>{_alt(PEOPLE_ATTRS)})\s+"
    rf"{_IS}\s+"
    rf"(?:on\s+)?(?P<x>.+)$|"
    rf"^(?:my|our)\s+{_MOD.replace('mod', 'mod2')}(?P<own>(?:{_REL})(?:'s|’s)\s+)?"
    rf"(?P<r2>{_REL}|{_ROLE})(?P<rest>(?:'s|’s)?\s+.+)$",
    re.I,
)
_PERSON_SAID = (
    (r"(?:is|'s)\s+(?P<x>[\d.]+\s*(?:m|cm|meters?|metres?|feet|foot|ft)\b.*?)\s*tall", "height"),
    (r"(?:is|'s)\s+(?P<x>\d'\s*\d{1,2}\"?)(?:\s+tall)?", "height"),
    (r"works\s+as\s+(?:a|an)\s+(?P<x>.+)", "occupation"),
    (r"used\s+to\s+(?:be|work\s+as)\s+(?:a|an)\s+(?P<x>.+)", "past occupation"),
    (r"used\s+to\s+work\s+(?:at|for|in)\s+(?P<x>.+)", "past employer"),
    (r"(?:'s|’s)\s+(?:house|home|place)\s+(?:is|was)\s+(?P<x>(?:in|on|at|near|by)\s+.+)", "home"),
    (r"(?:is|'s)\s+(?:studying|doing\s+(?:a|an|his|her|their)\s+\w+)\s+(?P<x>.+\s+(?:at|in)\s+.+)",
     "school"),
    (r"(?:is|'s)\s+in\s+(?P<x>(?:\w+\s+grade|grade\s+\w+|year\s+\w+|(?:first|second|third|"
     r"fourth|final)\s+year.*))", "grade"),
    (r"(?:is|'s)\s+(?:an?\s+)?(?:very\s+|really\s+|quite\s+|pretty\s+|super\s+)?(?P<x>outgoing|"
     r"shy|introverted|extroverted|easygoing|easy-going|strict|funny|kind|patient|quiet|cheerful|"
     r"friendly|stubborn|calm|laid-back|serious)(?:\s+(?:guy|person|man|woman|lady|dude|boss))?",
     "personality"),
    (r"(?:goes\s+to|does|plays|practi[cs]es|takes)\s+(?P<x>[\w\s-]{2,30}?)\s+(?:every|each|twice|"
     r"once|on)\s+\w+.*", "habit"),
    (r"(?:now\s+|currently\s+|still\s+)?works\s+(?:at|for)\s+(?P<x>[^,;]+?)"
     r"(?:\s+(?:now|these days|at the moment))?", "employer"),
    (r"(?:is|'s)\s+(?:now\s+)?(?:working|employed)\s+(?:at|for|by)\s+(?P<x>.+)", "employer"),
    (r"graduated\s+from\s+(?P<x>.+)", "school"),
    (r"(?:turns|turned|will\s+turn|is\s+turning|just\s+turned)\s+(?P<x>\d{1,3})\b.*", "age"),
    (r"are\s+(?P<x>\d{1,2}(?:,\s*\d{1,2})*\s+and\s+\d{1,2})(?:\s+years\s+old)?", "age"),
    (r"(?:just\s+|recently\s+|has\s+)?(?:moved|relocated)\s+to\s+(?P<x>(?-i:[A-Z]).+)", "location"),
    (r"(?:was|were)\s+born\s+(?:in|on)\s+(?P<x>(?:\d{4}|(?:January|February|March|April|May|June|"
     r"July|August|September|October|November|December)\b).*)", "birthday"),
    (r"(?:was|were)\s+born\s+in\s+(?P<x>(?-i:[A-Z]).+)", "birthplace"),
    (r"(?:is|'s|are)\s+(?P<x>(?:\w+|\d+|a)\s+(?:years?|months?)\s+(?:younger|older)\s+than\s+me)",
     "age gap"),
    (r"(?:is|are|'s|comes?)\s+(?:originally\s+)?from\s+(?P<x>(?-i:[A-Z]).+)", "hometown"),
    (r"(?:lives?|is\s+living)\s+in\s+(?P<x>(?-i:[A-Z]).+)", "location"),
    (rf"(?:is|'s)\s+(?:now\s+)?(?:a|an)\s+(?P<x>(?:[\w-]+\s+){{0,2}}(?:{_alt(JOB_WORDS)})\b.*)",
     "occupation"),
    (r"(?:is|'s)\s+(?:called|named)\s+(?P<x>.+)", ""),
    # Round 6: a name with a title ("is Mrs. Patel", "is Dr Chen"), children, allergies,
    # diet, what they drive, how long they have worked somewhere.
    (r"(?:is|'s)\s+(?P<x>(?:Mr|Mrs|Ms|Miss|Dr|Prof|Professor|Coach)\.?\s+(?-i:[A-Z])[\w'-]+)"
     r"(?:\s+(?:on|at|in)\s+.+)?", ""),
    (rf"(?:was|used\s+to\s+be)\s+(?:a|an)\s+(?P<x>(?:[\w-]+\s+){{0,2}}(?:{_alt(JOB_WORDS)}))\b.*",
     "past occupation"),
    (r"teaches\s+(?P<x>[\w' -]{2,30})", "subject taught"),
    (r"has\s+(?P<x>(?:one|two|three|four|five|\d)\s+(?:kids?|children|sons?|daughters?|"
     r"grandkids|grandchildren))\b.*", "children"),
    (r"(?:is|'s)\s+(?:severely\s+|very\s+|mildly\s+)?allergic\s+to\s+(?P<x>.+)", "allergy"),
    (r"(?:is|'s)\s+(?P<x>vegetarian|vegan|pescatarian|gluten-free|lactose\s+intolerant)", "diet"),
    (r"(?:doesn't|does\s+not|never)\s+(?P<x>(?:eat|drink|smoke)\b.*)", "diet"),
    (r"drives\s+(?:a|an)\s+(?P<x>.+)", "car"),
    (r"(?:just\s+|recently\s+)?started\s+(?:a\s+new\s+job\s+|working\s+)?at\s+(?P<x>(?-i:[A-Z]).+)",
     "employer"),
    (r"speaks\s+(?P<x>(?-i:[A-Z])\w+(?:(?:,\s*|\s+and\s+)(?-i:[A-Z])\w+)*)(?:\s+fluently)?",
     "languages"),
    (r"(?:was|were)\s+born\s+(?P<x>last\s+\w+|yesterday|\w+\s+(?:days|weeks|months)\s+ago)",
     "birthday"),
    (r"(?:is|'s)\s+(?:based\s+)?in\s+(?P<x>(?-i:[A-Z]).+)", "location"),
    (r"are\s+both\s+(?P<x>(?:retired\s+)?[\w-]+s)", "occupation"),
    (r"(?:is|'s)\s+(?:now\s+)?learning\s+(?:to\s+|how\s+to\s+)?"
     r"(?!a\s+lot|so\s+much|fast|quickly|quick|new\s+things|a\s+bit|slowly)(?P<x>[\w' -]{2,30})",
     "learning"),
    (r"(?:just\s+|recently\s+)?started\s+(?P<x>kindergarten|preschool|daycare|nursery|school|"
     r"(?:first|second|third)\s+grade|college|university|high\s+school|middle\s+school)", "grade"),
    (r"(?:had|has\s+had)\s+(?P<x>(?:a\s+|an\s+)?[\w-]+\s+(?:surgery|operation|replacement))\b.*",
     "health"),
    (r"(?:has\s+)?(?:worked|been\s+working|taught)\s+(?:at|for|in)\s+(?P<x>.+?\s+for\s+"
     r"(?:\w+|\d+)\s+years?)", "years in work"),
    (r"(?:now\s+)?(?:runs|owns|opened|has\s+opened|started|manages)\s+(?:a|an|his\s+own|her\s+own|"
     r"their\s+own)\s+(?P<x>(?:[\w'-]+\s+){0,3}(?:shop|store|restaurant|café|cafe|bakery|bar|"
     r"business|company|firm|agency|studio|salon|clinic|practice|startup|gym|farm|hotel|"
     r"bookstore|school)\b.*)", "business"),
)  # fmt: skip


def people(text: str, who: Ctx, now: datetime | None = None) -> list[RuleCandidate]:
    """A person and what is said of them; a qualifier ("college", "former") joins the key."""
    q = _QUALIFIED.match(text)
    if q is None:
        return _people(text, who, now=now)
    found = _people(f"{q['my']} {text[q.end() :]}", who, QUALIFIERS[q["q"].lower()], now)
    return [replace(c, content=said(text, who)) for c in found]


def _people(text: str, who: Ctx, qualifier: str = "", now=None) -> list[RuleCandidate]:
    m = _PERSON.match(text)
    if m is None:
        return []
    word = m["r"] or m["r2"]
    relation = EN_RELATIONS.get(word.lower(), word.lower())  # a role is its own words
    group, mod = group_of(relation), m["mod"] or m["mod2"]
    if m["own"]:  # "my son's piano teacher": someone of the person's, through a relative
        owner = m["own"].strip()[:-2].strip("'’ ").lower()
        if group == "pet" or group_of(EN_RELATIONS.get(owner, owner)) == "pet":
            return []  # "my sister's dog": hers, not the person's
        relation, group = f"{EN_RELATIONS.get(owner, owner)}'s {relation}", "people"
    base = f"{group}: {qualifier + ' ' if qualifier else ''}{mod.lower() + ' ' if mod else ''}"
    base += relation
    if m["a"]:
        attribute, value = PEOPLE_ATTRS[m["a"].lower()], en_clean(m["x"])
        predicate = base if attribute == "name" else f"{base}: {attribute}"
        return _add(who, predicate, text, 0.88, f"en:{group}-attribute") if value else []
    rest = m["rest"].strip(". ")
    if group == "people" and (n := re.match(rf"(?P<n>{_NAME})\s+(?=[a-z'])", rest)):
        base, rest = f"{base} ({n['n']})", rest[n.end() :]  # "my colleague Sarah works at ..."
    for pattern, attribute in _PERSON_SAID:
        if re.fullmatch(pattern, rest, re.I):
            predicate = f"{base}: {attribute}" if attribute else base
            found = _add(who, predicate, text, 0.88, f"en:{group}-attribute")
            # "turns 50 next month" is dated ahead; "turned 70 in March" is past
            said_past = re.match(r"(?:just\s+)?turned\b", rest, re.I)
            dated = ruledates.past if said_past else ruledates.future
            if attribute == "age" and (when := dated(rest, now or datetime.now())):
                found = [replace(c, content=c.content + date_en(when)) for c in found]
            return found
    if group == "pet" and (b := _BREED.fullmatch(rest)):
        return _add(who, f"{base}: breed", text, 0.85, "en:pet-attribute") if b else []
    return _unknown_attribute(m["rest"], base, group, text, who)


_NAME = r"(?-i:[A-Z][a-z'’-]+)"
# A pet "is a" its breed; not "a good boy", "a real handful".
_BREED = re.compile(
    r"(?:is|'s)\s+(?:a|an)\s+(?!(?:good|bad|very|real|total|little|big|sweet|cute|lovely|bit|lot|"
    r"handful|rescue|baby|member|part)\b)(?P<x>[\w -]{3,30})",
    re.I,
)
_OWNED = re.compile(rf"^(?:{_alt([*EN_RELATIONS, *ITEMS, *PLACES, *EVENTS])})$", re.I)


def _unknown_attribute(rest, base, group, text, who) -> list[RuleCandidate]:
    """ "my advisor's research area is AI": an attribute the table does not know, for review;
    not "my sister's dog is ..." (her dog) nor a wedding (an event: the plan patterns')."""
    m = re.fullmatch(r"(?:'s|’s)\s+(?P<a>[a-z]+(?:\s+[a-z]+)?)\s+(?:is|are)\s+.+", rest, re.I)
    if m is None or _OWNED.match(m["a"]) or _OWNED.match(m["a"].split()[-1]):
        return []
    return _add(who, f"{base}: {key(m['a'])}", text, 0.75, f"en:{group}-attribute")


# --------------------------------------------------------------------------------------
# Items
# --------------------------------------------------------------------------------------

_ITEM = rf"(?P<i>{_alt(ITEMS)})"
# "my new phone", "the robot vacuum I bought": the person's own (checked in items()).
_MINE = (
    rf"(?:(?P<my>my)\s+(?:new\s+|old\s+|current\s+|favou?rite\s+)?|the\s+(?:new\s+)?)"
    rf"(?P<im>(?!(?:{_alt(ITEMS)}|new|old|current|favou?rite)\b)[a-z-]{{3,}}\s+)?{_ITEM}"
    rf"(?P<rel>\s+(?:that\s+)?I\s+(?:just\s+|recently\s+)?"
    rf"(?:bought|got|use|ride|drive|wear|carry)(?:\s+(?:most|every day|the most))?"
    rf"(?:\s+(?:last|this)\s+\w+|\s+yesterday|\s+recently)?)?"
)
_COUNTRY = (
    r"(?:Japan|China|Germany|Italy|France|Korea|South Korea|Sweden|Denmark|Switzerland|Spain|"
    r"Taiwan|Vietnam|India|Mexico|Canada|the US|the USA|America|the UK|England|Britain|"
    r"Portugal|Turkey|Thailand)"
)
_ITEM_SAID = (
    (rf"^{_MINE}(?:'s|’s)\s+(?P<a>{_alt(ITEM_ATTRS)})\s+{_IS}\s+(?P<x>.+)$", "{a}"),
    (rf"^{_MINE}\s+(?:cost(?:\s+me)?|was|were)?\s*(?P<x>(?:about\s+|around\s+)?(?:[$¥€£]\s?[\d,.]+|"
     rf"[\d,.]+\s*(?:dollars|yuan|rmb|euros|pounds|bucks|k)\b).*)$", "price"),
    (rf"^I\s+(?:paid|spent)\s+(?P<x>.+?)\s+(?:for|on)\s+{_MINE}", "price"),
    (rf"^I\s+(?:bought|got)\s+{_MINE}\s+(?:[\w-]+\s+){{0,2}}for\s+(?P<x>(?:about\s+|around\s+|"
     rf"only\s+|just\s+)?(?:[$¥€£]\s?[\d,.]+|[\d,.]+\s*(?:dollars|yuan|rmb|euros|pounds|bucks|"
     rf"k)\b).*)$", "price"),
    (rf"^{_MINE}\s+{_IS}\s+(?P<x>(?:a\s+)?(?:gift|present)\s+from\s+.+)$", "gift"),
    (rf"^(?P<x>.+?)\s+gave\s+me\s+{_MINE}", "gift"),
    (rf"^I\s+(?:bought|got)\s+{_MINE}\s+(?P<x>(?:at|from|on|in|for)\s+.+)$", "bought"),
    (rf"^{_MINE}\s+(?:was|were)\s+(?P<x>(?:bought|purchased)\s+.+)$", "bought"),
    (rf"^{_MINE}\s+{_IS}\s+(?P<x>(?:black|white|red|blue|green|yellow|grey|gray|silver|gold|"
     rf"pink|purple|orange|brown|beige|navy)(?:\s+and\s+\w+)?)$", "colour"),
    (rf"^{_MINE}\s+{_IS}\s+(?:hand)?made\s+by\s+(?P<x>(?:my|our)\s+.+)$", "made by"),
    (rf"^{_MINE}\s+{_IS}\s+(?:made\s+by|an?\s+\S+\s+(?=model\b|brand\b))(?P<x>.+)$", "brand"),
    (rf"^{_MINE}\s+{_IS}\s+(?P<x>(?:made\s+in|imported\s+from)\s+.+)$", "origin"),
    # "my sofa is from IKEA": a capitalised maker; "from Japan" is where it was made.
    (rf"^{_MINE}\s+{_IS}\s+from\s+(?P<x>{_COUNTRY})$", "origin"),
    (rf"^{_MINE}\s+{_IS}\s+(?:from|by)\s+(?P<x>(?-i:[A-Z])[\w&'.-]*(?:\s+(?-i:[A-Z])[\w&'.-]*)?)$",
     "brand"),
    (rf"^{_MINE}\s+{_IS}\s+(?P<x>(?:about\s+|almost\s+|nearly\s+|over\s+)?(?:\w+|\d+|a)\s+"
     rf"(?:years?|months?)\s+old)$", "owned for"),
    (rf"^{_MINE}\s+{_IS}\s+(?P<x>(?:a|an)\s+.+)$", ""),
    (rf"^{_MINE}\s+has\s+(?:a|an)\s+(?P<a>{_alt(ITEM_ATTRS)})\s+of\s+(?P<x>.+)$", "{a}"),
    (rf"^{_MINE}\s+has\s+(?P<x>[\d.,]+\s*(?:GB|TB|MB|G|T|mAh|km|kilometers|kilometres|miles|"
     rf"litres|liters|L|hp|MP|megapixels)\b.*)$", "specs"),
)  # fmt: skip


def items(text: str, who: Ctx) -> list[RuleCandidate]:
    for pattern, attribute in _ITEM_SAID:
        if (m := re.match(pattern, text, re.I)) and (m["my"] or m["rel"]):
            if attribute == "{a}":
                attribute = ITEM_ATTRS[m["a"].lower()]
            if attribute == "specs":  # "has 16 GB of RAM", "has 80 km of range"
                said_of = re.search(r"RAM|memory|storage|SSD|range|battery", m["x"], re.I)
                words = {"ram": "memory", "ssd": "storage", "battery": "battery"}
                attribute = (
                    words.get(said_of[0].lower(), said_of[0].lower()) if said_of else "specs"
                )
            name = key(((m["im"] or "") + (m["i"] or "")).strip())
            predicate = f"item: {name}" + (f": {attribute}" if attribute else "")
            conf = 0.85 if not attribute else 0.88
            return _add(who, predicate, text, conf, "en:item")
    return []


# --------------------------------------------------------------------------------------
# Places
# --------------------------------------------------------------------------------------

_PLACE = rf"(?P<p>{_alt(PLACES)})"
_WHERE = (
    r"across\s+(?:the\s+street\s+)?from|next\s+to|near|opposite|behind|in\s+front\s+of|"
    r"beside|around\s+the\s+corner\s+from|on\s+the\s+\w+\s+floor|on|in|at|inside|downstairs|"
    r"upstairs|close\s+to|a\s+few\s+\w+\s+from|down\s+the\s+street"
)
_OURS = (
    rf"(?:the|my|our)\s+(?:favou?rite\s+|usual\s+|local\s+|new\s+)?"
    rf"(?P<o>(?:office|company|school|building|neighbou?rhood|apartment|campus)\s+)?"
    rf"(?P<pm>(?!(?:{_alt(PLACES)}|I|we)\b)[a-z-]{{3,}}\s+)?{_PLACE}"
    rf"(?P<q>\s+(?:(?:that\s+|where\s+)?(?:I|we)\s+(?:usually\s+|often\s+|always\s+)?"
    rf"(?:go\s+to|use|like|love|prefer|(?:swim|train|work\s*out|shop|eat|study|work|climb|practi[cs]e)"
    rf"(?:\s+(?:at|in))?)(?:\s+most)?|(?:near|by|next\s+to|in|at|behind|across\s+from)\s+(?:my|our)\s+\w+|"
    rf"downstairs|round\s+the\s+corner))?"
)
_PLACE_SAID = (
    (rf"^{_OURS}(?:'s|’s)\s+(?P<a>{_alt(PLACE_ATTRS)})\s+{_IS}\s+(?P<x>.+)$", "{a}"),
    (rf"^the\s+(?P<a>{_alt(PLACE_ATTRS)})\s+of\s+{_OURS}\s+{_IS}\s+(?P<x>.+)$", "{a}"),
    (rf"^{_OURS}\s+{_IS}\s+(?:called|named)\s+(?P<x>.+)$", "name"),
    (
        rf"^{_OURS}\s+(?P<a>address|phone\s+number|opening\s+hours|hours)\s+{_IS}\s+(?P<x>.+)$",
        "{a}",
    ),
    (rf"^{_OURS}\s+{_IS}\s+(?P<x>(?:{_WHERE})\b.+|right\s+(?:{_WHERE})\b.+)$", ""),
    # what it has or offers: "our office has a rooftop terrace", "the gym I go to has a sauna"
    (
        rf"^{_OURS}\s+(?:has|have|offers|serves|sells)\s+(?P<x>(?!(?:no|nothing)\b).{{3,}})$",
        "features",
    ),
    (
        rf"^{_OURS}\s+(?:opens|closes|is\s+open|is\s+closed)\s+(?P<x>(?:at|on|from|until|till|"
        rf"every|daily|24)\b.+)$",
        "opening hours",
    ),
)


def _place_key(m: re.Match) -> str:
    owner, kind = (m["o"] or "").strip(), (m["pm"] or "").strip()
    return key(" ".join(w for w in (owner, kind, m["p"]) if w))


_NEARBY = re.compile(
    rf"^there(?:'s| is| are|'re)\s+(?P<n>a|an|one|two|three|several|a\s+few|some)\s+"
    rf"(?P<d>(?:[\w'-]+\s+){{0,3}}?){_PLACE}s?\s+(?P<w>{_WHERE})\s+(?P<o>(?:my|our)\s+\w+)\.?$",
    re.I,
)


# Someone the person goes to, told as where they are: "the dentist I go to is on Baker
# Street", "my GP's practice is next to the station" (the practice: `place: dentist`).
_PROVIDER = (
    r"dentist|doctor|gp|vet|physio|physiotherapist|hairdresser|barber|optician|chiropractor|"
    r"pediatrician|paediatrician|dermatologist|therapist|osteopath|orthodontist|nail\s+salon"
)
_PROVIDER_PLACE = re.compile(
    rf"^(?:the\s+(?P<p>{_PROVIDER})\s+(?:that\s+)?(?:I|we)\s+(?:usually\s+|always\s+|normally\s+)?"
    rf"(?:go\s+to|see|use)|(?:my|our)\s+(?P<q>{_PROVIDER})(?:'s|’s)\s+(?:office|practice|"
    rf"clinic|surgery))\s+(?:is|'s)\s+(?P<x>(?:right\s+)?(?:{_WHERE})\b.+)$",
    re.I,
)


_PASSING_EN = re.compile(
    r"\b(?:today|tonight|now|right\s+now|this\s+(?:morning|week|weekend)|a\s+lot\s+of\s+people|"
    r"so\s+many|crowded|no\s+\w+\s+left)\b",
    re.I,
)


def places(text: str, who: Ctx) -> list[RuleCandidate]:
    if (m := _PROVIDER_PLACE.match(text)) and not _TIME.search(m["x"]):
        return _add(who, f"place: {key(m['p'] or m['q'])}", text, 0.88, "en:place-provider")
    if m := _NEARBY.match(text):  # "there's a 24-hour pharmacy near my place"
        home = m["o"].split()[-1]  # "my place", "our building"
        where = f"{m['p']} {m['w']} {home}"
        return _add(who, f"place: {key(where)}", text, 0.8, "en:place-nearby")
    if m := re.match(
        rf"^there(?:'s| is)\s+(?:a|an)\s+{_PLACE}\s+(?:called|named)\s+(?P<n>.+?)\s+"
        rf"(?:{_WHERE})\b.*\b(?:my|our)\b",
        text,
        re.I,
    ):
        return _add(who, f"place: {key(m['n'])}", text, 0.88, "en:place-nearby")
    for pattern, attribute in _PLACE_SAID:
        m = re.match(pattern, text, re.I)
        # A time after a place is an event's ("the gym is on Monday"), unless it is its hours.
        timed = attribute != "opening hours" and _TIME.search(m["x"]) if m else False
        vague = m and m["p"].lower() in ("place", "spot", "joint") and not m["pm"]
        if (
            m
            and attribute == "features"
            and (not (m["q"] or re.match(r"(?:my|our)\b", text, re.I)) or _PASSING_EN.search(text))
        ):
            continue  # "the park has a lot of people today": how it is now, and no one's
        if vague or m and m["pm"] and not (m["q"] or re.match(r"(?:my|our)\b", text, re.I)):
            continue  # "the new yoga studio is on Elm St": "yoga" only with the person's own
        if m and not timed:
            if attribute == "{a}":
                attribute = PLACE_ATTRS[m["a"].lower()]
            predicate = f"place: {_place_key(m)}" + (f": {attribute}" if attribute else "")
            return _add(who, predicate, text, 0.88, "en:place")
    return []


# --------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------

_EVENT = rf"(?P<e>(?:[\w'-]+\s+){{0,3}}?(?:{_alt(EVENTS)}))"
_THE = r"(?:this\s+year's|next\s+week's|tomorrow's|the|our|my|this|(?:\w+)'s)\s+"
# "the client dinner next week will have ...": which one, not part of its name.
_WHICH = r"(?:\s+(?:next|this|last)\s+(?:week|month|year|weekend|\w+day)|\s+tomorrow|\s+tonight)?"
_EVENT_SAID = (
    (rf"^{_THE}{_EVENT}(?:'s|’s)\s+(?P<a>{_alt(EVENT_ATTRS)})\s+{_IS}\s+(?P<x>.+)$", "{a}"),
    (rf"^the\s+(?P<a>{_alt(EVENT_ATTRS)})\s+(?:of|for)\s+{_THE}{_EVENT}\s+{_IS}\s+(?P<x>.+)$",
     "{a}"),
    (rf"^(?P<x>(?:about|around|roughly|some|over|nearly|almost)?\s*[\w-]+\s+people)\s+"
     rf"(?:will\s+|are\s+going\s+to\s+|are\s+|have\s+)?(?:attend(?:ing)?|come\s+to|coming\s+to|"
     rf"join(?:ing)?|signed\s+up\s+for|registered\s+for)\s+{_THE}{_EVENT}$", "scale"),
    (rf"^{_THE}{_EVENT}{_WHICH}\s+(?:will\s+have|has|expects|is\s+expecting)\s+(?P<x>.*\b(?:people|"
     rf"runners|participants|attendees|guests|visitors|players|teams|entrants|delegates)\b.*)$",
     "scale"),
    (rf"^{_THE}{_EVENT}\s+(?:lasts|will\s+last|takes|will\s+take|runs\s+for|is\s+going\s+to\s+"
     rf"last)\s+(?P<x>(?:about\s+|around\s+)?(?:\w+|an?|half\s+an?)\s+(?:hours?|minutes?|days?|"
     rf"weeks?|evenings?)\b.*)$", "duration"),
    (rf"^{_THE}{_EVENT}\s+(?:tickets?\s+|entry\s+|registration\s+)?(?:costs?|is|are)\s+"
     rf"(?P<x>(?:about\s+|around\s+)?(?:[$¥€£]\s?[\d,.]+|[\d,.]+\s*(?:dollars|yuan|rmb|euros|"
     rf"pounds|bucks)\b|free\b).*)$", "cost"),
    (rf"^(?:the\s+)?(?:tickets?|entry|admission)\s+(?:for|to)\s+{_THE}{_EVENT}\s+(?:is|are|costs?)\s+"
     rf"(?P<x>(?:about\s+|around\s+)?(?:[$¥€£]\s?[\d,.]+|[\d,.]+\s*(?:dollars|yuan|rmb|euros|pounds|"
     rf"bucks)\b|free\b).*)$", "cost"),
    (rf"^(?P<x>I(?:'m| am))\s+(?:hosting|running|organi[sz]ing|leading|chairing|presenting at|"
     rf"in charge of)\s+{_THE}{_EVENT}$", "host"),
    (rf"^{_THE}{_EVENT}\s+{_IS}\s+(?:being\s+)?(?:hosted|run|organi[sz]ed|led|chaired)\s+by\s+"
     rf"(?P<x>.+)$", "host"),
    (rf"^{_THE}{_EVENT}\s+{_IS}\s+(?:held\s+)?(?P<x>(?:at|in|on)\s+.+)$", "when or where"),
    # "the potluck starts at 6 pm on Saturday": its time
    (rf"^{_THE}{_EVENT}\s+(?:starts|begins|kicks\s+off|will\s+start|will\s+begin|is\s+starting)\s+"
     rf"(?P<x>(?:at|on|in|next|this|tomorrow|tonight)\b.+)$", "time"),
    # "registration for the marathon closes on Friday"
    (rf"^(?:the\s+)?(?:registration|sign-?ups?|enrol(?:l)?ment)\s+(?:for|to)\s+{_THE}{_EVENT}\s+"
     rf"(?:closes|ends|is\s+due|is\s+open\s+until)\s+(?P<x>.+)$", "deadline"),
    # "the wedding is black tie"
    (rf"^{_THE}{_EVENT}\s+{_IS}\s+(?P<x>black[\s-]tie|white[\s-]tie|smart[\s-]casual|business[\s-]casual|"
     rf"semi-formal|formal|cocktail\s+attire|fancy\s+dress|costume(?:\s+only)?)$", "dress code"),
    # "the conference dress code is business casual": the attribute word without 's
    (rf"^{_THE}{_EVENT}\s+(?P<a>{_alt(EVENT_ATTRS)})\s+{_IS}\s+(?P<x>.+)$", "{a}"),
    # moved to a new time: the plan's key, so the new time supersedes the old one
    (rf"^{_THE}{_EVENT}\s+(?:has\s+been|have\s+been|was|got|is\s+being|is)\s+(?:moved|pushed"
     rf"(?:\s+back)?|rescheduled|postponed|brought\s+forward|changed|shifted)\s+(?:to|until|till)\s+"
     rf"(?P<x>.+)$", "moved"),
    # called off: the plan's key, so it supersedes the plan
    (rf"^{_THE}{_EVENT}\s+(?:has\s+been|was|is|got|have\s+been)\s+(?P<x>cancell?ed|called\s+off|"
     rf"postponed(?:\s+indefinitely)?)$", "called off"),
    (rf"^{_THE}{_EVENT}\s+(?:will\s+)?(?:take|takes|is\s+taking)\s+place\s+(?P<x>(?:at|in|on)\s+.+)$",
     "when or where"),
    # a group that comes back: "the book club meets every second Thursday at the library"
    (rf"^{_THE}{_EVENT}\s+(?:meets|is\s+held|takes\s+place|happens|runs|gets\s+together)\s+"
     rf"(?P<x>(?:every|once|twice|each|on\s+(?:the\s+)?\w+days|weekly|monthly)\b.+)$", "schedule"),
)  # fmt: skip


def events(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    for pattern, attribute in _EVENT_SAID:
        if not (m := re.match(pattern, text, re.I)):
            continue
        if attribute == "{a}":
            attribute = EVENT_ATTRS[m["a"].lower()]
        event = key(re.sub(r"^(?:the|our|my|this)\s+", "", m["e"], flags=re.I))
        when = ruledates.future(m["x"], now)
        if attribute in ("time", "when or where", "moved") and (when or _TIME.search(m["x"])):
            content = said(text, who) + date_en(when)
            return [make("fact", who.subject, f"plan: {event}", content, 0.88, 0.7,
                         "en:event-time")]  # fmt: skip
        if attribute == "called off":
            return [make("fact", who.subject, f"plan: {event}", said(text, who), 0.88, 0.7,
                         "en:event-off")]  # fmt: skip
        attribute = "place" if attribute in ("when or where", "moved") else attribute
        return _add(who, f"event: {event}: {attribute}", text, 0.88, "en:event-attribute")
    if m := re.match(rf"^{_THE}{_EVENT}\s+{_IS}\s+(?P<x>.+)$", text, re.I):
        if when := ruledates.future(m["x"], now):  # "the team offsite is next Friday"
            event = key(re.sub(r"^(?:the|our|my|this)\s+", "", m["e"], flags=re.I))
            content = said(text, who) + date_en(when)
            return [make("fact", who.subject, f"plan: {event}", content, 0.88, 0.7,
                         "en:event-time")]  # fmt: skip
    return []


# How far home is from somewhere: "I live a five-minute walk from the subway".
_DISTANCE = re.compile(
    r"^(?:I\s+live|my\s+(?P<at>house|home|place|apartment|flat|office|school)\s+is)\s+(?:just\s+|only\s+|"
    r"about\s+)?(?P<x>(?:an?\s+)?(?:\w+|\d+)[\s-](?:minutes?|mins?|hours?|kilometers?|km|miles?|blocks?)"
    r"(?:[\s-](?:walk|drive|ride|bike\s+ride))?)\s+(?:away\s+)?from\s+(?:the\s+|my\s+)?(?P<to>[\w\s-]{2,30})\.?$",
    re.I,
)


def distance(text: str, who: Ctx) -> list[RuleCandidate]:
    if not (m := _DISTANCE.match(text)):
        return []
    at = (m["at"] or "home").lower()
    at = "home" if at in ("house", "place", "apartment", "flat") else at
    return _add(who, f"place: {at}: distance to {key(m['to'])}", text, 0.88, "en:distance")


# The person's things said with "I": "I drive a Tesla Model 3", "I've had my bike for six
# years", "I ride a Brompton". The thing is keyed as "my X" would be.
_I_DRIVE = re.compile(
    r"^I\s+(?:now\s+|currently\s+)?(?:drive|ride)\s+(?:a|an)\s+"
    r"(?P<x>(?:\d{4}\s+)?(?-i:[A-Z])[\w' .-]{1,30}?)"
    r"(?:\s+(?:to\s+work|these\s+days|now))?\.?$",
    re.I,
)
_I_HAD = re.compile(
    rf"^I(?:'ve| have)\s+(?P<v>had|owned|used)\s+(?:my|this|that)\s+"
    rf"(?P<i>(?:[\w-]+\s+)?(?:{_alt(ITEMS)}))"
    r"\s+for\s+(?P<x>(?:about\s+|almost\s+|over\s+)?(?:\w+|\d+)\s+(?:years?|months?))\.?$",
    re.I,
)


def own_things(text: str, who: Ctx) -> list[RuleCandidate]:
    if m := _I_DRIVE.match(text):
        thing = "bike" if re.search(r"\bride\b", text, re.I) else "car"
        return _add(who, f"item: {thing}", text, 0.85, "en:item-drive")
    if m := _I_HAD.match(text):
        content = f"{who.en} has {m['v'].lower()} their {m['i']} for {m['x']}"
        return [make("fact", who.subject, f"item: {key(m['i'])}: owned for", content, 0.85, 0.6,
                     "en:item-age")]  # fmt: skip
    return []


# A name first, then who they are: "Sarah is my boss", "Dr. Kim is my dentist", "Luna is my
# cat" read as "my boss is called Sarah" (the same key as when said that way).
_NAME_FIRST = re.compile(
    r"^(?P<n>(?:(?:Mr|Mrs|Ms|Miss|Dr|Prof|Uncle|Aunt|Auntie|Grandma|Grandpa)\.?\s+)?"
    r"(?-i:[A-Z][a-z'’-]+)(?:\s+(?-i:[A-Z][a-z'’-]+))?)\s+is\s+(?P<my>my|our)\s+"
    rf"(?P<r>(?:(?:{_alt(QUALIFIERS)})\s*)?(?:{_MOD})?(?:{_REL}|{_ROLE}))\.?$",
    re.I,
)


def name_first(text: str) -> str | None:
    """ "Sarah is my boss" -> "My boss is called Sarah", or None."""
    m = _NAME_FIRST.match(text)
    if m is None or m["n"].split()[0].lower() in ("this", "that", "he", "she", "it", "what"):
        return None
    return f"{m['my'].capitalize()} {m['r']} is called {m['n']}"


def english(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    """Candidates for one English clause (hedges already removed), or []."""
    if found := people(text, who, now):  # "my boss turns 50 next month": a date to resolve
        return found
    for step in (items, own_things, places, distance):
        if found := step(text, who):
            return found
    return events(text, who, now)
