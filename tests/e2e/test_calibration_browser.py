"""Calibration in a real browser: from the home page's metrics to a suggested threshold."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator import thresholds
from curator import writepath as wp
from memsite.core.tokens import create_token
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def history(monkeypatch):
    """An agent whose candidates at 0.8 and above were right 30 times out of 30."""
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    monkeypatch.setattr("lifecycle.tasks.contradictions_after_write", lambda: None)
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    token, _raw = create_token("chat assistant")
    for n in range(24):
        candidate = wp.Candidate(content=f"用户的第{n}条记忆", confidence=0.9, token_id=token.pk)
        wp.propose(candidate, actor="agent")
    for n in range(6):
        candidate = wp.Candidate(content=f"A guess number {n}", confidence=0.82, token_id=token.pk)
        wp.confirm_pending(wp.propose(candidate, actor="agent").pending.pk)
    wrong = wp.Candidate(content="Owns a boat", confidence=0.65, token_id=token.pk)
    wp.ignore_pending(wp.propose(wrong, actor="agent").pending.pk)
    return f"token:{token.pk}"


def test_a_person_applies_a_suggested_threshold_and_undoes_it(
    page, live_server, history, screenshot_dir
):
    log_in(page, live_server, "/")
    page.locator("a.calibration-link").click()
    agent = page.locator(f'section.calibration-source[data-source="{history}"]')
    expect(agent.locator("svg.calibration-chart")).to_be_visible()
    expect(agent.locator(".suggestion")).to_contain_text("At 0.80 and above, 30 of 30 were right")
    page.screenshot(path=str(screenshot_dir / "calibration-en.png"), full_page=True)
    agent.locator("button.apply-suggestion").click()
    expect(page.locator(".done-banner")).to_contain_text("write at 0.80")
    assert thresholds.for_source(history).write == 0.8
    page.locator(".done-banner button.primary").click()
    expect(page.locator(f'section[data-source="{history}"] .apply-suggestion')).to_be_visible()
    assert thresholds.for_source(history).write == 0.85
    switch_language(page, "zh-hans")
    expect(page.locator("h1")).to_have_text("校准")
    page.screenshot(path=str(screenshot_dir / "calibration-zh.png"), full_page=True)


def test_thresholds_are_set_without_javascript(browser, live_server, history):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    log_in(page, live_server, "/calibration/")
    form = page.locator('li[data-source="rules"] form.threshold-form')
    form.locator("input[name=write]").fill("0.95")
    form.locator("input[name=pending]").fill("0.7")
    form.locator("button[type=submit]").click()
    expect(page.locator(".done-banner")).to_contain_text("write at 0.95, review at 0.70")
    assert thresholds.for_source("rules").write == 0.95
    context.close()
