"""The card editor in a real browser: live preview, Ctrl-S, the unsaved-changes warning, the
disk-conflict refusal with a merge, and revisions (compare, restore)."""

import pytest
from django.contrib.auth import get_user_model

from curator import cards

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
PASSWORD = "a long pass phrase 42"


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    return settings.MEMORY_DIR


@pytest.fixture
def logged_in(page, live_server):
    get_user_model().objects.create_superuser("li", "", PASSWORD)
    page.goto(live_server.url + "/accounts/login/")
    page.fill("#id_username", "li")
    page.fill("#id_password", PASSWORD)
    page.click("button.primary")
    page.wait_for_url(live_server.url + "/")
    return page


def test_live_preview_ctrl_s_and_the_unsaved_warning(logged_in, live_server, screenshot_dir):
    page = logged_in
    cards.save("project", "\n# Orchard\n", "person")  # a leading newline must survive the form
    page.goto(live_server.url + "/cards/project/")
    editor = page.locator("#id_content")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("\n\n| week | done |\n|---|---|\n| 47 | cards |\n\n- one\n- two\n")
    page.keyboard.type("\n<script>window.hacked = 1</script>\n")
    page.wait_for_selector("#card-preview table td:has-text('cards')")
    preview = page.locator("#card-preview")
    assert preview.locator("li").all_inner_texts() == ["one", "two"]
    assert preview.locator("script").count() == 0
    assert "<script>window.hacked = 1</script>" in preview.inner_text()
    assert page.evaluate("window.hacked") is None
    assert page.locator("[data-unsaved]").is_visible()
    page.screenshot(path=str(screenshot_dir / "cards-editor-en.png"), full_page=True)

    page.on("dialog", lambda dialog: dialog.dismiss())  # "stay on this page"
    with page.expect_event("dialog") as warning:
        page.click("nav.card-tabs a[href='/cards/']")
    assert warning.value.type == "beforeunload"
    assert page.url.endswith("/cards/project/") and "47" in page.input_value("#id_content")

    page.keyboard.press("Control+s")
    page.wait_for_selector(".message.success")
    assert "| 47 | cards |" in cards.read("project")
    assert not page.locator("[data-unsaved]").is_visible()


def test_a_change_on_disk_is_refused_and_merged(logged_in, live_server, memory_dir, screenshot_dir):
    page = logged_in
    cards.save("user", "# Li\n- likes tea\n- lives in Hangzhou\n", "person")
    page.goto(live_server.url + "/cards/user/")
    text = page.input_value("#id_content").replace("likes tea", "likes green tea")
    page.fill("#id_content", text)
    (memory_dir / "shared" / "User.md").write_text("# Li\n- likes tea\n- lives in Shanghai\n")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#conflict")
    assert "lives in Shanghai" in page.locator("[data-version=theirs]").inner_text()
    assert "likes green tea" in page.locator("[data-version=mine]").inner_text()
    assert cards.read("user").endswith("Shanghai\n")  # nothing overwritten
    page.screenshot(path=str(screenshot_dir / "cards-conflict-en.png"), full_page=True)
    page.click("button[value=merge]")
    page.wait_for_selector(".message.success")
    assert cards.read("user") == "# Li\n- likes green tea\n- lives in Shanghai\n"


def test_revisions_compare_and_restore(logged_in, live_server, screenshot_dir):
    page = logged_in
    first = cards.save("memory", "# Core\n- old fact\n", "job")
    cards.save("memory", "# Core\n- new fact\n", "person")
    page.goto(live_server.url + "/cards/memory/revisions/")
    page.click("text=Compare selected")
    page.wait_for_selector("table.diff")
    assert "old fact" in page.locator("tr.diff-del").inner_text()
    page.screenshot(path=str(screenshot_dir / "cards-diff-en.png"), full_page=True)
    page.goto(live_server.url + "/cards/memory/revisions/")
    page.click(f"tr[data-revision='{first.pk}'] button:has-text('Restore')")
    page.wait_for_selector(".message.success")
    assert cards.read("memory") == "# Core\n- old fact\n"
    assert page.url.endswith("/cards/memory/")
