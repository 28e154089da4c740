"""All pages require login; the API answers agents on its own terms."""

import pytest

PAGES = [
    "/",
    "/review/",
    "/facts/",
    "/episodes/",
    "/attachments/",
    "/cards/",
    "/debugger/",
    "/jobs/",
    "/settings/",
    "/admin/",
]


@pytest.mark.parametrize("path", PAGES)
def test_pages_redirect_anonymous_visitors_to_login(client, owner_user, path):
    response = client.get(path)
    assert response.status_code == 302
    assert (
        response["Location"].startswith("/accounts/login/")
        or "/admin/login/" in response["Location"]
    )


@pytest.mark.parametrize("path", PAGES[:-1])
def test_pages_open_for_the_owner(client_in, path):
    assert client_in.get(path).status_code == 200


def test_health_is_public(client, db):
    assert client.get("/api/v1/health").status_code == 200
