"""`manage.py api_token create|list|revoke`."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memsite.core.tokens import find_token
from memsite.models import ApiToken, TokenScope


def run(*args) -> str:
    out = StringIO()
    call_command("api_token", *args, stdout=out)
    return out.getvalue()


def test_create_prints_the_token_alone_on_the_last_line(db):
    output = run("create", "--name", "chat")
    secret = output.strip().splitlines()[-1]
    assert secret.startswith("mc_") and " " not in secret
    token = find_token(secret)
    assert token.name == "chat" and token.scope == TokenScope.READ_WRITE
    assert token.expires_at is None


def test_create_read_only_with_expiry(db):
    secret = run("create", "--name", "reader", "--read-only", "--expires-days", "7").split()[-1]
    token = find_token(secret)
    assert token.scope == TokenScope.READ and token.expires_at is not None


def test_create_refuses_a_bad_expiry(db):
    with pytest.raises(CommandError):
        run("create", "--name", "x", "--expires-days", "0")


def test_list_never_shows_secrets(db):
    secret = run("create", "--name", "chat").split()[-1]
    listing = run("list")
    assert "chat" in listing and "read-write" in listing and "never" in listing
    assert secret not in listing


def test_revoke_by_id_or_prefix(db):
    first = find_token(run("create", "--name", "one").split()[-1])
    second_secret = run("create", "--name", "two").split()[-1]
    assert "Revoked" in run("revoke", str(first.pk))
    run("revoke", second_secret[:10])
    assert ApiToken.objects.filter(revoked_at__isnull=True).count() == 0


def test_revoking_an_unknown_token_fails_clearly(db):
    with pytest.raises(CommandError, match="No token"):
        run("revoke", "999")
