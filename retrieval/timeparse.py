"""Time expressions in Chinese and English -> a half-open time range (pure, no Django).

Seed 000 section 5.5: a query that names a time ("昨天", "上周二", "5月2日", "last Tuesday",
"2026-03-01") is an exact query: it becomes a time filter on turns and episodes. All
ranges are [start, end) in the time zone of `now` (pass the person's local time).

Conventions where language is vague: "上周二" = Tuesday of the previous calendar week
(weeks start on Monday, as in Chinese usage); "last Tuesday" = the most recent Tuesday
before today (English usage); "on Tuesday" / "周二" = the most recent Tuesday up to today;
a date without a year that lies in the future means last year's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
EN_WEEKDAYS = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
EN_MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}


# A day inside datetime's range: the widest UTC offsets (+-14 h) cannot push these out of it.
FIRST_USABLE = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
LAST_USABLE = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)


@dataclass(frozen=True)
class TimeRange:
    start: datetime
    end: datetime
    text: str

    def to_dict(self) -> dict:
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "text": self.text}


def cn_number(text: str) -> int | None:
    """Arabic or simple Chinese numerals up to 99 (三, 十, 十二, 二十五, 12)."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in CN_DIGITS and ch != "十" for ch in text):
        return None
    if "十" not in text:
        return CN_DIGITS[text] if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    value = (CN_DIGITS.get(tens, 0) if tens else 1) * 10
    return value + (CN_DIGITS.get(ones, 0) if ones else 0)


def _day(now: datetime, offset: int = 0) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=offset)


def _days(start: datetime, count: int, text: str) -> TimeRange:
    return TimeRange(start, start + timedelta(days=count), text)


def _month(year: int, month: int, text: str, now: datetime) -> TimeRange | None:
    if not 1 <= month <= 12:
        return None
    start = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = start.replace(year=year + 1, month=1) if month == 12 else start.replace(month=month + 1)
    return TimeRange(start, nxt, text)


def _date(year: int | None, month: int, day: int, text: str, now: datetime) -> TimeRange | None:
    try:
        start = _day(now).replace(year=year or now.year, month=month, day=day)
    except ValueError:
        return None
    if year is None and start > now:
        try:
            start = start.replace(year=start.year - 1)  # "5月2日" said in January = last May
        except ValueError:
            return None
    return _days(start, 1, text)


def _week_start(now: datetime, weeks_back: int = 0) -> datetime:
    return _day(now, -now.weekday() - 7 * weeks_back)


def _weekday_in_week(now: datetime, weekday: int, weeks_back: int, text: str) -> TimeRange:
    return _days(_week_start(now, weeks_back) + timedelta(days=weekday), 1, text)


def _recent_weekday(now: datetime, weekday: int, text: str) -> TimeRange:
    back = (now.weekday() - weekday) % 7
    return _days(_day(now, -back), 1, text)


