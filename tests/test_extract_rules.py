"""The rules extractor: each pattern in Chinese and English, and sentences that must not match."""

import pytest

from lifecycle.extraction.rules import extract

MATCHES = [
    # (text, type, predicate, content, pattern)
    ("我叫李雷", "identity", "name", "用户的名字是李雷", "zh:name"),
    ("我的名字是王芳", "identity", "name", "用户的名字是王芳", "zh:name"),
    ("叫我老李就行", "identity", "address as", "用户希望被称呼为“老李”", "zh:address"),
    ("我是一名后端工程师", "identity", "occupation", "用户是一名后端工程师", "zh:occupation"),
    ("我是个咖啡控", "identity", "identity", "用户是个咖啡控", "zh:i-am"),
    ("我住在杭州", "fact", "location", "用户住在杭州", "zh:place"),
    ("我喜欢拉面", "preference", "preference: 拉面", "用户喜欢拉面", "zh:like"),
    ("我不喜欢香菜", "preference", "preference: 香菜", "用户不喜欢香菜", "zh:dislike"),
    ("我讨厌开会", "preference", "preference: 开会", "用户讨厌开会", "zh:dislike"),
    ("我的编辑器是 Helix", "fact", "编辑器", "用户的编辑器是Helix", "zh:my-x-is"),
    ("我的生日是5月3日", "identity", "birthday", "用户的生日是5月3日", "zh:my-x-is"),
    ("请记住周二发布", "fact", "", "周二发布", "zh:remember"),
    ("以后回答用中文", "rule", "", "以后回答用中文", "zh:from-now-on"),
    ("禁止在周末提醒我", "rule", "", "禁止在周末提醒我", "zh:forbid"),
    ("别再用 class 组件了", "rule", "", "别再用 class 组件了", "zh:never-again"),
    ("不要重启服务", "rule", "", "不要重启服务", "zh:dont"),
    ("总是先备份再删除", "rule", "", "总是先备份再删除", "zh:always"),
    ("My name is Li Lei.", "identity", "name", "The user's name is Li Lei", "en:name"),
    ("Call me Lei.", "identity", "address as", "The user wants to be called “Lei”", "en:address"),
    (
        "I am a backend engineer.",
        "identity",
        "occupation",
        "The user is a backend engineer",
        "en:occupation",
    ),
    (
        "I'm a big fan of jazz.",
        "preference",
        "preference: jazz",
        "The user is a fan of jazz",
        "en:fan",
    ),  # fmt: skip
    ("I live in Berlin.", "fact", "location", "The user lives in Berlin", "en:place"),
    (
        "I prefer pytest over unittest.",
        "preference",
        "preference: pytest over unittest",
        "The user prefers pytest over unittest",
        "en:like",
    ),  # fmt: skip
    ("I like ramen.", "preference", "preference: ramen", "The user likes ramen", "en:like"),
    ("I hate tabs.", "preference", "preference: tabs", "The user hates tabs", "en:dislike"),
    (
        "I don't like meetings before 10.",
        "preference",
        "preference: meetings before 10",
        "The user does not like meetings before 10",
        "en:dislike",
    ),  # fmt: skip
    ("My editor is Helix.", "fact", "editor", "The user's editor is Helix", "en:my-x-is"),
    (
        "Remember: the deploy day is Tuesday.",
        "fact",
        "",
        "the deploy day is Tuesday",
        "en:remember",
    ),
    ("Always answer in English.", "rule", "", "Always answer in English", "en:always"),
    ("Never force-push to main.", "rule", "", "Never force-push to main", "en:never"),
    (
        "From now on, use metric units.",
        "rule",
        "",
        "From now on, use metric units",
        "en:from-now-on",
    ),
    ("Don't restart the server.", "rule", "", "Don't restart the server", "en:dont"),
]

