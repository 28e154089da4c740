"""The retrieval debugger in a real browser: search, then move a slider and watch it re-rank."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from playwright.sync_api import expect

from lifecycle.demo import load_demo
from tests.e2e.helpers import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo():
    load_demo(index=True)  # the debugger needs the real indexes
    get_user_model().objects.create_superuser("li", "", "a long pass phrase 42")
    yield
    # flush() does not empty virtual tables: leave them as clean as the models.
    with connection.cursor() as cur:
        for table in ("search_fts", "search_vec", "search_vecf"):
            cur.execute(f"DELETE FROM {table}")


def test_sliders_rerank_live_and_the_url_keeps_the_weights(page, live_server, demo, screenshot_dir):
    log_in(page, live_server, "/debugger/")
    page.fill("#id_q", "之前那个 orchard 内存泄漏")
    page.press("#id_q", "Enter")
    rows = page.locator("table.results tbody tr")
    expect(rows.first).to_be_visible()
    expect(page.locator("table.results mark").first).to_be_visible()
    expect(page.locator("#context pre.context-text")).to_contain_text("## Relevant memories")
    top = rows.first.locator("td.item .badge").first
    first_before = top.inner_text()

    page.locator("input[name=w_semantic]").fill("0")
    page.locator("input[name=w_keyword]").fill("0")
    page.locator("input[name=w_importance]").fill("100")
    page.wait_for_url("**w_importance=100**")
    expect(page.locator("select[name=preset]")).to_have_value("custom")
    expect(page.locator("#debugger-results")).to_contain_text("custom")
    expect(top).not_to_have_text(first_before)  # importance alone ranks differently
    first_after = top.inner_text()
    assert "preset=custom" in page.url
    page.screenshot(path=str(screenshot_dir / "debugger-en.png"), full_page=True)

    page.reload()  # the shared URL restores the same view
    expect(page.locator("input[name=w_importance]")).to_have_value("100")
    expect(top).to_have_text(first_after)


def test_the_form_columns_never_overlap_on_a_narrow_screen(page, live_server, demo):
    page.set_viewport_size({"width": 1000, "height": 800})
    log_in(page, live_server, "/debugger/")
    edges = page.evaluate(
        """() => [...document.querySelectorAll('.dbg-grid fieldset')].map(f => {
            const r = f.getBoundingClientRect(); return [r.left, r.right]; })"""
    )
    for (_, right), (left, _) in zip(edges, edges[1:], strict=False):
        assert right <= left  # the sliders stay inside their own column


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_weak_results_are_marked_below_the_recall_gate(
    page, live_server, demo, language, screenshot_dir
):
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    log_in(page, live_server, "/debugger/?q=coffee")
    rows = page.locator("table.results tbody tr")
    expect(rows.first).to_be_visible()
    under = page.locator("table.results tbody tr.under-gate")
    expect(under.first.locator("td.gate .badge")).to_be_visible()
    for score in under.evaluate_all("rows => rows.map(r => r.dataset.gateScore)"):
        assert float(score) < 0.5
    shown = page.locator("#context details.gate-cut li").count()
    summary = page.locator("#context details.gate-cut summary")
    if shown:
        expect(summary).to_contain_text(str(shown))
    page.screenshot(path=str(screenshot_dir / f"debugger-gate-{language}.png"), full_page=True)
