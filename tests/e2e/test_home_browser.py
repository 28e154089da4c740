"""A person logs in with a real browser and sees the home page in Chinese."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_first_run_login_and_chinese_home(page, live_server, screenshot_dir):
    page.goto(live_server.url + "/")
    assert page.url.endswith("/setup/")
    page.fill("#id_username", "li")
    page.fill("#id_display_name", "李雷")
    page.fill("#id_password1", "a long pass phrase 42")
    page.fill("#id_password2", "a long pass phrase 42")
    page.click("button.primary")
    page.wait_for_url(live_server.url + "/")
    assert get_user_model().objects.filter(username="li").exists()

    page.click("form.lang button[value=zh-hans]")  # one click, no second "Switch"
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")  # the new page, not the old
    assert page.locator("nav.nav a[aria-current=page]").inner_text() == "首页"
    assert "助手记得的关于 李雷 的事" in page.locator("h1").inner_text()
    page.screenshot(path=str(screenshot_dir / "home-zh.png"), full_page=True)

    page.click("button.link")  # log out
    page.wait_for_url("**/accounts/login/")
    assert page.locator("h1").inner_text() == "登录"
