"""The first visit creates the owner account; afterwards the page is gone."""

from django.contrib.auth import get_user_model

from curator.models import Owner

GOOD = {
    "username": "li",
    "display_name": "李雷",
    "password1": "a long pass phrase 42",
    "password2": "a long pass phrase 42",
}


def test_a_fresh_install_sends_visitors_to_setup(client, db):
    response = client.get("/", follow=True)
    assert response.redirect_chain[-1][0] == "/setup/"
    assert "Create the owner account" in response.content.decode()


def test_setup_creates_the_account_and_logs_in(client, db):
    response = client.post("/setup/", GOOD, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    assert response.context["user"].username == "li"
    assert get_user_model().objects.get().is_superuser
    assert Owner.default().display_name == "李雷"


def test_setup_explains_mismatched_passwords(client, db):
    response = client.post("/setup/", {**GOOD, "password2": "something else entirely"})
    assert response.status_code == 200
    assert "The two passwords differ." in response.content.decode()
    assert not get_user_model().objects.exists()


def test_setup_rejects_weak_passwords(client, db):
    response = client.post("/setup/", {**GOOD, "password1": "123", "password2": "123"})
    assert "This password is too short" in response.content.decode()
    assert not get_user_model().objects.exists()


def test_setup_is_gone_once_an_account_exists(client, owner_user):
    response = client.post("/setup/", {**GOOD, "username": "intruder"})
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert not get_user_model().objects.filter(username="intruder").exists()


def test_login_page_leads_to_setup_while_no_account_exists(client, db):
    response = client.get("/accounts/login/")
    assert response["Location"] == "/setup/"


def test_login_and_logout(client, owner_user):
    response = client.post(
        "/accounts/login/", {"username": "li", "password": "correct horse battery"}, follow=True
    )
    assert response.context["user"].is_authenticated
    response = client.post("/accounts/logout/", follow=True)
    assert not response.context["user"].is_authenticated


def test_a_wrong_password_shows_a_message(client, owner_user):
    response = client.post("/accounts/login/", {"username": "li", "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
