"""The onboarding wizard in a real browser: fill, go back, change, confirm, never again, reset;
with HTMX, without JavaScript, and screenshots of every step in both languages."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator.models import Fact, Owner, Source

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
PASSWORD = "a long pass phrase 42"


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    return settings.MEMORY_DIR


def _login(page, live_server):
    get_user_model().objects.create_superuser("li", "", PASSWORD)
    page.goto(live_server.url + "/accounts/login/")
    page.fill("#id_username", "li")
    page.fill("#id_password", PASSWORD)
    page.click("button.primary")
    page.wait_for_url(live_server.url + "/")


def _current_step(page) -> str:
    return page.locator(".wizard-progress li[aria-current=step] .num").inner_text()


def _fill_step_one(page):
    page.fill("#id_assistant_name", "十一")
    page.fill("#id_positioning", "务实的工程搭档，帮我把事情做完。")
    page.fill("#id_tone", "直接、温和；先给结论")
    page.fill("#id_taboos", "不编造执行结果\n不保存密码和密钥")


def _fill_step_two(page, address="小李"):
    page.fill("#id_address", address)
    page.fill("#id_background", "杭州的后端工程师")
    page.fill("#id_tech", "Python\npytest")


def test_the_wizard_end_to_end_with_htmx(page, live_server, memory_dir, screenshot_dir):
    _login(page, live_server)
    page.click(".guide-step[data-step=onboarding] a.button")
    page.wait_for_url(live_server.url + "/onboarding/")
    assert _current_step(page) == "1"
    assert page.input_value("#id_assistant_name") == "Shiyi"
    page.evaluate("window.stillTheSamePage = true")  # gone if a step reloads the page

    page.fill("#id_assistant_name", "")
    page.click("button[value=next]")
    page.wait_for_selector("#id_assistant_name[aria-invalid=true]")
    assert page.locator("#err_assistant_name").is_visible()

    _fill_step_one(page)
    page.click("button[value=next]")
    page.wait_for_selector("#id_address")
    assert _current_step(page) == "2"
    page.fill("#id_background", "typed before going back")
    page.click("button[value=back]")
    page.wait_for_selector("#id_positioning")
    assert page.input_value("#id_positioning") == "务实的工程搭档，帮我把事情做完。"
    page.click("button[value=next]")
    page.wait_for_selector("#id_address")
    assert page.input_value("#id_background") == "typed before going back"

    page.reload()  # the draft lives on the server
    assert _current_step(page) == "2"
    assert page.input_value("#id_background") == "typed before going back"
    page.evaluate("window.stillTheSamePage = true")
    _fill_step_two(page, address="Li")
    page.click("button[value=next]")
    page.wait_for_selector(".wizard-cards")
    assert page.locator(".wizard-card h1").all_inner_texts() == ["十一", "Li"]

    page.click("button[value=back]")  # "go back and change"
    page.wait_for_selector("#id_address")
    page.fill("#id_address", "小李")
    page.click("button[value=next]")
    page.wait_for_selector(".wizard-cards")
    assert page.evaluate("window.stillTheSamePage") is True
    page.click("button[value=confirm]")
    page.wait_for_url(live_server.url + "/")
    assert "小李" in page.locator(".message.success").inner_text()
    assert page.locator(".guide-step[data-step=onboarding]").get_attribute("data-done") == "true"
    assert "小李" in (memory_dir / "shared" / "User.md").read_text()
    assert Fact.objects.filter(source=Source.ONBOARDING, verified=True).count() == 7

    page.goto(live_server.url + "/onboarding/")  # never shown again
    page.wait_for_url(live_server.url + "/settings/")
    page.click("#onboarding a.button")
    page.wait_for_url("**/settings/onboarding/reset/")
    assert "prefilled with your last answers" in page.locator("main").inner_text()
    page.click("button.primary")
    page.wait_for_url(live_server.url + "/onboarding/")
    assert _current_step(page) == "1" and page.input_value("#id_assistant_name") == "十一"
    assert not Owner.objects.get(key="global").identity_confirmed


def test_the_wizard_works_without_javascript(browser, live_server, memory_dir):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    _login(page, live_server)
    page.goto(live_server.url + "/onboarding/")
    _fill_step_one(page)
    page.click("button[value=next]")
    page.wait_for_selector("#id_address")
    _fill_step_two(page)
    page.click("button[value=next]")
    page.wait_for_selector(".wizard-cards")
    page.click("button[value=confirm]")
    page.wait_for_url(live_server.url + "/")
    assert Owner.objects.get(key="global").identity_confirmed
    assert (memory_dir / "system" / "ShiYi.md").read_text().startswith("# 十一")
    context.close()


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_screenshots_of_each_step(page, live_server, screenshot_dir, language):
    _login(page, live_server)
    if language != "en":
        page.click(f"form.lang button[value={language}]")
        expect(page.locator("html")).to_have_attribute("lang", language)
    page.goto(live_server.url + "/onboarding/")
    assert page.locator("html").get_attribute("lang") == language
    assert page.locator(".wizard-progress li").count() == 3
    page.screenshot(path=str(screenshot_dir / f"onboarding-1-{language}.png"), full_page=True)
    _fill_step_one(page)
    page.click("button[value=next]")
    page.wait_for_selector("#id_address")
    page.screenshot(path=str(screenshot_dir / f"onboarding-2-{language}.png"), full_page=True)
    _fill_step_two(page)
    page.click("button[value=next]")
    page.wait_for_selector(".wizard-cards")
    assert _current_step(page) == "3"
    page.screenshot(path=str(screenshot_dir / f"onboarding-3-{language}.png"), full_page=True)
