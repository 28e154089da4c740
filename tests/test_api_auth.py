"""Bearer tokens: missing or wrong -> 401, read-only on a write -> 403, expired, revoked,
last used recorded, and the per-token rate limit -> 429."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from memsite.api.ratelimit import RateLimiter
from memsite.core.tokens import create_token, find_token, revoke_token
from memsite.models import ApiToken, TokenScope
from tests.api_helpers import Api, assert_error

TURN = {"session_id": "s1", "turn_index": 0, "role": "user", "content": "hi"}


def test_health_is_public(anon_api):
    assert anon_api.get("/health").status_code == 200


def test_it_rejects_a_request_without_a_token(anon_api):
    response = anon_api.get("/traces")
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Bearer"


def test_it_rejects_a_wrong_token(client, db):
    assert_error(Api(client, "mc_not-a-real-token").get("/traces"), 401, "invalid_token")


def test_it_rejects_another_auth_scheme(client, db):
    response = client.get("/api/v1/traces", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert_error(response, 401, "not_authenticated")


def test_it_accepts_a_valid_token_and_records_its_use(client, db, fresh_limits):
    token, raw = create_token("agent")
    assert Api(client, raw).get("/traces").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_a_read_only_token_reads_but_cannot_write(read_api):
    assert read_api.get("/traces").status_code == 200
    assert_error(read_api.post("/turns", TURN), 403, "read_only_token")


def test_an_expired_token_is_refused(client, db, fresh_limits):
    _, raw = create_token("old", expires_at=timezone.now() - timedelta(seconds=1))
    assert_error(Api(client, raw).get("/traces"), 401, "token_expired")


def test_a_revoked_token_is_refused(client, db, fresh_limits):
    token, raw = create_token("gone")
    revoke_token(token.pk)
    assert_error(Api(client, raw).get("/traces"), 401, "invalid_token")


def test_tokens_are_stored_hashed(db):
    token, raw = create_token("agent")
    stored = ApiToken.objects.get(pk=token.pk)
    assert raw not in {stored.digest, stored.prefix, stored.name}
    assert raw.startswith(stored.prefix) and find_token(raw) == stored


def test_a_token_needs_a_name(db):
    with pytest.raises(ValueError):
        create_token("  ")


@override_settings(API_RATE_LIMIT=3)
def test_it_answers_429_when_a_token_exceeds_its_rate(client, db, fresh_limits):
    _, raw = create_token("busy")
    _, other = create_token("calm")
    busy = Api(client, raw)
    assert [busy.get("/traces").status_code for _ in range(3)] == [200, 200, 200]
    response = busy.get("/traces")
    assert_error(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1
    assert Api(client, other).get("/traces").status_code == 200  # the limit is per token


def test_the_rate_limiter_refills_over_time(tmp_path):
    limiter = RateLimiter(tmp_path / "ratelimit.sqlite3")
    assert limiter.hit(1, 60, now=0.0) == 0
    for _ in range(59):
        limiter.hit(1, 60, now=0.0)
    assert limiter.hit(1, 60, now=0.0) == pytest.approx(1.0)
    assert limiter.hit(1, 60, now=1.0) == 0  # one request per second came back


def test_scopes_are_read_or_read_write(db):
    assert {c for c, _ in TokenScope.choices} == {"read", "read-write"}
