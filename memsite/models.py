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


class ContextPlacement(models.TextChoices):
    BEFORE = "before", _("a system message of its own, before the client's")
    MERGED = "merged", _("merged into the client's system message")


class ProxyUpstream(models.Model):
    """Where the chat proxy (/llm/v1/) forwards an agent's requests: the default (agent
    empty) or one agent's own. The key is a secret: written from a form or the environment,
    shown only as its last four characters, never exported (the archive lists its models),
    never logged, sent only to this base URL.

    `model_map` maps the model a client asks for to the upstream's name ({} = unchanged);
    placement and budget are read from the default row for every agent."""

    agent = models.OneToOneField(
        ApiToken,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="proxy_upstream",
        verbose_name=_("agent"),
    )
    base_url = models.URLField(_("upstream base URL"), max_length=500, blank=True)
    api_key = models.CharField(_("upstream API key"), max_length=500, blank=True)
    model_map = models.JSONField(_("model mapping"), default=dict, blank=True)
    placement = models.CharField(
        _("context placement"),
        max_length=16,
        choices=ContextPlacement,
        default=ContextPlacement.BEFORE,
    )
    context_tokens = models.PositiveIntegerField(_("context budget (tokens)"), default=1500)
    updated_at = models.DateTimeField(_("updated"), default=timezone.now)

    class Meta:
        verbose_name = _("chat proxy upstream")
        verbose_name_plural = _("chat proxy upstreams")

    def __str__(self) -> str:
        return f"{self.base_url or '-'} ({self.agent or 'default'})"


class ProxyExchange(models.Model):
    """One chat request through the proxy: what was injected and what was recorded, so the
    playground and the debugger can show why the assistant answered as it did. The id is
    the X-Memory-Recall-Id header. The person's messages are not copied here (they are turns,
    when recording is on); only the injected context, which is already memory."""

    uid = models.CharField(_("recall id"), max_length=40, unique=True)
    agent = models.ForeignKey(
        ApiToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    session_key = models.CharField(_("session id"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)
    model = models.CharField(_("model"), max_length=200, blank=True)
    stream = models.BooleanField(_("streamed"), default=False)
    context = models.JSONField(_("injected context"), default=dict, blank=True)
    context_tokens = models.PositiveIntegerField(_("context tokens"), default=0)
    memory_status = models.CharField(_("memory status"), max_length=32, default="ok")
    recording = models.CharField(_("recording"), max_length=32, default="on")
    recorded_turns = models.JSONField(_("recorded turns"), default=list, blank=True)
    upstream_status = models.PositiveIntegerField(_("upstream status"), null=True, blank=True)
    partial = models.BooleanField(_("cut off by the client"), default=False)
    timings_ms = models.JSONField(_("timings (ms)"), default=dict, blank=True)

    class Meta:
        verbose_name = _("chat proxy exchange")
        verbose_name_plural = _("chat proxy exchanges")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.uid
