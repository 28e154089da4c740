"""Project-level models: the agents (one API token each) and the switch that pauses their writes."""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class TokenScope(models.TextChoices):
    READ = "read", _("read")
    READ_WRITE = "read-write", _("read and write")


# The digest of an agent that has no valid token: restored from an archive, which never
# carries secrets. No SHA-256 hex digest starts like this, so no token ever finds it.
NO_TOKEN = "none:"


class ApiToken(models.Model):
    """An agent: its bearer token, what it may do, and whether it is paused.

    Only a SHA-256 digest of the token is stored: the token is shown once. Tokens are 256-bit
    random strings, so a fast digest is enough (no password stretching is needed against
    guessing), and lookup by digest is one indexed query per request.

    Scope limits are lists of memory scopes (curator.models.Scope values); an empty list
    means every scope. Pausing keeps the token valid but refuses its writes (and, with
    reads_paused, its reads) with 423, so nothing is stored and nothing has to be re-issued.
    """

    name = models.CharField(_("name"), max_length=100)
    description = models.TextField(_("description"), blank=True)
    prefix = models.CharField(_("starts with"), max_length=16)
    digest = models.CharField(_("digest"), max_length=64, unique=True)
    scope = models.CharField(
        _("scope"), max_length=16, choices=TokenScope, default=TokenScope.READ_WRITE
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)
    writes_paused = models.BooleanField(_("writes paused"), default=False)
    reads_paused = models.BooleanField(_("reads paused"), default=False)
    read_scopes = models.JSONField(_("may read"), default=list, blank=True)
    write_scopes = models.JSONField(_("may write"), default=list, blank=True)

    class Meta:
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def can_write(self) -> bool:
        return self.scope == TokenScope.READ_WRITE

    @property
    def needs_token(self) -> bool:
        return self.digest.startswith(NO_TOKEN)

    def state(self, now=None) -> str:
        """active / expired / revoked / needs_token, for lists and for the 401 message."""
        if self.revoked_at:
            return "revoked"
        if self.needs_token:
            return "needs_token"
        if self.expires_at and self.expires_at <= (now or timezone.now()):
            return "expired"
        return "active"


class MemoryPause(models.Model):
    """The person's "pause all memory writes" switch: one row (pk 1), off when missing."""

    writes_paused = models.BooleanField(_("all memory writes paused"), default=False)
    changed_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        verbose_name = _("memory pause")
        verbose_name_plural = _("memory pause")

    def __str__(self) -> str:
        return "paused" if self.writes_paused else "open"
