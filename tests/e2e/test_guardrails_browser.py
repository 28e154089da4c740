"""Guardrails in a real browser: a rule tried on sample text (HTMX swaps the result in place),
saved, applied to a turn already stored; the same page without JavaScript; Chinese."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator import conversations
from curator.models import ConversationTurn, GuardRule
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
SAID = "我最近在看心理医生，健康状况不好"


@pytest.fixture
def person():
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)


def test_a_rule_is_tried_saved_and_applied_to_a_stored_turn(
    page, live_server, person, screenshot_dir
):
    conversations.record_turn("chat-1", 0, "user", SAID)
    log_in(page, live_server, "/settings/guardrails/")
    page.get_by_role("link", name="Add a rule").click()
    page.fill("#id_name", "health / 健康")
    page.fill("#id_words", "health\n健康")
    page.check("#id_redact_turns")
    page.fill("#id_sample", SAID)
    page.get_by_role("button", name="Try it").click()
    expect(page.locator("#trial pre")).to_have_text("我最近在看心理医生，████状况不好")
    assert "/new/" in page.url  # swapped in place: still on the form, nothing saved
    assert not GuardRule.objects.filter(name="health / 健康").exists()
    page.screenshot(path=str(screenshot_dir / "guardrails-trial.png"), full_page=True)

    page.get_by_role("button", name="Save").click()
    expect(page.locator("#match-turns")).to_contain_text("████状况不好")
    page.get_by_role("button", name="Mask the matches everywhere").click()
    expect(page.locator(".done-banner")).to_contain_text("Undo all")
    assert ConversationTurn.objects.get().content == "我最近在看心理医生，████状况不好"

    switch_language(page, "zh-hans")
    expect(page.locator("h1")).to_have_text("防护规则")
    expect(page.locator("#detectors")).to_contain_text("API 密钥和访问令牌")
    page.screenshot(path=str(screenshot_dir / "guardrails-zh.png"), full_page=True)


def test_the_guardrails_work_without_javascript(browser, live_server, person):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    log_in(page, live_server, "/settings/guardrails/")
    row = page.locator("tr[data-detector=email]")
    expect(row).to_contain_text("to review")  # personal data: on, sent to review
    row.get_by_role("button", name="Block instead").click()
    expect(page.locator("tr[data-detector=email]")).to_contain_text("Review instead")
    assert GuardRule.objects.get(detector="email").action == "block"

    page.goto(f"{live_server.url}/settings/guardrails/new/")
    page.fill("#id_name", "ex")
    page.fill("#id_words", "前任")
    page.fill("#id_sample", "别提前任")
    page.get_by_role("button", name="Try it").click()  # a full page round trip
    expect(page.locator("#trial pre")).to_have_text("别提████")
    context.close()
