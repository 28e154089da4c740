"""Project-level models: the API tokens agents use to reach the memory."""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class TokenScope(models.TextChoices):
    READ = "read", _("read")
    READ_WRITE = "read-write", _("read and write")


class ApiToken(models.Model):
    """A bearer token for one agent. Only a SHA-256 digest is stored: the token is shown once.

    Tokens are 256-bit random strings, so a fast digest is enough (no password stretching
    is needed against guessing), and lookup by digest is one indexed query per request.
    """

    name = models.CharField(_("name"), max_length=100)
    prefix = models.CharField(_("starts with"), max_length=16)
    digest = models.CharField(_("digest"), max_length=64, unique=True)
    scope = models.CharField(
        _("scope"), max_length=16, choices=TokenScope, default=TokenScope.READ_WRITE
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def can_write(self) -> bool:
        return self.scope == TokenScope.READ_WRITE

    def state(self, now=None) -> str:
        """active / expired / revoked, for lists and for the 401 message."""
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= (now or timezone.now()):
            return "expired"
        return "active"
