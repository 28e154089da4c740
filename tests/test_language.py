"""The language switcher works for everyone, logged in or not."""

from django.conf import settings


def test_the_switcher_turns_pages_chinese(client_in):
    response = client_in.post("/i18n/setlang/", {"language": "zh-hans", "next": "/facts/"})
    assert response["Location"] == "/facts/"
    assert client_in.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    page = client_in.get("/facts/").content.decode()
    assert '<html lang="zh-hans">' in page
    assert "事实" in page and "审阅" in page


def test_the_switcher_works_on_the_login_page(client, owner_user):
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/accounts/login/"})
    assert "登录" in client.get("/accounts/login/").content.decode()


def test_english_is_the_default(client_in):
    page = client_in.get("/").content.decode()
    assert '<html lang="en">' in page and "Review" in page


def test_the_browser_language_is_honoured(client_in):
    page = client_in.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert '<html lang="zh-hans">' in page
