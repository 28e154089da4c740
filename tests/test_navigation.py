"""The navigation: daily pages on the bar, the rest in a "More" menu that needs no JavaScript."""

import re


def _bar(page: str) -> str:
    return page.split('<nav class="nav"', 1)[1].split("</nav>", 1)[0]


def test_the_less_used_pages_sit_in_the_more_menu(client_in):
    bar = _bar(client_in.get("/").content.decode())
    menu = bar.split('<details class="nav-more">', 1)[1]
    on_bar = bar.split('<details class="nav-more">', 1)[0]
    assert re.findall(r'href="([^"]+)"', menu) == [
        "/attachments/",
        "/jobs/",
        "/agents/",
        "/playground/",
        "/settings/",
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