NO_MATCH = [
    "我是说这个方案不行",  # 我是说 = "I mean", not an identity
    "我喜欢这个方案",  # deictic object: depends on context
    "你喜欢什么？",  # a question
    "如果我喜欢拉面怎么办",  # hypothetical
    "他喜欢拉面",  # about someone else
    "要不要重启？",
    "先别重启，下午再说",  # a one-off instruction about the task at hand
    "我的意思是先别动",
    "orchard 的 worker 内存又涨到 3G 多了，帮我看看是哪个进程。",
    "好，就这样。谢谢。",
    "I'm a morning person.",  # not a job: English "I'm a X" is only taken for work
    "I am going home.",
    "I'd like to see the logs.",
    "Do you like Python?",
    "If I like it, I'll buy it.",
    "My point is that we should wait.",
    "I like it.",
    "He likes ramen.",
    "Yes, backup first. Last time deleting it directly lost a day's data.",
    "",
]


@pytest.mark.parametrize(("text", "kind", "predicate", "content", "pattern"), MATCHES)
def test_it_extracts_an_explicit_statement(text, kind, predicate, content, pattern):
    found = extract(text)
    assert [(c.type, c.predicate, c.content, c.pattern) for c in found] == [
        (kind, predicate, content, pattern)
    ]


@pytest.mark.parametrize("text", NO_MATCH)
def test_it_ignores_what_states_nothing_about_the_person(text):
    assert extract(text) == []


def test_the_subject_is_the_persons_name_when_known():
    (fact,) = extract("我住在杭州", name="李雷")
    assert (fact.subject, fact.content) == ("李雷", "李雷住在杭州")
    (fact,) = extract("I live in Hangzhou now", name="Li Lei")
    assert (fact.subject, fact.predicate, fact.content) == (
        "Li Lei",
        "location",
        "Li Lei lives in Hangzhou",
    )


def test_the_same_attribute_in_both_languages_shares_subject_and_predicate():
    (zh,) = extract("我住在北京")
    (en,) = extract("I live in Hangzhou")
    assert (zh.subject, zh.predicate) == (en.subject, en.predicate) == ("user", "location")


def test_like_and_dislike_of_one_thing_share_a_predicate_so_one_replaces_the_other():
    (like,) = extract("我喜欢香菜")
    (dislike,) = extract("我不喜欢香菜")
    assert like.predicate == dislike.predicate


def test_confidence_follows_how_explicit_the_statement_was():
    said = {text: extract(text)[0].confidence for text in [
        "我叫李雷", "我喜欢拉面", "我比较喜欢拉面", "我可能喜欢爵士乐", "请记住我喜欢拉面",
        "不要重启服务", "禁止在周末提醒我"]}  # fmt: skip
    assert said["我叫李雷"] >= 0.95
    assert said["请记住我喜欢拉面"] > said["我喜欢拉面"] > said["我比较喜欢拉面"]
    assert said["我可能喜欢爵士乐"] < 0.85  # hedged: below the write threshold, reviewed
    assert said["不要重启服务"] < 0.85 < said["禁止在周末提醒我"]


def test_a_plain_dont_is_a_task_rule_but_never_again_is_permanent():
    assert extract("不要重启服务")[0].duration == "24h"
    assert extract("别再重启服务")[0].duration == "permanent"
    assert extract("Don't restart the server")[0].duration == "24h"
    assert extract("Don't ever restart the server")[0].duration == "permanent"


def test_a_bare_remember_applies_to_the_next_clause():
    (fact,) = extract("记住：我的生日是5月3日")
    assert fact.predicate == "birthday" and fact.confidence >= 0.92
    (fact,) = extract("Remember that my birthday is May 3.")
    assert (fact.predicate, fact.content) == ("birthday", "The user's birthday is May 3")


def test_several_statements_in_one_turn_are_all_found():
    found = extract("Hi, my name is Anna Smith and I live in Berlin.")
    assert [(c.predicate, c.content) for c in found] == [
        ("name", "The user's name is Anna Smith"),
        ("location", "The user lives in Berlin"),
    ]
    assert len(extract("我叫李雷。我喜欢拉面，我讨厌开会。")) == 3
