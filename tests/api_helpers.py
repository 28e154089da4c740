"""Fixtures for the API tests: tokens and a client that sends them (import the ones you use)."""

import json

import pytest

from memsite.api.ratelimit import limiter
from memsite.core.tokens import create_token
from memsite.models import TokenScope

BASE = "/api/v1"


class Api:
    """A Django test client speaking JSON with a bearer token."""

    def __init__(self, client, raw: str | None):
        self.client, self.raw = client, raw

    def _headers(self, extra=None):
        headers = {"Authorization": f"Bearer {self.raw}"} if self.raw else {}
        return {**headers, **(extra or {})}

    def get(self, path, params=None, headers=None):
        return self.client.get(BASE + path, params or {}, headers=self._headers(headers))

    def _send(self, method, path, body, headers):
        data = body if isinstance(body, (str, bytes)) else json.dumps(body)
        return getattr(self.client, method)(
            BASE + path, data, content_type="application/json", headers=self._headers(headers)
        )

    def post(self, path, body=None, headers=None):
        return self._send("post", path, {} if body is None else body, headers)

    def patch(self, path, body=None, headers=None):
        return self._send("patch", path, {} if body is None else body, headers)

    def delete(self, path, headers=None):
        return self.client.delete(BASE + path, headers=self._headers(headers))

    def upload(self, path, data, headers=None):
        return self.client.post(BASE + path, data, headers=self._headers(headers))


@pytest.fixture(autouse=False)
def fresh_limits():
    limiter.reset()
    yield
    limiter.reset()


@pytest.fixture
def api(client, db, fresh_limits):
    _, raw = create_token("test agent", TokenScope.READ_WRITE)
    return Api(client, raw)


@pytest.fixture
def read_api(client, db, fresh_limits):
    _, raw = create_token("reader", TokenScope.READ)
    return Api(client, raw)


@pytest.fixture
def anon_api(client, db):
    return Api(client, None)


def assert_error(response, status: int, code: str | None = None) -> dict:
    """Every API error is JSON {"detail": str, "code": str, "fields"?: {...}}."""
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert isinstance(body["detail"], str) and body["detail"]
    assert isinstance(body["code"], str) and body["code"]
    assert set(body) <= {"detail", "code", "fields"}
    if code is not None:
        assert body["code"] == code, body
    return body
