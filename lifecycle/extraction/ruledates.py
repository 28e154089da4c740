"""When what a person says became (or will become) true: dates for the rules extractor (pure).

"I moved to Berlin last month" is a location since about a month ago; "下周六要去爬山" is a
plan for a day a week or so ahead. Past expressions come from retrieval.timeparse (the same
parser that turns "昨天" in a query into a time filter); the future ones search never needed
are here: 明天, 后天, 下周六, 下下周六, 下个月, 明年, 这周末, 六月份, 12月20日, tomorrow, next
Friday, next month, this weekend, in June, on May 20, in two weeks.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from retrieval.timeparse import (
    CN_WEEKDAYS,
    EN_MONTHS,
    EN_WEEKDAYS,
    TimeRange,
    cn_number,
    find_times,
)

MONTHS = EN_MONTHS

_N = r"(\d{1,2}|[一二两三四五六七八九十]{1,3})"
_WEEKDAY = "|".join(EN_WEEKDAYS)
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))


def _day(now: datetime, offset: int = 0) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=offset)


def _days(start: datetime, count: int, text: str) -> TimeRange:
    return TimeRange(start, start + timedelta(days=count), text)


def _month_range(now: datetime, index: int, text: str) -> TimeRange:
    """The month `index` months after now's month."""
    absolute = now.year * 12 + now.month - 1 + index
    start = _day(now).replace(year=absolute // 12, month=absolute % 12 + 1, day=1)
    after = absolute + 1
    return TimeRange(start, start.replace(year=after // 12, month=after % 12 + 1), text)


def _year_range(now: datetime, offset: int, text: str) -> TimeRange:
    start = _day(now).replace(year=now.year + offset, month=1, day=1)
    return TimeRange(start, start.replace(year=start.year + 1), text)


def _next_month_named(now: datetime, month: int, text: str) -> TimeRange:
    ahead = (month - now.month) % 12
    return _month_range(now, ahead, text)


def _weekday_ahead(now: datetime, weekday: int, weeks: int, text: str) -> TimeRange:
    """Weekday of the week `weeks` after this one (weeks start on Monday)."""
    monday = _day(now, -now.weekday() + 7 * weeks)
    return _days(monday + timedelta(days=weekday), 1, text)


def _upcoming_weekday(now: datetime, weekday: int, text: str) -> TimeRange:
    ahead = (weekday - now.weekday()) % 7 or 7
    return _days(_day(now, ahead), 1, text)


def _future_date(now: datetime, month: int, day: int, text: str) -> TimeRange | None:
    try:
        start = _day(now).replace(month=month, day=day)
        if start < _day(now):
            start = start.replace(year=start.year + 1)
    except ValueError:
        return None
    return _days(start, 1, text)


def _weeks_prefix(prefix: str) -> int:
    return {"下下": 2, "下": 1, "这": 0, "本": 0}.get(prefix, 0)


_FUTURE: list[tuple[re.Pattern, object]] = [
    (re.compile(r"(下下|下|这|本)(?:个)?(?:周|星期|礼拜)([一二三四五六日天])"),
     lambda m, now: _weekday_ahead(now, CN_WEEKDAYS[m[2]], _weeks_prefix(m[1]), m[0])),
    (re.compile(r"(下下|下|这|本)(?:个)?周末"),
     lambda m, now: _days(_weekday_ahead(now, 5, _weeks_prefix(m[1]), m[0]).start, 2, m[0])),
    (re.compile(r"(下下|下)(?:个)?(?:周|星期|礼拜)"),
     lambda m, now: _days(_day(now, -now.weekday() + 7 * _weeks_prefix(m[1])), 7, m[0])),
    (re.compile(r"(下下|下)个月"), lambda m, now: _month_range(now, _weeks_prefix(m[1]), m[0])),
    (re.compile(r"大后天"), lambda m, now: _days(_day(now, 3), 1, m[0])),
    (re.compile(r"后天"), lambda m, now: _days(_day(now, 2), 1, m[0])),
    (re.compile(r"明天|明早|明晚"), lambda m, now: _days(_day(now, 1), 1, m[0])),
    (re.compile(r"今晚|今天晚上"), lambda m, now: _days(_day(now), 1, m[0])),
    (re.compile(r"明年"), lambda m, now: _year_range(now, 1, m[0])),
    (re.compile(r"今年"), lambda m, now: _year_range(now, 0, m[0])),
    (re.compile(r"(?<!\d)" + _N + r"月" + _N + r"[日号]"),
     lambda m, now: _future_date(now, cn_number(m[1]) or 0, cn_number(m[2]) or 0, m[0])),
    (re.compile(r"(?<![\d年])" + _N + r"月份?(?![\d一二三四五六七八九十日号])"),
     lambda m, now: _next_month_named(now, cn_number(m[1]) or 1, m[0])
     if 1 <= (cn_number(m[1]) or 0) <= 12 else None),
    (re.compile(r"\bthe day after tomorrow\b", re.I), lambda m, now: _days(_day(now, 2), 1, m[0])),
    (re.compile(r"\btomorrow\b", re.I), lambda m, now: _days(_day(now, 1), 1, m[0])),
    (re.compile(rf"\bnext\s+({_WEEKDAY})\b", re.I),
     lambda m, now: _weekday_ahead(now, EN_WEEKDAYS[m[1].lower()], 1, m[0])),
    (re.compile(rf"\b(?:on|this|coming)\s+({_WEEKDAY})s?\b", re.I),
     lambda m, now: _upcoming_weekday(now, EN_WEEKDAYS[m[1].lower()], m[0])),
    (re.compile(r"\b(this|next)\s+weekend\b", re.I),
     lambda m, now: _days(_weekday_ahead(now, 5, m[1].lower() == "next", m[0]).start, 2, m[0])),
    (re.compile(r"\bnext\s+week\b", re.I),
     lambda m, now: _days(_day(now, -now.weekday() + 7), 7, m[0])),
    (re.compile(r"\bnext\s+month\b", re.I), lambda m, now: _month_range(now, 1, m[0])),
    (re.compile(r"\bnext\s+(?:year|spring|summer|autumn|fall|winter)\b", re.I),
     lambda m, now: _year_range(now, 1, m[0])),
    (re.compile(r"\bthis\s+(?:year|spring|summer|autumn|fall|winter)\b", re.I),
     lambda m, now: _year_range(now, 0, m[0])),
    (re.compile(r"\bin\s+(\d{1,2}|two|three|four|a few)\s+(days|weeks|months)\b", re.I),
     lambda m, now: _in_span(now, m)),
    (re.compile(rf"\b(?:on\s+)?({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.I),
     lambda m, now: _future_date(now, MONTHS[m[1].lower()], int(m[2]), m[0])),
    (re.compile(rf"\bin\s+({_MONTH})\b", re.I),
     lambda m, now: _next_month_named(now, MONTHS[m[1].lower()], m[0])),
    (re.compile(r"\btonight\b", re.I), lambda m, now: _days(_day(now), 1, m[0])),
]  # fmt: skip
_WORDS = {"two": 2, "three": 3, "four": 4, "a few": 3}


def _in_span(now: datetime, m: re.Match) -> TimeRange:
    count = int(m[1]) if m[1].isdigit() else _WORDS[m[1].lower()]
    unit = {"days": 1, "weeks": 7, "months": 30}[m[2].lower()]
    return _days(_day(now, count * unit), 1, m[0])


def future(text: str, now: datetime) -> TimeRange | None:
    """The first future time expression in the text, or None."""
    found = []
    for pattern, fn in _FUTURE:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end, _ in found):
                continue
            if (value := fn(m, now)) is not None:
                found.append((m.start(), m.end(), value))
    return min(found, key=lambda item: item[0])[2] if found else None


_EN_YEAR = re.compile(r"\b(?:in|since)\s+((?:19|20)\d{2})\b", re.I)
_ZH_YEAR = re.compile(r"((?:19|20)\d{2})年")


def past(text: str, now: datetime) -> TimeRange | None:
    """The first past time expression ("上个月", "last month", "in 2021", "三年前")."""
    for pattern in (_EN_YEAR, _ZH_YEAR):
        if m := pattern.search(text):
            year = int(m[1])
            start = _day(now).replace(year=year, month=1, day=1)
            return TimeRange(start, start.replace(year=year + 1), m[0])
    ranges = [r for r in find_times(text, now) if r.start <= now]
    return ranges[0] if ranges else None


def label(span: TimeRange) -> str:
    """As precise as the expression: a year, a month or a day."""
    days = (span.end - span.start).days
    if days >= 360:
        return f"{span.start:%Y}"
    if days >= 28:
        return f"{span.start:%Y-%m}"
    return f"{span.start:%Y-%m-%d}"
