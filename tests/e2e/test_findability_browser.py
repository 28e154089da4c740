"""Finding things and writing one's own memories in a real browser, in both languages: the
`/` shortcut and the global search, the grouped More menu, the one-click language switch, Add
a memory from Facts and Delete for good with its undo; the search without JavaScript too."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator import conversations
from curator import writepath as wp
from curator.models import Fact, FactStatus
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def person():
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    wp.propose(wp.Candidate(content="用户住在杭州"), actor="person")
    conversations.record_turn("trip", 0, "user", "周末想去杭州西湖走走")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_slash_opens_the_search_and_it_lists_what_matches(
    page, live_server, person, screenshot_dir, language
):
    log_in(page, live_server, "/facts/")
    if language != "en":
        switch_language(page, language)
    page.locator("h1").click()  # focus is on the page, not in a field
    page.keyboard.press("/")
    expect(page.locator("#site-search")).to_be_focused()
    page.keyboard.type("杭州")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search/?q=*")
    expect(page.locator("#search-facts")).to_contain_text("用户住在杭州")
    expect(page.locator("#search-turns")).to_contain_text("西湖走走")
    assert page.locator("html").get_attribute("lang") == language
    page.screenshot(path=str(screenshot_dir / f"search-{language}.png"), full_page=True)


def test_slash_typed_in_a_field_stays_a_slash(page, live_server, person):
    log_in(page, live_server, "/facts/new/")
    page.fill("#id_content", "")
    page.locator("#id_content").type("a/b")
    expect(page.locator("#id_content")).to_have_value("a/b")
    expect(page.locator("#site-search")).not_to_be_focused()


def test_the_search_works_without_javascript(browser, live_server, person):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    log_in(page, live_server, "/")
    page.fill("#site-search", "guardrails")
    page.press("#site-search", "Enter")
    page.locator("#search-pages a").first.click()
    expect(page.locator("h1")).to_have_text("Guardrails")
    context.close()


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_more_menu_reaches_every_page_and_the_language_changes_in_one_click(
    page, live_server, person, screenshot_dir, language
):
    log_in(page, live_server, "/")
    if language != "en":
        page.click(f"form.lang button[value={language}]")
        expect(page.locator("html")).to_have_attribute("lang", language)
    page.click(".nav-more summary")
    menu = page.locator(".nav-menu")
    expect(menu).to_be_visible()
    hrefs = menu.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    for url in ("/agents/", "/settings/guardrails/", "/settings/import-history/",
                "/calibration/", "/recalls/"):  # fmt: skip
        assert url in hrefs
    page.screenshot(path=str(screenshot_dir / f"nav-more-{language}.png"))
    menu.locator('a[href="/settings/guardrails/"]').click()
    expect(page.locator(".nav-more summary")).to_have_class("current")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_memory_is_added_from_facts_and_deleted_for_good_with_an_undo(
    page, live_server, person, screenshot_dir, language
):
    log_in(page, live_server, "/facts/")
    if language != "en":
        switch_language(page, language)
    page.click("#add-memory")
    page.fill("#id_content", "我每天早上喝一杯美式咖啡")
    page.fill("#id_tags", "coffee")
    page.screenshot(path=str(screenshot_dir / f"memory-new-{language}.png"), full_page=True)
    page.click("#memory-form button.primary")
    expect(page.locator(".done-banner")).to_be_visible()
    fact = Fact.objects.get(content="我每天早上喝一杯美式咖啡")
    assert fact.verified and fact.source == "manual"

    page.click("#delete-for-good")
    expect(page.locator("#confirm-delete-for-good")).to_be_visible()
    page.screenshot(path=str(screenshot_dir / f"delete-for-good-{language}.png"), full_page=True)
    page.click("#confirm-delete-for-good")
    banner = page.locator(".done-banner")
    expect(banner).to_be_visible()
    fact.refresh_from_db()
    assert fact.status == FactStatus.ARCHIVED
    page.screenshot(path=str(screenshot_dir / f"deleted-for-good-{language}.png"), full_page=True)
    with page.expect_response(lambda r: "/undo/" in r.url):
        banner.locator("button.primary").click()  # Undo, within the window
    page.wait_for_load_state()
    fact.refresh_from_db()
    assert fact.status == FactStatus.ACTIVE
