"""Which OpenAI-compatible server the proxy forwards to, with which key and model names.

Resolution, first match wins: the agent's own upstream (Agents page), the default saved on
the Settings page, then MEMSITE_PROXY_UPSTREAM_URL / MEMSITE_PROXY_UPSTREAM_KEY. The key is
a secret: pages only ever get `masked()`, and nothing here logs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from memsite.models import ApiToken, ContextPlacement, ProxyUpstream

MIN_CONTEXT_TOKENS, MAX_CONTEXT_TOKENS = 200, 20_000


@dataclass(frozen=True)
class Upstream:
    base_url: str
    api_key: str = field(default="", repr=False)  # never in a repr, a log line or a page
    model_map: dict = field(default_factory=dict)
    source: str = ""  # "agent", "settings", "environment" or "" (none configured)

    @property
    def configured(self) -> bool:
        return bool(self.base_url)

    def model_for(self, requested: str) -> str:
        return self.model_map.get(requested) or requested

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path


@dataclass(frozen=True)
class Options:
    placement: str = ContextPlacement.BEFORE
    context_tokens: int = 1500


def default_row() -> ProxyUpstream | None:
    return ProxyUpstream.objects.filter(agent__isnull=True).first()


def for_agent(agent: ApiToken | None) -> Upstream:
    return resolve(agent)[0]


def resolve(agent: ApiToken | None) -> tuple[Upstream, Options]:
    """The agent's upstream and the proxy's options, from one query (every chat asks)."""
    rows = {row.agent_id: row for row in _rows(agent)}
    default = rows.get(None)
    options = Options(default.placement, default.context_tokens) if default else Options()
    return _upstream(agent, rows), options


def _upstream(agent: ApiToken | None, rows: dict) -> Upstream:
    own = rows.get(agent.pk) if agent is not None else None
    if own is not None and own.base_url:
        return Upstream(own.base_url, own.api_key, own.model_map or {}, "agent")
    default = rows.get(None)
    if default is not None and default.base_url:
        return Upstream(default.base_url, default.api_key, default.model_map or {}, "settings")
    if settings.PROXY_UPSTREAM_URL:
        return Upstream(settings.PROXY_UPSTREAM_URL, settings.PROXY_UPSTREAM_KEY, {}, "environment")
    return Upstream("")


def _rows(agent: ApiToken | None):
    """The default row and the agent's own, in one query. Raw SQL: every chat request asks,
    and compiling the queryset cost more than running it."""
    return ProxyUpstream.objects.raw(_ROWS, [agent.pk if agent is not None else -1])


_ROWS = f"SELECT * FROM {ProxyUpstream._meta.db_table} WHERE agent_id IS NULL OR agent_id = %s"


def options() -> Options:
    row = default_row()
    if row is None:
        return Options()
    return Options(row.placement, row.context_tokens)


def masked(key: str) -> str:
    """ "sk-…wxyz": enough to recognise a key, too little to use it."""
    if not key:
        return ""
    return "…" + key[-4:] if len(key) > 8 else "…"


class UpstreamInvalid(ValueError):
    def __init__(self, field_name: str, message: str):
        super().__init__(message)
        self.field, self.message = field_name, message


def check_base_url(url: str) -> str:
    url = url.strip()
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UpstreamInvalid(
            "base_url", _("The base URL must start with http:// or https:// and name a host.")
        )
    return url.rstrip("/")


def parse_model_map(text: str) -> dict[str, str]:
    """One mapping a line, "client-model = upstream-model"; blank lines and # comments skipped."""
    mapping = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, target = (part.strip() for part in line.partition("="))
        if not sep or not name or not target:
            raise UpstreamInvalid(
                "model_map",
                _('Line %(n)d: write "client model = upstream model".') % {"n": number},
            )
        mapping[name] = target
    return mapping


def format_model_map(mapping: dict) -> str:
    return "\n".join(f"{k} = {v}" for k, v in (mapping or {}).items())


def save(
    agent: ApiToken | None,
    *,
    base_url: str,
    api_key: str | None,
    model_map: str,
    placement: str | None = None,
    context_tokens: int | None = None,
    clear_key: bool = False,
) -> ProxyUpstream:
    """Save the default (agent None) or an agent's upstream. `api_key` None or empty keeps
    the stored key (a form never shows it back), `clear_key` removes it."""
    url = check_base_url(base_url)
    mapping = parse_model_map(model_map)
    if context_tokens is not None and not (
        MIN_CONTEXT_TOKENS <= context_tokens <= MAX_CONTEXT_TOKENS
    ):
        raise UpstreamInvalid(
            "context_tokens",
            _("The context budget must be between %(a)d and %(b)d tokens.")
            % {"a": MIN_CONTEXT_TOKENS, "b": MAX_CONTEXT_TOKENS},
        )
    with transaction.atomic():
        row, _created = ProxyUpstream.objects.get_or_create(agent=agent)
        row.base_url, row.model_map = url, mapping
        if clear_key:
            row.api_key = ""
        elif api_key:
            row.api_key = api_key.strip()
        if placement in ContextPlacement.values:
            row.placement = placement
        if context_tokens is not None:
            row.context_tokens = context_tokens
        row.updated_at = timezone.now()
        row.save()
    return row


def remove(agent: ApiToken) -> None:
    ProxyUpstream.objects.filter(agent=agent).delete()
