"""Retention at review time: each review card (and each pending item of the API) says how long
the memory will last once confirmed, permanent, until a date, or fading when unused, and the
person can change it before confirming."""

from datetime import datetime, time, timedelta

import pytest
from django.utils import timezone

from curator import retention
from curator import writepath as wp
from curator.models import Fact, PendingItem
from lifecycle import decay
from lifecycle.extraction.extract import rule_candidates
from tests.lifecycle_helpers import session, turn

HX = {"HX-Request": "true"}
pytestmark = pytest.mark.django_db


def queued(content="不要在周末给我发工作提醒", **fields) -> PendingItem:
    fields.setdefault("confidence", 0.7)
    return wp.propose(wp.Candidate(content, **fields), actor="agent").pending


def extracted_rule() -> PendingItem:
    """What the rules extractor makes of a bare "不要 X": a rule for review, guessed 24 hours."""
    said = turn(session(), "不要在周末给我发工作提醒")
    for candidate in rule_candidates(said):
        wp.propose(candidate, actor="job")
    return PendingItem.objects.get()


def end_of(day) -> datetime:
    return timezone.make_aware(datetime.combine(day, time(23, 59)))


def test_the_review_card_says_how_long_each_memory_will_last(client_in):
    rule = extracted_rule()
    liked = queued("喜欢乌龙茶", type="preference")
    plain = queued("最近在看《三体》")
    page = client_in.get("/review/").content.decode()
    tomorrow = timezone.localtime(timezone.now() + timedelta(days=1)).strftime("%Y-%m-%d")
    assert f"expires on {tomorrow}" in page  # the extractor's 24 hours, shown, not silent
    assert 'data-retention="permanent"' in page and 'data-retention="expires"' in page
    in_a_month = timezone.localdate() + timedelta(days=30)
    assert f"expires on {in_a_month:%Y-%m-%d}" in page  # a plain fact: long term, 30 days
    for item in (rule, liked, plain):
        assert f'name="r{item.pk}-retention"' in page


def test_a_rule_confirmed_as_permanent_keeps_no_one_day_expiry(client_in):
    rule = extracted_rule()
    assert rule.candidate["duration"] == "24h"
    data = {f"r{rule.pk}-retention": "permanent"}
    assert client_in.post(f"/review/{rule.pk}/confirm/", data).status_code == 302
    fact = Fact.objects.get()
    assert fact.priority == "permanent" and fact.expires_at is None and fact.verified


def test_confirming_as_shown_keeps_what_the_card_said(client_in):
    rule = extracted_rule()
    shown = wp.retention_of(rule)
    data = {f"r{rule.pk}-retention": "expires", f"r{rule.pk}-expires_on": shown.expires_at.date()}
    client_in.post(f"/review/{rule.pk}/confirm/", data, headers=HX)
    fact = Fact.objects.get()
    assert fact.priority == "transient" and fact.expires_at is not None


def test_choosing_a_day_sets_the_expiry_to_its_end(client_in):
    item = queued("下周三前提醒我交报告", type="fact")
    day = timezone.localdate() + timedelta(days=9)
    data = {f"r{item.pk}-retention": "expires", f"r{item.pk}-expires_on": day.isoformat()}
    client_in.post(f"/review/{item.pk}/confirm/", data, headers=HX)
    fact = Fact.objects.get()
    assert fact.expires_at == end_of(day) and fact.priority == "long_term"


def test_choosing_decay_lets_a_confirmed_memory_fade(client_in):
    item = queued("最近在看《三体》")
    client_in.post(f"/review/{item.pk}/confirm/", {f"r{item.pk}-retention": "decays"})
    fact = Fact.objects.get()
    assert fact.verified and fact.expires_at is None and fact.priority == "long_term"
    assert decay.decaying().filter(pk=fact.pk).exists()  # verified, yet it fades when unused
    assert retention.for_fact(fact).kind == "decays"
    page = client_in.get(f"/facts/{fact.pk}/").content.decode()
    assert "decays" in page


