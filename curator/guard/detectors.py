"""Built-in detectors of secrets and personal data (pure functions, no Django).

Each detector finds spans (start, end) of what must not be remembered: the value itself, not
the words around it ("my password is hunter2" -> the span of "hunter2"), so a transcript can
keep the sentence with only the value masked. Patterns favour precision where a checksum or
a shape makes it cheap (Luhn for cards, ISO 7064 for resident ids, mod 97 for IBANs, known
prefixes for API keys); tests/data/guard_labelled.jsonl measures them (bench/guard.py).

Secrets (keys, passwords) are on by default and block; personal data (e-mail, phone, resident
id, bank card, IBAN, postal address) is on too but sends a memory holding it to review: the
person decides whether every agent may see it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Span = tuple[int, int]

SECRET, PERSONAL = "secret", "personal"


@dataclass(frozen=True)
class Detector:
    key: str
    category: str  # SECRET or PERSONAL
    find: Callable[[str], list[Span]]

    @property
    def default_on(self) -> bool:
        return True

    @property
    def default_action(self) -> str:
        return "block" if self.category == SECRET else "review"

    @property
    def default_redact(self) -> bool:
        return self.category == SECRET


def _spans(pattern: re.Pattern, text: str, group: str | int = 0) -> list[Span]:
    return [m.span(group) for m in pattern.finditer(text)]


# --------------------------------------------------------------------------------------
# API keys and access tokens
# --------------------------------------------------------------------------------------

# Provider formats with a fixed prefix: precise enough to match anywhere in text.
_KEY_FORMATS = [
    r"sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI, Anthropic
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}",  # AWS access key ids
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{40,}",
    r"glpat-[A-Za-z0-9_\-]{20,}",  # GitLab
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"AIza[0-9A-Za-z_\-]{35}",  # Google API keys
    r"ya29\.[0-9A-Za-z_\-]{20,}",  # Google OAuth access tokens
    r"(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"npm_[A-Za-z0-9]{36}",
    r"LTAI[0-9A-Za-z]{12,24}",  # Alibaba Cloud AccessKey ids
    r"AKID[0-9A-Za-z]{32}",  # Tencent Cloud SecretId
    r"mc_[A-Za-z0-9_\-]{40,}",  # this app's own API tokens
    r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWTs
    r"\d{8,10}:AA[A-Za-z0-9_\-]{33}",  # Telegram bot tokens
    # VCS, package registries and CI
    r"gl(?:rt|dt|ptt|soat|ft|imt|agent|cbt)-[A-Za-z0-9_\-]{20,}",  # GitLab runner, deploy ...
    r"GR1348941[A-Za-z0-9_\-]{20,}",  # GitLab runner registration
    r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{40,}",  # PyPI upload tokens
    r"dckr_pat_[A-Za-z0-9_\-]{20,}",  # Docker Hub
    r"rubygems_[0-9a-f]{48}",
    r"oy2[a-z0-9]{43}",  # NuGet
    r"ATATT3[A-Za-z0-9_\-=]{50,}",  # Atlassian
    r"(?:ghr|ghs)_[A-Za-z0-9]{30,}",
    # clouds and hosted services
    r"AKLT[A-Za-z0-9_\-]{30,}",  # Volcengine
    r"do[opr]_v1_[a-f0-9]{64}",  # DigitalOcean
    r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}",  # SendGrid
    r"whsec_[A-Za-z0-9+/=]{24,}",  # Stripe webhook signing secrets
    r"xapp-\d-[A-Za-z0-9\-]{20,}",  # Slack app tokens
    r"lin_api_[A-Za-z0-9]{32,}",  # Linear
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",  # Shopify
    r"(?:ntn|secret)_[A-Za-z0-9]{40,50}",  # Notion
    r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}",  # Postman
    r"dapi[a-f0-9]{32}",  # Databricks
    r"gsk_[A-Za-z0-9]{40,}",  # Groq
    r"r8_[A-Za-z0-9]{30,}",  # Replicate
    r"hv[sb]\.[A-Za-z0-9_\-]{24,}",  # HashiCorp Vault
    r"glc_[A-Za-z0-9+/=]{30,}",  # Grafana
    r"sntr[ysu]_[A-Za-z0-9+/=_\-]{30,}",  # Sentry
    r"AGE-SECRET-KEY-1[0-9A-Z]{50,}",
    r"key-[0-9a-f]{32}",  # Mailgun
]
# Webhook URLs carry their secret in the path or query: whoever has one can post as the app.
_WEBHOOK_FORMATS = [
    r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{16,}",
    r"https?://(?:[\w\-]+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,}",
    r"https?://[\w.\-]*(?:office\.com|office365\.com|logic\.azure\.com)[\w.:/\-]*/"
    r"(?:webhook|IncomingWebhook|workflows)/[\w@/\-]{20,}[^\s\"'<>]*",
    r"https?://open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/[A-Za-z0-9\-]{20,}",
    r"https?://oapi\.dingtalk\.com/robot/send\?access_token=[A-Za-z0-9]{20,}",
    r"https?://qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=[A-Za-z0-9\-]{20,}",
    r"https?://[0-9a-f]{32}@[\w.\-]*sentry\.io/\d+",  # Sentry DSNs
]
_WEBHOOK = re.compile("|".join(_WEBHOOK_FORMATS))
# A generated value in a URL's query or a connection string's field: "?access_token=…",
# "AccountKey=…;", "sig=…" (Azure SAS).
_QUERY_SECRET = re.compile(
    r"(?i)(?:[?&;]|^|\s)(?:access_token|api_key|apikey|token|key|secret|sig|password|pwd"
    r"|AccountKey|SharedAccessKey|client_secret|_authToken)=(?P<v>[A-Za-z0-9_\-./+%]{16,}={0,2})"
)
_KEY = re.compile(r"(?<![A-Za-z0-9_\-])(?:" + "|".join(_KEY_FORMATS) + r")(?![A-Za-z0-9_\-])")
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z]+ )*PRIVATE KEY-----|$)"
)
_BEARER = re.compile(r"(?i)\bBearer\s+(?P<v>[A-Za-z0-9_\-.=+/]{20,})")
# A secret-looking value after a name that says what it is: "api_key = 3f9a...", "token: ...",
# "密钥是 ...". The value must look generated (long, letters and digits mixed).
_NAMED_SECRET = re.compile(
    r"(?i)(?:api[ _\-]?key|apikey|access[ _\-]?key(?:[ _\-]?id)?"
    r"|secret(?:[ _\-]?(?:access[ _\-]?)?key)?"
    r"|client[ _\-]?secret|access[ _\-]?token|auth[ _\-]?token|refresh[ _\-]?token|token"
    r"|private[ _\-]?key(?:[ _\-]?id)?|signing[ _\-]?secret|webhook[ _\-]?secret"
    r"|key|密钥|秘钥|令牌|访问令牌|口令牌)"
    r"(?:\s+(?:for|of|to)\s+[\w.\-]{1,30})?"
    r"\s*(?:is|was|=|:|：|是|为|為)?\s*[\"'“「`]?(?P<v>[A-Za-z0-9_\-./+=]{16,200})"
)
# user:password@host in a connection string or URL
_URL_PASSWORD = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:(?P<v>[^\s@/]{3,})@[\w.\-]+")


def _looks_generated(value: str) -> bool:
    """Letters and digits mixed, or a long run of both cases (base64 with few digits, like an
    AWS secret access key): never a word or a file name people type."""
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    if len(set(value)) < 8:
        return False
    if letters >= 4 and digits >= 2:
        return True
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    shifts = sum(a.islower() and b.isupper() for a, b in zip(value, value[1:], strict=False))
    return len(value) >= 24 and upper >= 4 and lower >= 4 and shifts >= 3


def find_api_keys(text: str) -> list[Span]:
    spans = _spans(_KEY, text) + _spans(_PRIVATE_KEY, text)
    spans += _spans(_BEARER, text, "v") + _spans(_URL_PASSWORD, text, "v") + _spans(_WEBHOOK, text)
    for match in _QUERY_SECRET.finditer(text):
        if _looks_generated(match.group("v")) or len(match.group("v")) >= 32:
            spans.append(match.span("v"))
    for match in _NAMED_SECRET.finditer(text):
        value = match.group("v").rstrip(".")
        if _looks_generated(value):
            start = match.start("v")
            spans.append((start, start + len(value)))
    return spans


# --------------------------------------------------------------------------------------
# Passwords stated in text
# --------------------------------------------------------------------------------------

# Words that follow "password is" without being one ("my password is wrong").
_NOT_A_PASSWORD = frozenset(
    """a an the not too very so still now also just my your his her our their this that it
    wrong incorrect correct invalid valid required needed missing empty blank weak strong
    expired changed reset saved stored set same different long short easy hard simple secure
    insecure case sensitive protected encrypted hashed hidden visible ok okay fine there here
    what which where when how why something anything nothing stored written below above
    different lost forgotten unknown generated managed shared rotated updated none null nil
    n/a see""".split()
)
_PASSWORD_WORD = (
    r"(?:password|passcode|passwd|pass\s?phrase|pwd|pin(?:\s?code)?|wi-?fi\s+(?:password|key))"
)
# The value: a quoted passphrase (spaces allowed), else one word.
_VALUE = r"(?:[\"“‘](?P<q>[^\"”’\n]{3,64})[\"”’]|[`']?(?P<v>[^\s\"'”’`,，。;；]{3,64}))"
_PASSWORD_EN = re.compile(
    r"(?i)\b" + _PASSWORD_WORD + r"(?:\s+(?:for|of|to|on)\s+[^\n,;:.]{1,40}?)?"
    r"\s*(?:is|was|:|=|：|->)\s*(?:set\s+to\s+|now\s+)?" + _VALUE
)
_PASSWORD_EN_SET = re.compile(
    r"(?i)\b(?:set|changed?|reset|updated?)\s+(?:my|the|our)\s+(?:[\w\-]+\s+){0,2}"
    + _PASSWORD_WORD
    + r"\s+to\s+"
    + _VALUE
)
_PASSWORD_ZH = re.compile(
    r"(?:密码|密碼|口令|PIN\s?码|pin\s?码)"
    r"(?:是|为|為|：|:|=|\s|设成了?|设为|改成了?|改为|换成了?|设置为|设置成|设的是|用的是)+"
    r"\s*[\"'“‘「`]?(?P<v>[A-Za-z0-9!@#$%^&*()_+\-=.?~<>\[\]{}|]{3,64})"
)
# "password hunter2hunter2", "pwd Xq9!vb72": no verb between, so the value must look like one
# (letters with digits or symbols), never "password manager".
_PASSWORD_BARE = re.compile(
    r"(?i)\b(?:password|passwd|pwd)\s+[`']?(?P<v>[^\s\"'”’`,，。;；]{6,64})"
)
# the end of a sentence is not part of the value
_TRAILING = ".!?)]}>"


def find_passwords(text: str) -> list[Span]:
    spans = []
    for pattern in (_PASSWORD_EN, _PASSWORD_EN_SET, _PASSWORD_ZH):
        for match in pattern.finditer(text):
            group = "q" if match.groupdict().get("q") else "v"
            value = match.group(group)
            if group == "v" and len(value.rstrip(_TRAILING)) >= 3:
                value = value.rstrip(_TRAILING)
            word = value.strip("()[]{}<>.,:;!?").lower()
            if word in _NOT_A_PASSWORD or re.fullmatch(r"[a-z]+ly|[a-z]+ed", word):
                continue
            start = match.start(group)
            spans.append((start, start + len(value)))
    for match in _PASSWORD_BARE.finditer(text):
        value = match.group("v").rstrip(_TRAILING + ":：")
        has_letter = any(c.isalpha() for c in value)
        has_digit = any(c.isdigit() for c in value)
        has_symbol = any(not c.isalnum() for c in value)
        if has_letter and (has_digit or has_symbol) and len(value) >= 6:
            spans.append((match.start("v"), match.start("v") + len(value)))
    return spans


# --------------------------------------------------------------------------------------
# Personal data
# --------------------------------------------------------------------------------------

# Not after ":" (user:password@host in a URL is the api_key detector's).
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-:])[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*"
    r"\.[A-Za-z]{2,24}(?![A-Za-z0-9\-])"
)


def find_emails(text: str) -> list[Span]:
    return _spans(_EMAIL, text)


# Mainland mobile numbers, with or without +86 / 0086 and grouping spaces or dashes.
_CN_MOBILE = re.compile(r"(?<![\d+])(?:(?:\+|00)86[\s\-]?)?1[3-9]\d(?:[\s\-]?\d{4}){2}(?!\d)")
# Mainland landlines with their area code: 010-12345678, 0571-8888 6666.
_CN_LANDLINE = re.compile(r"(?<![\d\-])0\d{2,3}-\d{3,4}[\s\-]?\d{4}(?![\d\-])")
# International: a leading + and 8-15 digits in groups.
_INTERNATIONAL = re.compile(r"(?<![\w+])\+[1-9]\d{0,2}(?:[\s.\-]?\(?\d{1,4}\)?){1,6}(?![\d])")
# North-American style without a country code: (415) 555-0132, 415-555-0132.
_NANP = re.compile(r"(?<![\d\-])(?:\(\d{3}\)\s?|\d{3}[\-.])\d{3}[\-.]\d{4}(?![\d\-])")


def find_phones(text: str) -> list[Span]:
    spans = _spans(_CN_MOBILE, text) + _spans(_CN_LANDLINE, text) + _spans(_NANP, text)
    for match in _INTERNATIONAL.finditer(text):
        digits = sum(c.isdigit() for c in match.group())
        if 8 <= digits <= 15:
            spans.append(match.span())
    return spans


# Postal addresses down to the building: a Chinese road, street or lane with its number
# ("文三路478号", "张江路 88 号"), or an English house number before a street name and its
# kind ("221B Baker Street", "350 Fifth Ave"). A city or district alone is no address.
# (No repeated "province / city / district" prefix: nested runs of CJK characters backtrack
# exponentially on a long run without a road; the span starts at most ten characters before it.)
_ZH_ADDRESS = re.compile(
    r"[\u4e00-\u9fff]{1,10}"
    r"(?:路|街|大道|大街|巷|弄|胡同|里)(?:[一二三四五六七八九十\d]{1,3}段)?\s*\d{1,5}\s*(?:-\s*\d{1,5}\s*)?号"
    r"(?:\s*[\u4e00-\u9fffA-Za-z0-9\-]{0,16}?\d{1,5}\s*(?:幢|栋|号楼|楼|单元|室|层))*"
)
_EN_STREET_KIND = (
    r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl"
    r"|Terrace|Square|Sq|Parkway|Pkwy|Highway|Hwy|Close|Crescent"
)
_EN_ADDRESS = re.compile(
    r"\b\d{1,5}[A-Za-z]?\s+(?:[A-Z][A-Za-z\-']*\.?\s+){1,3}(?:" + _EN_STREET_KIND + r")\b\.?"
    r"(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b)?(?:,?\s+(?:Apt|Suite|Unit|Flat)\.?\s*#?\w+)?"
)


def find_addresses(text: str) -> list[Span]:
    return _spans(_ZH_ADDRESS, text) + _spans(_EN_ADDRESS, text)


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
_CN_ID = re.compile(
    r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"
    r"\d{3}[0-9Xx](?![0-9A-Za-z])"
)


def valid_resident_id(number: str) -> bool:
    """The ISO 7064 MOD 11-2 check digit of an 18-character resident identity number."""
    if len(number) != 18 or not number[:17].isdigit():
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == number[17].upper()


def find_resident_ids(text: str) -> list[Span]:
    return [m.span() for m in _CN_ID.finditer(text) if valid_resident_id(m.group())]


def luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


# Issuer prefixes of the networks people use: Visa, Mastercard, Amex, UnionPay, Discover,
# JCB, Diners, Maestro, and Chinese banks' domestic 9xxx cards.
_CARD_PREFIX = re.compile(
    r"^(?:4|5[1-5]|2[2-7]|3[47]|62|81|60|65|35|30|36|38|39|50|5[6-9]|6[37]|9[0-9])"
)
_CARD = re.compile(r"(?<![\d\-])\d(?:[ \-]?\d){12,18}(?![\d\-])")


def find_bank_cards(text: str) -> list[Span]:
    spans = []
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(digits):
            continue
        if len(digits) == 18 and valid_resident_id(digits):
            continue  # a resident id number, the other detector's
        if luhn_valid(digits):
            spans.append(match.span())
    return spans


# Lengths of IBANs by country (ISO 13616 registry; the common ones and every SEPA country).
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20,
    "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18,
    "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30,
    "KW": 30, "KZ": 20, "LB": 28, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24,
    "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28,
    "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SE": 24, "SI": 19, "SK": 24,
    "SM": 27, "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}  # fmt: skip
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2})(\d{2})(?=[ ]?[A-Z0-9])")


def iban_valid(compact: str) -> bool:
    """ISO 13616: the country's length, then mod 97 of the rearranged number is 1."""
    if _IBAN_LENGTHS.get(compact[:2]) != len(compact):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def find_ibans(text: str) -> list[Span]:
    spans = []
    for match in _IBAN_START.finditer(text):
        length = _IBAN_LENGTHS.get(match.group(1))
        if length is None:
            continue
        # Walk the characters, skipping single grouping spaces, until the country's length.
        compact, end = [], match.start()
        while end < len(text) and len(compact) < length:
            char = text[end]
            if char == " " and compact and end + 1 < len(text) and text[end + 1] != " ":
                end += 1
                continue
            if not (char.isascii() and char.isalnum()):
                break
            compact.append(char.upper())
            end += 1
        following = text[end : end + 1]
        if following and following.isascii() and following.isalnum():
            continue  # the number goes on: not this country's IBAN
        if len(compact) == length and iban_valid("".join(compact)):
            spans.append((match.start(), end))
    return spans


# --------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------

DETECTORS: dict[str, Detector] = {
    d.key: d
    for d in (
        Detector("api_key", SECRET, find_api_keys),
        Detector("password", SECRET, find_passwords),
        Detector("email", PERSONAL, find_emails),
        Detector("phone", PERSONAL, find_phones),
        Detector("resident_id", PERSONAL, find_resident_ids),
        Detector("bank_card", PERSONAL, find_bank_cards),
        Detector("iban", PERSONAL, find_ibans),
        Detector("address", PERSONAL, find_addresses),
    )
}


def merge(spans: list[Span]) -> list[Span]:
    """Sorted, overlapping or touching spans joined."""
    merged: list[Span] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def detect(key: str, text: str) -> list[Span]:
    return merge(DETECTORS[key].find(text or ""))
