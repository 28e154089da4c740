"""The Jobs page in a real browser: run the consolidation, open its events, undo it."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from lifecycle.demo import load_demo
from lifecycle.models import JobRun

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(monkeypatch, settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id, attempt=0: None)
    load_demo(index=False)
    get_user_model().objects.create_superuser("li", "", "a long pass phrase 42")


def test_run_now_then_look_at_the_events_and_undo_the_run(page, live_server, demo, screenshot_dir):
    page.goto(f"{live_server.url}/accounts/login/?next=/jobs/")
    page.fill("#id_username", "li")
    page.fill("#id_password", "a long pass phrase 42")
    page.press("#id_password", "Enter")
    page.wait_for_url(f"{live_server.url}/jobs/")
    expect(page.locator("[data-consumer=missing]")).to_be_visible()

    page.get_by_role("button", name="Run consolidation now").click()
    run = page.locator("tr.run").first
    expect(run).to_contain_text("succeeded")  # swapped in by HTMX; the test runs tasks inline
    expect(run).to_contain_text("c. Decay")
    page.screenshot(path=str(screenshot_dir / "jobs-en.png"), full_page=True)

    run.locator("details summary").click()  # the events load on first open
    expect(run.locator(".run-events li").first).to_be_visible()

    run.get_by_role("button", name="Undo run").click()
    expect(page.locator("#messages")).to_contain_text("Run undone")
    assert JobRun.objects.get().status == "undone"
