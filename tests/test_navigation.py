"""The navigation: daily pages on the bar, the rest in a "More" menu that needs no JavaScript."""

import re


def _bar(page: str) -> str:
    return page.split('<nav class="nav"', 1)[1].split("</nav>", 1)[0]


def test_the_less_used_pages_sit_in_the_more_menu(client_in):
    bar = _bar(client_in.get("/").content.decode())
    menu = bar.split('<details class="nav-more">', 1)[1]
    on_bar = bar.split('<details class="nav-more">', 1)[0]
    assert re.findall(r'href="([^"]+)"', menu) == [
        "/facts/new/",
        "/attachments/",
        "/calibration/",
        "/recalls/",
        "/agents/",
        "/playground/",
        "/settings/import-history/",
        "/settings/guardrails/",
        "/jobs/",
        "/settings/",
    ]
    assert re.findall(r'<p class="nav-group">([^<]+)</p>', menu) == [
        "Memory",
        "Agents and imports",
        "System",
    ]
    for url in ("/review/", "/facts/", "/episodes/", "/sessions/", "/cards/", "/debugger/"):
        assert f'href="{url}"' in on_bar


def test_a_page_in_the_menu_marks_the_menu_current(client_in):
    bar = _bar(client_in.get("/jobs/").content.decode())
    assert '<summary class="current">' in bar
    assert 'href="/jobs/" aria-current="page"' in bar
    assert '<summary class="current">' not in _bar(client_in.get("/facts/").content.decode())


def test_the_menu_is_translated(client_in):
    bar = _bar(client_in.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode())
    assert "更多" in bar and "后台任务" in bar


def test_a_page_under_settings_marks_its_own_link_not_settings(client_in):
    bar = _bar(client_in.get("/settings/guardrails/").content.decode())
    assert 'href="/settings/guardrails/" aria-current="page"' in bar
    assert 'href="/settings/" aria-current="page"' not in bar
    assert bar.count('aria-current="page"') == 1


def test_every_page_has_the_search_box_and_a_one_click_language_switch(client_in):
    for url in ("/", "/facts/", "/settings/guardrails/", "/recalls/"):
        page = client_in.get(url).content.decode()
        assert 'id="site-search"' in page and 'action="/search/"' in page
        assert '<button type="submit" class="lang-switch" name="language" value="zh-hans"' in (page)
        assert ">Switch<" not in page


def test_the_language_button_switches_in_one_post(client_in):
    response = client_in.post("/i18n/setlang/", {"language": "zh-hans", "next": "/facts/"})
    assert response.status_code == 302 and response["Location"] == "/facts/"
    page = client_in.get("/facts/").content.decode()
    assert '<html lang="zh-hans">' in page and 'value="en"' in page and "English" in page
