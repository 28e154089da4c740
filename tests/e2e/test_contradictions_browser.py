"""The contradiction inbox in a real browser: keep the right, undo; merge without JavaScript."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator import writepath as wp
from curator.models import Contradiction, Fact
from lifecycle import contradictions
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _write(content: str) -> Fact:
    candidate = wp.Candidate(content=content, confidence=0.95, priority="permanent")
    return wp.propose(candidate, actor="agent").fact


@pytest.fixture
def inbox(monkeypatch):
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    coffee = _write("I drink coffee every morning"), _write("I don't drink coffee any more")
    _write("用户喜欢猫")
    _write("用户讨厌猫")
    contradictions.scan()
    return coffee


def test_keep_the_right_then_undo(page, live_server, inbox, screenshot_dir):
    left, _right = inbox
    log_in(page, live_server, "/review/")
    page.locator(".review-tabs a", has_text="Contradictions").click()
    cards = page.locator("li.contradiction")
    expect(cards).to_have_count(2)
    page.screenshot(path=str(screenshot_dir / "contradictions-en.png"), full_page=True)
    coffee = cards.filter(has_text="coffee")
    coffee.locator("button.keep-right").click()
    expect(page.locator(".done-banner")).to_contain_text("archived")
    expect(page.locator("li.contradiction")).to_have_count(1)
    assert Fact.objects.get(pk=left.pk).status == "archived"
    page.locator(".done-banner button.primary").click()
    expect(page.locator("li.contradiction")).to_have_count(2)
    assert Fact.objects.get(pk=left.pk).status == "active"
    switch_language(page, "zh-hans")
    expect(page.locator("li.contradiction").first.locator("button.both")).to_have_text("两者都对")
    page.screenshot(path=str(screenshot_dir / "contradictions-zh.png"), full_page=True)


def test_merge_works_without_javascript(browser, live_server, inbox):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    log_in(page, live_server, "/review/contradictions/")
    cats = page.locator("li.contradiction", has_text="猫")
    cats.locator("details.merge summary").click()
    cats.locator("textarea[name=text]").fill("用户以前讨厌猫，现在喜欢猫")
    cats.locator("details.merge button.primary").click()
    expect(page.locator(".done-banner")).to_contain_text("用户以前讨厌猫，现在喜欢猫")
    item = Contradiction.objects.get(left__content="用户以前讨厌猫，现在喜欢猫")
    assert (item.status, item.right.status) == ("resolved", "archived")
    context.close()
