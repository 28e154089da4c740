"""The API tokens section of Settings: create (shown once), list, revoke; with and without HTMX."""

import re

from memsite.core.tokens import create_token, find_token
from memsite.models import ApiToken, TokenScope

HX = {"HX-Request": "true"}


def _secret(html: str) -> str:
    return re.search(r'id="new-token-secret"[^>]*value="([^"]+)"', html).group(1)


def test_the_settings_page_shows_the_tokens_section(client_in, db):
    create_token("chat assistant")
    html = client_in.get("/settings/").content.decode()
    assert 'id="api-tokens"' in html and "chat assistant" in html
    assert 'action="/settings/tokens/"' in html  # works without JavaScript


def test_it_creates_a_token_and_shows_it_once(client_in):
    response = client_in.post(
        "/settings/tokens/", {"name": "backup script", "scope": "read", "expires": "30"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    secret = _secret(html)
    token = find_token(secret)
    assert token.name == "backup script" and token.scope == TokenScope.READ
    assert token.expires_at is not None
    assert secret not in client_in.get("/settings/tokens/").content.decode()
    assert secret not in client_in.get("/settings/").content.decode()


def test_a_created_token_works_on_the_api(client_in):
    secret = _secret(
        client_in.post("/settings/tokens/", {"name": "a", "scope": "read-write"}).content.decode()
    )
    response = client_in.get("/api/v1/traces", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 200


def test_htmx_gets_the_panel_only(client_in):
    response = client_in.post("/settings/tokens/", {"name": "agent", "scope": "read"}, headers=HX)
    html = response.content.decode()
    assert html.lstrip().startswith("<section") and "<html" not in html
    assert _secret(html).startswith("mc_")


def test_a_token_without_a_name_shows_the_error_in_place(client_in):
    response = client_in.post("/settings/tokens/", {"name": "  ", "scope": "read"}, headers=HX)
    assert response.status_code == 200
    assert 'class="error"' in response.content.decode()
    assert not ApiToken.objects.exists()


def test_it_revokes_a_token_without_javascript(client_in):
    token, secret = create_token("old agent")
    response = client_in.post(f"/settings/tokens/{token.pk}/revoke/", {"next": "/settings/"})
    assert response.status_code == 302 and response["Location"] == "/settings/"
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert (
        client_in.get("/api/v1/traces", headers={"Authorization": f"Bearer {secret}"}).status_code
        == 401
    )


def test_revoke_ignores_a_foreign_next_url(client_in):
    token, _ = create_token("x")
    response = client_in.post(
        f"/settings/tokens/{token.pk}/revoke/", {"next": "https://evil.example/"}
    )
    assert response["Location"] == "/settings/tokens/"


def test_revoke_with_htmx_swaps_the_panel(client_in):
    token, _ = create_token("x")
    response = client_in.post(f"/settings/tokens/{token.pk}/revoke/", headers=HX)
    assert "revoked" in response.content.decode()


def test_revoke_refuses_get(client_in):
    token, _ = create_token("x")
    assert client_in.get(f"/settings/tokens/{token.pk}/revoke/").status_code == 405


def test_the_token_pages_need_a_login(client, db):
    response = client.get("/settings/tokens/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
