"""Unknown addresses, refusals and crashes show the app's own pages, with its navigation."""

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test import Client, RequestFactory

from memsite.web import errors


def test_an_unknown_address_shows_the_apps_404_with_navigation(client_in):
    response = client_in.get("/no-such-page/")
    page = response.content.decode()
    assert response.status_code == 404
    assert 'class="nav"' in page and 'href="/facts/"' in page
    assert "There is nothing at this address" in page


def test_the_404_page_is_translated(client_in):
    response = client_in.get("/no-such-page/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    page = response.content.decode()
    assert '<html lang="zh-hans">' in page and "这个地址没有内容" in page
    assert "Not Found" not in page


def test_a_missing_item_shows_the_same_404(client_in):
    page = client_in.get("/facts/999999/").content.decode()
    assert "There is nothing at this address" in page
    assert "No Fact matches" not in page  # Django's internal message is not shown


def test_a_refusal_shows_the_apps_403(rf_owner):
    request = rf_owner
    response = errors.forbidden(request, PermissionDenied())
    assert response.status_code == 403
    assert "This action is not allowed" in response.content.decode()


def test_a_stale_form_explains_the_csrf_refusal(owner_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner_user)
    response = client.post("/settings/guide/", {"show": "1"})
    assert response.status_code == 403
    assert "The form had expired" in response.content.decode()


def test_a_crash_shows_the_500_page_without_touching_the_database(db, django_db_blocker):
    request = RequestFactory().get("/facts/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    connection.close()
    with django_db_blocker.block():  # any query would raise here
        response = errors.server_error(request)
    page = response.content.decode()
    assert response.status_code == 500
    assert 'class="nav"' in page and 'href="/review/"' in page
    assert "Something went wrong on our side" in page


def test_a_view_that_raises_answers_with_the_500_page(client_in, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("memsite.web.home.home_metrics", broken)
    client_in.raise_request_exception = False
    response = client_in.get("/")
    assert response.status_code == 500
    assert "Something went wrong on our side" in response.content.decode()


@pytest.fixture
def rf_owner(owner_user):
    request = RequestFactory().get("/somewhere/")
    request.user = owner_user
    return request
