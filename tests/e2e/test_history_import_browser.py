"""Import history in a real browser: upload a ChatGPT export, read the preview, import it,
find both conversations on the Sessions page; the progress follows a running import by
polling; the whole flow without JavaScript; Chinese."""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from lifecycle import chat_import, runs
from lifecycle.models import ChatImport, ImportStatus
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
CHATGPT = Path(__file__).parents[1] / "data" / "chats" / "chatgpt_conversations.json"


@pytest.fixture
def person():
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)


def test_an_export_is_previewed_imported_and_listed(page, live_server, person, screenshot_dir):
    log_in(page, live_server, "/settings/import-history/")
    page.set_input_files("#history-upload input[type=file]", str(CHATGPT))
    page.select_option("#history-upload select", "chatgpt")
    page.get_by_role("button", name="Upload and preview").click()
    expect(page.locator("#p-conversations")).to_have_text("2")
    expect(page.locator("#p-languages")).to_have_text("Chinese 1 · English 1")
    expect(page.locator(".sample-conversation").first).to_contain_text("我住在杭州")
    switch_language(page, "zh-hans")
    expect(page.locator("#preview-title")).to_have_text("文件里有什么")
    page.screenshot(path=str(screenshot_dir / "history-import-preview-zh.png"), full_page=True)
    switch_language(page, "en")

    page.locator("#start-import").click()
    expect(page.locator(".import-status")).to_have_text("done")
    expect(page.locator("#import-state progress")).to_have_attribute("value", "100")
    page.get_by_role("link", name="See the sessions").click()
    rows = page.locator("table.sessions-table tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("table.sessions-table")).to_contain_text("杭州周末去哪儿")
    expect(page.locator("table.sessions-table")).to_contain_text("CSV column average")


def test_the_progress_is_polled_until_the_import_stops(page, live_server, person):
    job = ChatImport.objects.create(
        fmt="chatgpt",
        file_name="conversations.json",
        path=str(CHATGPT),
        digest="x",
        status=ImportStatus.QUEUED,
        preview={"conversations": 2, "turns": 8, "first": "", "last": "", "sample": []},
        conversations=2,
        turns=8,
    )
    log_in(page, live_server, f"/settings/import-history/{job.pk}/")
    expect(page.locator(".import-status")).to_have_text("queued")
    runs.acquire(chat_import.lock_name(job), "a worker")  # what a running import holds
    ChatImport.objects.filter(pk=job.pk).update(
        status=ImportStatus.RUNNING, position=1, turns_done=4, turns_added=4
    )
    expect(page.locator("#import-state progress")).to_have_attribute("value", "50")
    ChatImport.objects.filter(pk=job.pk).update(
        status=ImportStatus.DONE, position=2, turns_done=8, turns_added=8
    )
    expect(page.locator(".import-status")).to_have_text("done")


def test_importing_works_without_javascript(browser, live_server, person):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    log_in(page, live_server, "/settings/import-history/")
    page.set_input_files("#history-upload input[type=file]", str(CHATGPT))
    page.get_by_role("button", name="Upload and preview").click()
    page.locator("#start-import").click()
    expect(page.locator(".import-status")).to_have_text("done")
    context.close()
