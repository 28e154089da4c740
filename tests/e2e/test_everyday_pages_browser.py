"""Issue 29's everyday pages in a real browser, in both languages, with screenshots: the same
waiting-turn count on Sessions, a session's page and Jobs; no search-index jargon on Home;
the agents table apart from the "New agent" card; a single review item without a stray list
number or a selection box that does nothing."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator.models import PendingItem, PendingStatus, Session
from lifecycle import turnstate
from lifecycle.demo import load_demo
from memsite.core.tokens import create_token
from tests.e2e.helpers import PASSWORD, USERNAME, log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
LANGUAGES = ["en", "zh-hans"]


@pytest.fixture
def demo(monkeypatch, settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id, attempt=0: None)
    load_demo(index=False)
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    create_token("chat assistant")


def in_language(page, live_server, language, path):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    log_in(page, live_server, path)
    expect(page.locator("html")).to_have_attribute("lang", language)


@pytest.mark.parametrize("language", LANGUAGES)
def test_sessions_a_session_and_jobs_count_the_same_waiting_turns(
    page, live_server, demo, language, screenshot_dir
):
    waiting = turnstate.awaiting().count()
    assert waiting  # the demo's open session has turns not extracted yet
    in_language(page, live_server, language, "/sessions/")
    shown = 0
    for session in Session.objects.all():
        row = page.locator(f"#session-{session.pk}")
        badge = row.locator("td .badge").last
        own = turnstate.awaiting(session.turns.all()).count()
        if own:
            expect(badge).to_contain_text(str(own))
        shown += own
    assert shown == waiting
    page.screenshot(path=str(screenshot_dir / f"sessions-{language}.png"), full_page=True)

    busiest = max(Session.objects.all(), key=lambda s: turnstate.awaiting(s.turns.all()).count())
    page.goto(f"{live_server.url}/sessions/{busiest.pk}/")
    marked = page.locator('[data-state="waiting"], [data-state="retrying"]')
    expect(marked).to_have_count(turnstate.awaiting(busiest.turns.all()).count())
    for block in page.locator("li.turn").all():  # never "nothing extracted" above memories
        text = block.inner_text()
        if block.locator(".turn-extracted").count():
            assert "nothing extracted" not in text and "未抽取到内容" not in text
    page.screenshot(path=str(screenshot_dir / f"session-{language}.png"), full_page=True)

    page.goto(f"{live_server.url}/jobs/")
    expect(page.locator('[data-count="unextracted"]')).to_have_text(str(waiting))
    expect(page.locator("#search-indexes")).to_be_visible()
    page.screenshot(path=str(screenshot_dir / f"jobs-{language}.png"), full_page=True)

    page.goto(f"{live_server.url}/")
    assert "FTS5" not in page.locator("main").inner_text()
    page.screenshot(path=str(screenshot_dir / f"home-{language}.png"), full_page=True)


@pytest.mark.parametrize("language", LANGUAGES)
def test_agents_calibration_and_a_single_review_item_look_right(
    page, live_server, demo, language, screenshot_dir
):
    in_language(page, live_server, language, "/agents/")
    table = page.locator(".table-scroll:has(#agent-list)").bounding_box()
    card = page.locator("#new-agent").bounding_box()
    assert card["y"] - (table["y"] + table["height"]) >= 8  # a visible gap, not touching
    page.screenshot(path=str(screenshot_dir / f"agents-{language}.png"), full_page=True)

    page.goto(f"{live_server.url}/calibration/")
    swatches = page.locator(".calibration-legend .swatch")
    expect(swatches).to_have_count(6)
    colours = swatches.evaluate_all("s => s.map(e => getComputedStyle(e).backgroundColor)")
    assert len(set(colours)) == 6
    page.screenshot(path=str(screenshot_dir / f"calibration-{language}.png"), full_page=True)

    item = PendingItem.objects.filter(status=PendingStatus.PENDING).first()
    page.goto(f"{live_server.url}/review/{item.pk}/")
    queue = page.locator("ol.queue")
    assert queue.evaluate("ol => getComputedStyle(ol).listStyleType") == "none"
    expect(page.locator('ol.queue input[type="checkbox"]')).to_have_count(0)
    page.screenshot(path=str(screenshot_dir / f"review-item-{language}.png"), full_page=True)