def _ago(now: datetime, count: int, unit: str, text: str) -> TimeRange | None:
    if unit in ("天", "day"):
        return _days(_day(now, -count), 1, text)
    if unit in ("周", "星期", "礼拜", "week"):
        return _days(_week_start(now, count), 7, text)
    if unit in ("个月", "月", "month"):
        month_index = now.year * 12 + now.month - 1 - count
        return _month(month_index // 12, month_index % 12 + 1, text, now)
    if unit in ("年", "year"):
        return _year(now.year - count, text, now)
    return None


def _year(year: int, text: str, now: datetime) -> TimeRange:
    start = now.replace(year=year, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    return TimeRange(start, start.replace(year=year + 1), text)


def _last_days(now: datetime, count: int, text: str) -> TimeRange:
    return TimeRange(_day(now, -count + 1), _day(now, 1), text)


# Each rule: a compiled pattern and a function (match, now) -> TimeRange | None. Order
# matters: longer, more specific expressions first.
_N = r"(\d{1,2}|[一二两三四五六七八九十]{1,3})"
IGN = re.IGNORECASE
RULES: list[tuple[re.Pattern, object]] = []


def rule(pattern: str, flags: int = 0):
    def register(fn):
        RULES.append((re.compile(pattern, flags), fn))
        return fn

    return register


@rule(r"(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})[日号]?")
def _iso(m, now):
    return _date(int(m[1]), int(m[2]), int(m[3]), m[0], now)


@rule(r"(\d{4})年(\d{1,2})月(?![\d一二三四五六七八九十])")
def _cn_year_month(m, now):
    return _month(int(m[1]), int(m[2]), m[0], now)


@rule(r"(?<!\d)(\d{1,2}|[一二三四五六七八九十]{1,3})月(\d{1,2}|[一二三四五六七八九十]{1,3})[日号]")
def _cn_month_day(m, now):
    month, day = cn_number(m[1]), cn_number(m[2])
    return _date(None, month, day, m[0], now) if month and day else None


@rule(r"大前天")
def _cn_3days(m, now):
    return _days(_day(now, -3), 1, m[0])


@rule(r"前天")
def _cn_2days(m, now):
    return _days(_day(now, -2), 1, m[0])


@rule(r"昨天|昨日|昨晚")
def _cn_yesterday(m, now):
    return _days(_day(now, -1), 1, m[0])


@rule(r"今天|今日|今早|今晚")
def _cn_today(m, now):
    return _days(_day(now), 1, m[0])


@rule(r"(上上|上|这|本)(?:个)?(?:周|星期|礼拜)([一二三四五六日天])")
def _cn_week_day(m, now):
    back = {"上上": 2, "上": 1, "这": 0, "本": 0}[m[1]]
    return _weekday_in_week(now, CN_WEEKDAYS[m[2]], back, m[0])


@rule(r"(上上|上|这|本)(?:个)?(?:周|星期|礼拜)")
def _cn_week(m, now):
    back = {"上上": 2, "上": 1, "这": 0, "本": 0}[m[1]]
    return _days(_week_start(now, back), 7, m[0])


@rule(r"(?:周|星期|礼拜)([一二三四五六日天])")
def _cn_weekday(m, now):
    return _recent_weekday(now, CN_WEEKDAYS[m[1]], m[0])


@rule(r"(上上|上|这|本)个?月")
def _cn_month(m, now):
    back = {"上上": 2, "上": 1, "这": 0, "本": 0}[m[1]]
    return _ago(now, back, "月", m[0])


# Seasons (northern hemisphere, meteorological: spring is March to May). "去年夏天" /
# "last summer" = the summer of the year named or the most recent one before the current
# season; a school holiday is its usual months. Before the bare year rules: "去年" alone is
# the whole year.
SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}
CN_SEASONS = {"春": "spring", "夏": "summer", "秋": "autumn", "冬": "winter"}
CN_HOLIDAYS = {"暑假": (7, 2), "寒假": (1, 2)}


def _span_months(year: int, month: int, count: int, text: str, now: datetime) -> TimeRange:
    start = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    end_month = month + count
    end = start.replace(year=year + (end_month - 1) // 12, month=(end_month - 1) % 12 + 1)
    return TimeRange(start, end, text)


def _last_season(now: datetime, season: str, text: str, back: int) -> TimeRange:
    """The season `back` seasons of its kind before the current or latest one (0: this one)."""
    month, count = SEASONS[season]
    year = now.year if (now.month, now.day) >= (month, 1) else now.year - 1
    latest = _span_months(year, month, count, text, now)
    if back == 0:
        return latest
    # A season under way is "this" one: "last summer" in July is the year before's.
    back_years = back if latest.end > now else back - 1
    return _span_months(year - back_years, month, count, text, now)


@rule(r"(前年|去年|今年|明年)(?:的)?(?:([春夏秋冬])(?:天|季)|(暑假|寒假))")
def _cn_season(m, now):
    year = now.year + {"前年": -2, "去年": -1, "今年": 0, "明年": 1}[m[1]]
    if m[3]:
        month, count = CN_HOLIDAYS[m[3]]
        return _span_months(year, month, count, m[0], now)
    month, count = SEASONS[CN_SEASONS[m[2]]]
    return _span_months(year, month, count, m[0], now)


@rule(r"\b(last|this|past)\s+(spring|summer|autumn|fall|winter)\b", IGN)
def _en_season(m, now):
    back = 0 if m[1].lower() == "this" else 1
    return _last_season(now, m[2].lower(), m[0], back)


@rule(r"\b(?:(spring|summer|autumn|fall|winter)\s+(?:of\s+)?(\d{4}))\b", IGN)
def _en_season_year(m, now):
    month, count = SEASONS[m[1].lower()]
    return _span_months(int(m[2]), month, count, m[0], now)


@rule(r"前年|去年|今年")
def _cn_year(m, now):
    return _year(now.year - {"前年": 2, "去年": 1, "今年": 0}[m[0]], m[0], now)


@rule(_N + r"\s*(天|周|星期|礼拜|个月|年)(?:之)?前")
def _cn_ago(m, now):
    count = cn_number(m[1])
    return _ago(now, count, m[2], m[0]) if count is not None else None


@rule(r"(?:最近|过去|近)\s*" + _N + r"\s*天")
def _cn_last_days(m, now):
    count = cn_number(m[1])
    return _last_days(now, count, m[0]) if count else None


@rule(
    r"(?<![\d年个几每上这本两])(\d{1,2}|十[一二]?|[一三四五六七八九])月份?(?![\d一二三四五六七八九十日号])"
)
def _cn_month_only(m, now):
    month = cn_number(m[1])
    year = now.year if month <= now.month else now.year - 1
    return _month(year, month, m[0], now)


_MONTH = "|".join(sorted(EN_MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(EN_WEEKDAYS)
_ORD = r"(\d{1,2})(?:st|nd|rd|th)?"


@rule(rf"\b({_MONTH})\.?\s+{_ORD}(?:,?\s+(\d{{4}}))?\b", IGN)
def _en_month_day(m, now):
    year = int(m[3]) if m[3] else None
    if m[1] == m[1].lower() == "may" and not year and m[2] == m[0].split()[-1]:
        return None  # "you may 2 ..." is a verb; "may 2nd" or "May 2" is a date
    return _date(year, EN_MONTHS[m[1].lower()], int(m[2]), m[0], now)


@rule(rf"\b{_ORD}\s+(?:of\s+)?({_MONTH})\.?(?:,?\s+(\d{{4}}))?\b", IGN)
def _en_day_month(m, now):
    year = int(m[3]) if m[3] else None
    return _date(year, EN_MONTHS[m[2].lower()], int(m[1]), m[0], now)


@rule(r"\bthe day before yesterday\b", IGN)
def _en_2days(m, now):
    return _days(_day(now, -2), 1, m[0])


@rule(r"\byesterday\b|\blast night\b", IGN)
def _en_yesterday(m, now):
    return _days(_day(now, -1), 1, m[0])


@rule(r"\btoday\b|\bthis morning\b|\btonight\b", IGN)
def _en_today(m, now):
    return _days(_day(now), 1, m[0])


@rule(rf"\blast\s+({_WEEKDAY})\b", IGN)
def _en_last_weekday(m, now):
    back = (now.weekday() - EN_WEEKDAYS[m[1].lower()] - 1) % 7 + 1
    return _days(_day(now, -back), 1, m[0])


@rule(rf"\b(?:on|this)\s+({_WEEKDAY})\b", IGN)
def _en_on_weekday(m, now):
    return _recent_weekday(now, EN_WEEKDAYS[m[1].lower()], m[0])


@rule(r"\b(last|this|past)\s+(week|month|year)\b", IGN)
def _en_last_unit(m, now):
    back = 0 if m[1].lower() == "this" else 1
    unit = m[2].lower()
    if m[1].lower() == "past":
        days = {"week": 7, "month": 30, "year": 365}[unit]
        return _last_days(now, days, m[0])
    return _ago(now, back, unit, m[0])


@rule(
    r"\b(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(day|week|month|year)s?\s+ago\b",
    IGN,
)
def _en_ago(m, now):
    words = {
        "a": 1,
        "an": 1,
        "one": 1,
        "two": 2,
        "three": 3,
        "four": 4,
        "five": 5,
        "six": 6,
        "seven": 7,
        "eight": 8,
        "nine": 9,
        "ten": 10,
    }
    raw = m[1].lower()
    count = int(raw) if raw.isdigit() else words[raw]
    return _ago(now, count, m[2].lower(), m[0])


@rule(r"\b(?:in\s+the\s+)?(?:last|past)\s+(\d{1,3})\s+days\b", IGN)
def _en_last_days(m, now):
    return _last_days(now, int(m[1]), m[0])


@rule(rf"\b({_MONTH})\.?\s+(\d{{4}})\b", IGN)
def _en_month_year(m, now):
    return _month(int(m[2]), EN_MONTHS[m[1].lower()], m[0], now)


@rule(rf"\bin\s+({_MONTH})\b", IGN)
def _en_in_month(m, now):
    month = EN_MONTHS[m[1].lower()]
    year = now.year if month <= now.month else now.year - 1
    return _month(year, month, m[0], now)


def find_times(text: str, now: datetime) -> list[TimeRange]:
    """Every time expression in the text, in reading order (overlapping matches skipped)."""
    return scan_times(text, now)[0]


def scan_times(text: str, now: datetime) -> tuple[list[TimeRange], list[str]]:
    """(ranges, ignored): the time expressions in reading order, and those naming a time that
    cannot be used as a filter ("9999-12-31": its end, or the range in UTC, is past the last
    date Python can hold). An ignored expression still claims its text, so "9999年12月31日"
    is not read again as this year's "12月31日"."""
    found: list[tuple[int, int, TimeRange | None]] = []
    ignored: list[tuple[int, str]] = []
    for pattern, fn in RULES:
        for m in pattern.finditer(text or ""):
            if any(m.start() < end and start < m.end() for start, end, _ in found):
                continue
            try:
                value = _usable(fn(m, now))
            except (OverflowError, ValueError):
                found.append((m.start(), m.end(), None))
                ignored.append((m.start(), m[0]))
                continue
            if value is not None:
                found.append((m.start(), m.end(), value))
    ranges = [value for _, _, value in sorted(found, key=lambda item: item[0]) if value]
    return ranges, [words for _, words in sorted(ignored)]


def _usable(value: TimeRange | None) -> TimeRange | None:
    """The range, if both ends can be converted to UTC (raises OverflowError otherwise).
    Filters compare with stored UTC times; ends within a day of the calendar's edge would
    overflow there or when shown in another time zone, so they count as unusable too."""
    if value is None:
        return None
    for end in (value.start, value.end):
        moment = end.astimezone(UTC) if end.tzinfo else end.replace(tzinfo=UTC)
        if not FIRST_USABLE <= moment <= LAST_USABLE:
            raise OverflowError(end)
    return value


def parse_time(text: str, now: datetime) -> TimeRange | None:
    """The range that spans every time expression in the text (None when there is none)."""
    ranges = find_times(text, now)
    if not ranges:
        return None
    label = ", ".join(r.text for r in ranges)
    return TimeRange(min(r.start for r in ranges), max(r.end for r in ranges), label)
