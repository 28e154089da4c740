"""API tokens: create (shown once), check, revoke (the rate limit is memsite/api/ratelimit.py).

The page, the `api_token` command and the API's bearer authentication all call these.
"""

import hashlib
import secrets
import uuid
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.translation import gettext as _

from memsite.models import NO_TOKEN, ApiToken, TokenScope

TOKEN_PREFIX = "mc_"
# last_used_at is a write; doing it on every request would turn each read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def create_token(
    name: str, scope: str = TokenScope.READ_WRITE, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """A new token and its secret; the secret exists only in the return value."""
    name = name.strip()
    if not name:
        raise ValueError("A token needs a name.")
    raw, prefix, hashed = _new_secret()
    token = ApiToken.objects.create(
        name=name[:100],
        prefix=prefix,
        digest=hashed,
        scope=TokenScope(scope),
        expires_at=expires_at,
    )
    return token, raw


def _new_secret() -> tuple[str, str, str]:
    """A new secret, its prefix (shown in lists) and its digest (stored)."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    return raw, raw[:10], digest(raw)


def no_token_digest() -> str:
    """A unique digest no secret hashes to: an agent restored from an archive has no token."""
    return NO_TOKEN + uuid.uuid4().hex


def issue_token(token: ApiToken) -> str:
    """A new secret for an agent that needs one (restored from an archive); shown once. Its
    name, scopes, pauses and history stay as they were."""
    raw, token.prefix, token.digest = _new_secret()
    token.save(update_fields=["prefix", "digest"])
    return raw


def unknown_agent() -> ApiToken:
    """The one agent rows of an old archive link to when the agent that wrote them is not in
    it (archives made before agents travelled): found again by a later import."""
    name = _("unknown agent (restored)")
    found = ApiToken.objects.filter(name=name, digest__startswith=NO_TOKEN).first()
    if found is not None:
        return found
    return ApiToken.objects.create(
        name=name,
        description=_(
            "Made by a restore: the archive came from a release that did not carry agents, "
            "so which agent wrote these rows is not known."
        ),
        prefix="",
        digest=no_token_digest(),
    )


def find_token(raw: str) -> ApiToken | None:
    """The token this secret belongs to (in any state), or None."""
    if not raw or len(raw) > 200:
        return None
    # Every API request runs this: raw SQL skips compiling a queryset, which took 0.4 ms of
    # the 0.5 ms lookup (a tenth of a recorded turn's time).
    tokens = ApiToken.objects.raw(_BY_DIGEST, [digest(raw)])
    return next(iter(tokens), None)  # digest is unique


_BY_DIGEST = f"SELECT * FROM {ApiToken._meta.db_table} WHERE digest = %s"


def touch(token: ApiToken) -> None:
    """Record use, at most once a minute per token (a conditional UPDATE, no read first)."""
    now = timezone.now()
    if token.last_used_at and now - token.last_used_at < LAST_USED_RESOLUTION:
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    token.last_used_at = now


def revoke_token(token_id: int) -> ApiToken | None:
    """Revoke now; revoking twice keeps the first time. None when there is no such token."""
    token = ApiToken.objects.filter(pk=token_id).first()
    if token and not token.revoked_at:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def list_tokens():
    return ApiToken.objects.all()


def token_names() -> dict[int, str]:
    """Every token's name by id (revoked ones too: their past writes still have a source)."""
    return dict(ApiToken.objects.values_list("pk", "name"))
