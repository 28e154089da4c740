"""Recall replay in a real browser: from a fact's page to a recall, then and now side by side."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator import writepath as wp
from curator.models import Owner
from retrieval.indexing import index_items
from retrieval.models import RecallLog
from retrieval.search import search
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def recalled(monkeypatch):
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    candidate = wp.Candidate(content="周末喜欢去西湖边跑步", confidence=0.95, priority="permanent")
    fact = wp.propose(candidate, actor="agent").fact
    index_items("fact", [fact])
    search("周末喜欢做什么运动", owner=Owner.default(), caller="api")
    wp.edit_fact(fact.pk, {"content": "周末喜欢去钱塘江边骑车"}, actor="person")
    return fact


def test_a_person_replays_a_recall_from_the_facts_page(page, live_server, recalled, screenshot_dir):
    log = RecallLog.objects.get()
    log_in(page, live_server, f"/facts/{recalled.pk}/")
    page.locator("a.recalled-link").click()
    expect(page.locator("table.recalls-table tbody tr")).to_have_count(1)
    page.locator(f"#recall-{log.pk} a").first.click()
    expect(page.locator(".replay-then")).to_contain_text("西湖边跑步")
    expect(page.locator(".replay-now")).to_contain_text("钱塘江边骑车")
    expect(page.locator(".replay-changes")).to_contain_text("Edited")
    page.screenshot(path=str(screenshot_dir / "recall-replay-en.png"), full_page=True)
    switch_language(page, "zh-hans")
    expect(page.locator(".replay-summary")).to_contain_text("此后有 1 条事实发生变化")
    page.screenshot(path=str(screenshot_dir / "recall-replay-zh.png"), full_page=True)
