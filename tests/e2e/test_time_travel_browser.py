"""Time travel in a real browser: the Facts page as of a date, and the version active then."""

from datetime import datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from curator import writepath as wp
from curator.models import Fact, MemoryEvent
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
DAY1 = timezone.make_aware(datetime(2026, 3, 1, 9, 0))


def _written(content: str, when: datetime) -> Fact:
    candidate = wp.Candidate(
        content=content, subject="user", predicate="lives_in", confidence=0.95, priority="permanent"
    )
    fact = wp.propose(candidate, actor="agent").fact
    Fact.objects.filter(pk=fact.pk).update(created_at=when)
    MemoryEvent.objects.filter(fact=fact).update(created_at=when)
    return fact


@pytest.fixture
def moved(monkeypatch):
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    berlin = _written("The user lives in Berlin", DAY1)
    munich = _written("The user moved to Munich", DAY1 + timedelta(days=2))
    return berlin, munich


def test_the_facts_page_goes_back_to_day_two(page, live_server, moved, screenshot_dir):
    berlin, _munich = moved
    log_in(page, live_server, "/facts/")
    rows = page.locator("table.facts-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Munich")

    page.locator("form.fact-filters details.more summary").click()  # "More filters"
    page.fill("input[name=as_of]", "2026-03-02T12:00")
    page.locator("form.fact-filters button[type=submit]").click()
    expect(page.locator(".as-of-banner")).to_contain_text("2026-03-02 12:00")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Berlin")
    page.screenshot(path=str(screenshot_dir / "facts-as-of-en.png"), full_page=True)

    rows.first.locator("a").first.click()
    then = page.locator("li.version.active-then")
    expect(then).to_have_count(1)
    expect(then).to_contain_text("Berlin")
    expect(then).to_contain_text("active at 2026-03-02 12:00")

    switch_language(page, "zh-hans")
    expect(page.locator("li.version.active-then")).to_contain_text("2026-03-02 12:00 时有效")
    page.screenshot(path=str(screenshot_dir / "fact-history-as-of-zh.png"), full_page=True)


def test_the_history_date_works_without_javascript(browser, live_server, moved):
    _berlin, munich = moved
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    log_in(page, live_server, f"/facts/{munich.pk}/")
    page.fill("input[name=as_of]", "2026-03-04T08:00")
    page.locator("form.as-of-form button[type=submit]").click()
    expect(page.locator("li.version.active-then")).to_contain_text("Munich")
    context.close()
