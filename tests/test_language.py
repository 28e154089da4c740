"""The language switcher works for everyone, logged in or not."""

from django.conf import settings

from curator.models import Owner


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


def test_switching_language_records_the_owners_language(client_in):
    client_in.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert Owner.default().language == "zh-hans"
    assert Owner.default().agent_language() == "zh-hans"


def test_an_unknown_language_is_not_recorded(client_in):
    client_in.post("/i18n/setlang/", {"language": "xx", "next": "/"})
    assert Owner.default().language == ""


def test_the_setup_page_records_the_language_it_was_shown_in(client, db):
    client.post(
        "/setup/",
        {
            "username": "li",
            "password1": "a long pass phrase 42",
            "password2": "a long pass phrase 42",
        },
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    assert Owner.default().language == "zh-hans"
