"""Facts in a real browser: a bulk archive and its undo, inline editing, a history timeline."""

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator.models import Fact
from lifecycle.demo import load_demo
from tests.e2e.helpers import log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(monkeypatch):
    # These tests are about the pages; re-indexing every change would only add model time.
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    load_demo(index=False)
    get_user_model().objects.create_superuser("li", "", "a long pass phrase 42")


def test_undoing_a_bulk_archive_restores_every_fact(page, live_server, demo, screenshot_dir):
    active = Fact.objects.active().count()
    project = set(Fact.objects.active().filter(scope="project").values_list("pk", flat=True))
    log_in(page, live_server, "/facts/?scope=project")
    rows = page.locator("table.facts-table tbody tr")
    expect(rows).to_have_count(len(project))

    page.locator("thead input[data-select-all]").check()  # only there with JavaScript
    page.select_option("#facts-bulk select[name=action]", "archive")
    page.locator("#facts-bulk button.primary").click()
    banner = page.locator(".done-banner")
    expect(banner).to_contain_text(f"{len(project)} changes made in one step.")
    expect(page.locator("table.facts-table")).to_have_count(0)  # none active in the filter
    assert Fact.objects.active().count() == active - len(project)
    page.screenshot(path=str(screenshot_dir / "facts-bulk-en.png"), full_page=True)

    banner.locator("button.undo-batch").click()
    expect(rows).to_have_count(len(project))
    assert set(Fact.objects.active().filter(scope="project").values_list("pk", flat=True)) == (
        project
    )

    switch_language(page, "zh-hans")
    expect(page.locator("table.facts-table tbody tr")).to_have_count(len(project))
    page.screenshot(path=str(screenshot_dir / "facts-bulk-zh.png"), full_page=True)


def test_a_fact_is_edited_inline(page, live_server, demo):
    fact = Fact.objects.get(content="orchard 每周二发布一次")
    log_in(page, live_server, "/facts/")
    row = page.locator(f"#fact-{fact.pk}")
    row.locator("a.edit-link").click()
    editor = page.locator(f"#fact-{fact.pk}.editing textarea")
    editor.fill("orchard 每周二下午发布一次")
    page.locator(f"#fact-{fact.pk}.editing button.primary").click()
    expect(page.locator(f"#fact-{fact.pk}")).to_contain_text("orchard 每周二下午发布一次")
    expect(page.locator(f"#fact-{fact.pk}.editing")).to_have_count(0)
    fact.refresh_from_db()
    assert fact.content == "orchard 每周二下午发布一次" and fact.verified


def test_the_history_timeline_shows_every_version(page, live_server, demo, screenshot_dir):
    helix = Fact.objects.get(content__startswith="Now uses Helix")
    chain = helix.chain()
    log_in(page, live_server, f"/facts/{helix.pk}/")
    versions = page.locator("ol.timeline > li.version")
    expect(versions).to_have_count(3)
    for number, version in enumerate(chain, start=1):
        expect(versions.nth(number - 1)).to_contain_text(f"Version {number}")
        expect(page.locator(f"#version-{version.pk}")).to_be_visible()
    expect(versions.nth(2).locator("ins").first).to_be_visible()  # what changed, highlighted
    expect(page.locator("ol.timeline > li.version.current")).to_contain_text("Helix")
    page.screenshot(path=str(screenshot_dir / "fact-history-en.png"), full_page=True)

    page.locator(f"#version-{chain[0].pk} header a").click()
    expect(page.locator(".banner.warn")).to_contain_text("This is an older version")
    page.locator("form[action$='/revert/'] button").click()
    expect(page.locator("h1")).to_have_text("Uses VS Code as the main editor")
    expect(page.locator("ol.timeline > li.version")).to_have_count(4)

    page.goto(f"{live_server.url}/facts/{helix.pk}/")
    switch_language(page, "zh-hans")
    expect(page.locator("ol.timeline > li.version")).to_have_count(4)
    page.screenshot(path=str(screenshot_dir / "fact-history-zh.png"), full_page=True)


def test_a_filter_applies_on_change_but_the_bulk_action_does_not_reload(page, live_server, demo):
    project = Fact.objects.active().filter(scope="project").count()
    log_in(page, live_server, "/facts/")
    page.select_option(".fact-filters select[name=scope]", "project")
    expect(page).to_have_url(re.compile(r"[?&]scope=project"))
    rows = page.locator("table.facts-table tbody tr")
    expect(rows).to_have_count(project)
    rows.first.locator('input[name="ids"]').check()
    page.select_option("#facts-bulk select[name=action]", "archive")  # must keep the tick
    expect(rows.first.locator('input[name="ids"]')).to_be_checked()


def test_the_facts_table_never_widens_the_page(page, live_server, demo):
    page.set_viewport_size({"width": 1000, "height": 800})
    log_in(page, live_server, "/facts/")
    expect(page.locator("table.facts-table")).to_be_visible()
    scroll, client = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert scroll <= client  # the table scrolls inside its box


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_facts_table_fits_its_box_at_1280_px(page, live_server, demo, language, screenshot_dir):
    """Issue 29: 1,086 px in a 1,060 px box in English, the Edit column cut to "Ed", the
    content column 170 px wide, under eleven filter controls."""
    page.set_viewport_size({"width": 1280, "height": 900})
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    log_in(page, live_server, "/facts/")
    expect(page.locator("table.facts-table")).to_be_visible()
    table, box = page.evaluate(
        """() => [document.querySelector('table.facts-table').getBoundingClientRect().width,
                  document.querySelector('.table-scroll').clientWidth]"""
    )
    assert table <= box, (table, box)
    content = page.locator("table.facts-table tbody td.content-cell").first.bounding_box()
    assert content["width"] >= 280  # a sentence reads on two or three lines, not ten
    edit = page.locator("table.facts-table tbody a.edit-link").first
    scroll_right = page.evaluate(
        "() => document.querySelector('.table-scroll').getBoundingClientRect().right"
    )
    assert edit.bounding_box()["x"] + edit.bounding_box()["width"] <= scroll_right
    visible = page.locator("form.fact-filters").locator("select, input:not([type=hidden])")
    shown = [n for n in range(visible.count()) if visible.nth(n).is_visible()]
    assert len(shown) <= 6  # the rarely used ones fold under "More filters"
    page.screenshot(path=str(screenshot_dir / f"facts-1280-{language}.png"), full_page=True)
    page.locator("form.fact-filters details.more summary").click()
    expect(page.locator("form.fact-filters input[name=tag]")).to_be_visible()
