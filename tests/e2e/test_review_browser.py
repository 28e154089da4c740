"""The review desk in a real browser: a person works through the demo queue by keyboard."""

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator.models import EventType, Fact, MemoryEvent, PendingItem, PendingStatus
from lifecycle.demo import load_demo
from tests.e2e.helpers import log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
CURRENT, DONE = re.compile(r"\bcurrent\b"), re.compile(r"\bdone\b")
COMMITS = "Wants commit messages written in English, in the imperative"


@pytest.fixture
def demo(monkeypatch):
    # These tests are about the pages; re-indexing every change would only add model time.
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    load_demo(index=False)
    get_user_model().objects.create_superuser("li", "", "a long pass phrase 42")


def item(page, content):
    return page.locator("ol.queue > li.item", has_text=content)


def status_of(content) -> str:
    return PendingItem.objects.get(candidate__content=content).status


def test_a_person_works_through_the_queue_by_keyboard(page, live_server, demo, screenshot_dir):
    log_in(page, live_server, "/review/")
    queue = page.locator("ol.queue > li.item")
    expect(queue).to_have_count(5)
    expect(page.locator("#shortcuts")).to_contain_text("next / previous")
    expect(page.locator("#review-count")).to_have_text("5")

    page.keyboard.press("j")
    first = queue.first
    expect(first).to_have_class(CURRENT)
    page.screenshot(path=str(screenshot_dir / "review-en.png"), full_page=True)

    # i: the agent wanted to delete a fact; the person keeps it.
    page.keyboard.press("i")
    expect(first).to_have_class(DONE)
    expect(page.locator("#review-count")).to_have_text("4")

    # The selection moved on to the orchard conflict: e opens the editor in place.
    orchard = item(page, "orchard 改成每周四发布")
    expect(orchard).to_have_class(CURRENT)
    page.keyboard.press("e")
    editor = page.locator("li.item.editing textarea")
    expect(editor).to_be_focused()
    editor.fill("orchard 从下个月起改成每周四发布")
    page.locator("li.item.editing button.primary").click()
    expect(page.locator("li.item.done", has_text="从下个月起")).to_be_visible()

    # c confirms the next one; u takes it back; c again.
    theme = item(page, "Wants commit messages")
    expect(theme).to_have_class(CURRENT)
    page.keyboard.press("c")
    expect(theme).to_have_class(DONE)
    page.keyboard.press("u")
    expect(theme).not_to_have_class(DONE)
    assert status_of(COMMITS) == PendingStatus.PENDING
    page.keyboard.press("c")
    expect(theme).to_have_class(DONE)

    # l opens "later" with its first choice focused; Enter snoozes for an hour.
    shanghai = item(page, "李雷搬到了上海")
    expect(shanghai).to_have_class(CURRENT)
    page.keyboard.press("l")
    expect(shanghai.locator("details.later .later-form button").first).to_be_focused()
    page.keyboard.press("Enter")
    expect(shanghai).to_have_class(DONE)
    expect(page.locator("#review-count")).to_have_text("1")

    leak = Fact.objects.get(content__startswith="本周在排查 orchard")
    assert leak.status == "active"  # "keep the fact" kept it
    orchard_fact = Fact.objects.get(content="orchard 从下个月起改成每周四发布")
    assert orchard_fact.verified and orchard_fact.supersedes.content == "orchard 每周二发布一次"
    assert Fact.objects.active().get(content=COMMITS).verified
    assert status_of("李雷搬到了上海") == PendingStatus.SNOOZED
    assert MemoryEvent.objects.filter(event_type=EventType.UNDO).count() == 1

    page.reload()
    expect(queue).to_have_count(1)
    expect(page.locator("section.snoozed")).to_contain_text("李雷搬到了上海")
    switch_language(page, "zh-hans")
    expect(page.locator("ol.queue > li.item")).to_have_count(1)
    page.screenshot(path=str(screenshot_dir / "review-zh.png"), full_page=True)


def test_bulk_ignore_and_undo_all_in_the_queue(page, live_server, demo):
    log_in(page, live_server, "/review/")
    ignored = PendingItem.objects.filter(status=PendingStatus.REJECTED).count()  # answered before
    page.locator("label.select-all input").check()  # only visible with JavaScript
    page.locator("#review-bulk button[value=ignore]").click()
    expect(page.locator(".done-banner")).to_contain_text("5 changes made in one step.")
    assert PendingItem.objects.filter(status=PendingStatus.REJECTED).count() == ignored + 5
    page.locator(".done-banner button.undo-batch").click()
    expect(page.locator("ol.queue > li.item")).to_have_count(5)
    assert PendingItem.objects.filter(status=PendingStatus.PENDING).count() == 5


def test_an_over_long_edit_is_refused_on_the_page(page, live_server, demo):
    log_in(page, live_server, "/review/")
    target = item(page, "李雷最近在学 Rust")
    target.locator("a[data-key=e]").click()
    page.locator("li.item.editing textarea").fill("长" * 2001)
    page.locator("li.item.editing button.primary").click()
    expect(page.locator("li.item.editing")).to_contain_text("The memory is too long")
    assert status_of("李雷最近在学 Rust，周末会写一点练习代码") == PendingStatus.PENDING