@pytest.mark.parametrize("headers", [{}, HX])
def test_a_day_in_the_past_is_refused_and_nothing_is_confirmed(client_in, headers):
    item = queued()
    yesterday = timezone.localdate() - timedelta(days=1)
    data = {f"r{item.pk}-retention": "expires", f"r{item.pk}-expires_on": yesterday.isoformat()}
    response = client_in.post(f"/review/{item.pk}/confirm/", data, headers=headers, follow=True)
    assert "Choose a day after today." in response.content.decode()
    assert not Fact.objects.exists() and PendingItem.objects.get().status == "pending"


def test_edit_and_confirm_changes_the_retention_too(client_in):
    item = queued("李雷在学 Rust", subject="李雷", predicate="正在学习")
    form = client_in.get(f"/review/{item.pk}/edit/").content.decode()
    assert f'name="r{item.pk}-retention"' in form
    data = {
        "edit": "1",
        f"c{item.pk}-content": "李雷在学 Rust 和 Go",
        f"c{item.pk}-subject": "李雷",
        f"c{item.pk}-predicate": "正在学习",
        f"c{item.pk}-type": "skill",
        f"c{item.pk}-scope": "user",
        f"c{item.pk}-importance": "0.5",
        f"r{item.pk}-retention": "permanent",
    }
    client_in.post(f"/review/{item.pk}/confirm/", data, headers=HX)
    fact = Fact.objects.get()
    assert fact.content == "李雷在学 Rust 和 Go" and fact.priority == "permanent"


def test_the_api_pending_items_carry_the_same_retention(api):
    rule = extracted_rule()
    body = api.get("/pending").json()
    shown = body["items"][0]["retention"]
    assert shown["kind"] == "expires" and shown["priority"] == "transient"
    assert shown["expires_at"] and "expires on" in shown["label"]
    decaying = queued("最近在看《三体》", decays=True)
    item = next(i for i in api.get("/pending").json()["items"] if i["id"] == decaying.pk)
    assert item["retention"]["kind"] == "decays"
    assert item["retention"]["half_life_days"] == retention.HALF_LIFE_DAYS
    confirmed = api.post(f"/pending/{rule.pk}/confirm", {"edits": {"retention": "permanent"}})
    assert confirmed.status_code == 200
    assert confirmed.json()["fact"]["priority"] == "permanent"
    assert confirmed.json()["fact"]["expires_at"] is None


def test_the_api_refuses_an_expiry_choice_without_a_date(api):
    item = queued()
    response = api.post(f"/pending/{item.pk}/confirm", {"edits": {"retention": "expires"}})
    assert response.status_code == 422 and response.json()["code"] == "invalid_expires_at"
    until = (timezone.now() + timedelta(days=5)).isoformat()
    edits = {"retention": "expires", "expires_at": until}
    assert api.post(f"/pending/{item.pk}/confirm", {"edits": edits}).status_code == 200
    assert Fact.objects.get().priority == "long_term"


def test_a_chosen_permanent_wins_over_a_guessed_duration():
    clean = wp.clean_candidate(
        wp.Candidate("不要用英文回答", type="rule", priority="permanent", duration="24h"),
        owner=None,
    )
    assert clean.retention() == ("permanent", None)


def test_the_review_card_says_it_in_chinese_too(client_in):
    queued("最近在看《三体》", decays=True)
    page = client_in.get("/review/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "确认后保留" in page and "天不用后重要度减半" in page and "不用就逐渐淡化" in page


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_expiry_date_field_is_iso_in_every_language(client_in, language):
    """A date input takes only 2026-12-27; zh-Hans' own format 2026/12/27 left it empty and
    confirming failed with "choose the day" (issue 29)."""
    item = queued("最近在看《三体》")
    shown = timezone.localdate(wp.retention_of(item).expires_at)
    client_in.cookies["django_language"] = language
    page = client_in.get("/review/").content.decode()
    assert f'name="r{item.pk}-expires_on" value="{shown:%Y-%m-%d}"' in page
    data = {f"r{item.pk}-retention": "expires", f"r{item.pk}-expires_on": f"{shown:%Y-%m-%d}"}
    assert client_in.post(f"/review/{item.pk}/confirm/", data).status_code == 302
    assert timezone.localdate(Fact.objects.get().expires_at) == shown
