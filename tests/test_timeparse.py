"""Time expressions in Chinese and English become half-open day ranges; triggers are found."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from retrieval.timeparse import cn_number, find_times, parse_time, scan_times
from retrieval.triggers import detect

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 22, 15, 30, tzinfo=SH)  # a Sunday


def days(text):
    r = parse_time(text, NOW)
    return None if r is None else (r.start.strftime("%Y-%m-%d"), r.end.strftime("%Y-%m-%d"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("昨天我们聊了什么", ("2026-11-21", "2026-11-22")),
        ("今天", ("2026-11-22", "2026-11-23")),
        ("前天", ("2026-11-20", "2026-11-21")),
        ("大前天的事", ("2026-11-19", "2026-11-20")),
        ("上周", ("2026-11-09", "2026-11-16")),
        ("这周", ("2026-11-16", "2026-11-23")),
        ("上周二开会", ("2026-11-10", "2026-11-11")),
        ("上星期五", ("2026-11-13", "2026-11-14")),
        ("周三", ("2026-11-18", "2026-11-19")),
        ("5月2日", ("2026-05-02", "2026-05-03")),
        ("十二月三号", ("2025-12-03", "2025-12-04")),  # a future date without a year: last year
        ("2026年3月1日", ("2026-03-01", "2026-03-02")),
        ("2025年3月", ("2025-03-01", "2025-04-01")),
        ("上个月", ("2026-10-01", "2026-11-01")),
        ("本月", ("2026-11-01", "2026-12-01")),
        ("去年", ("2025-01-01", "2026-01-01")),
        ("三天前", ("2026-11-19", "2026-11-20")),
        ("两个月前", ("2026-09-01", "2026-10-01")),
        ("最近7天", ("2026-11-16", "2026-11-23")),
        ("三月份", ("2026-03-01", "2026-04-01")),
    ],
)
def test_chinese_expressions(text, expected):
    assert days(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what did we discuss yesterday?", ("2026-11-21", "2026-11-22")),
        ("the day before yesterday", ("2026-11-20", "2026-11-21")),
        ("today", ("2026-11-22", "2026-11-23")),
        ("last Tuesday", ("2026-11-17", "2026-11-18")),
        ("last sunday", ("2026-11-15", "2026-11-16")),
        ("on Monday", ("2026-11-16", "2026-11-17")),
        ("last week", ("2026-11-09", "2026-11-16")),
        ("this month", ("2026-11-01", "2026-12-01")),
        ("last year", ("2025-01-01", "2026-01-01")),
        ("3 days ago", ("2026-11-19", "2026-11-20")),
        ("two weeks ago", ("2026-11-02", "2026-11-09")),
        ("in the last 3 days", ("2026-11-20", "2026-11-23")),
        ("2026-03-01", ("2026-03-01", "2026-03-02")),
        ("2026/3/1", ("2026-03-01", "2026-03-02")),
        ("May 2nd", ("2026-05-02", "2026-05-03")),
        ("2 May 2025", ("2025-05-02", "2025-05-03")),
        ("Dec 25, 2023", ("2023-12-25", "2023-12-26")),
        ("in March", ("2026-03-01", "2026-04-01")),
        ("March 2026", ("2026-03-01", "2026-04-01")),
    ],
)
def test_english_expressions(text, expected):
    assert days(text) == expected


@pytest.mark.parametrize(
    "text",
    ["you may 2 of them", "每个月都这样", "几个月", "以前的目标", "版本 3.2", "", "remember this"],
)
def test_ordinary_words_are_not_dates(text):
    assert parse_time(text, NOW) is None


def test_ranges_are_in_the_time_zone_of_now():
    r = parse_time("昨天", NOW)
    assert r.start == datetime(2026, 11, 21, tzinfo=SH) and r.end == datetime(
        2026, 11, 22, tzinfo=SH
    )


def test_several_expressions_span_all_of_them():
    assert days("前天和昨天") == ("2026-11-20", "2026-11-22")
    assert [r.text for r in find_times("前天和昨天", NOW)] == ["前天", "昨天"]


@pytest.mark.parametrize(
    ("text", "value"),
    [("三", 3), ("十", 10), ("十二", 12), ("二十五", 25), ("12", 12), ("百", None)],
)
def test_chinese_numerals(text, value):
    assert cn_number(text) == value


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("你还记得上次那个面试吗", {"phrase"}),
        ("之前说的 orchard 问题", {"phrase"}),
        ("Do you remember my editor?", {"phrase"}),
        ("what did I say last time", {"phrase"}),
        ("昨天的会议纪要", {"time"}),
        ("2026-03-01 的记录", {"time"}),
        ("帮我看看 架构草图.png", {"file"}),
        ("open report_v2.pdf please", {"file"}),
        ("今天天气不错", {"time"}),
    ],
)
def test_triggers_for_long_term_memory(text, kinds):
    found = detect(text, NOW)
    assert found.triggered and {t.kind for t in found.triggers} == kinds


@pytest.mark.parametrize("text", ["帮我写一个排序函数", "How do I sort a list in Python?", ""])
def test_plain_requests_do_not_trigger(text):
    assert not detect(text, NOW).triggered


# --- dates that cannot be a filter (issue 18, item 3) -----------------------------------


@pytest.mark.parametrize(
    "text",
    ["what happened on 9999-12-31?", "9999年12月31日", "in December 9999", "January 0000"],
)
def test_a_date_past_the_calendar_is_ignored_not_a_crash(text):
    ranges, ignored = scan_times(text, NOW)
    assert ranges == [] and len(ignored) == 1
    assert find_times(text, NOW) == [] and parse_time(text, NOW) is None


def test_an_ignored_date_is_not_read_again_as_a_shorter_one():
    # "12月31日" inside the ignored "9999年12月31日" must not become this year's 31 December.
    assert scan_times("9999年12月31日", NOW) == ([], ["9999年12月31日"])


def test_a_day_whose_utc_time_falls_before_year_one_is_ignored():
    ahead = datetime(2026, 1, 5, 9, 0, tzinfo=ZoneInfo("Pacific/Kiritimati"))  # UTC+14
    assert scan_times("0001-01-01", ahead) == ([], ["0001-01-01"])


def test_usable_and_ignored_dates_are_told_apart():
    ranges, ignored = scan_times("2026-03-01 or 9999-12-31", NOW)
    assert [r.text for r in ranges] == ["2026-03-01"] and ignored == ["9999-12-31"]
    detection = detect("remember 9999-12-31?", NOW)
    assert detection.ignored_times == ("9999-12-31",)
    assert [t.kind for t in detection.triggers] == ["phrase"]
    assert detection.to_dict()["ignored_times"] == ["9999-12-31"]
