"""What an agent (an API token) may do right now: pauses and scope limits.

The JSON API, the MCP server and the terminal all ask these functions, so a paused agent is
refused the same way everywhere. A refusal is an `AgentRefused` with an HTTP status and a
stable code; each caller turns it into its own error (JSON for the API, a tool error for MCP).

Order of the write checks: the person's global pause first (it concerns every agent), then
this agent's pause, then its scope limits. Nothing is stored when any of them refuses.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from memsite.models import ApiToken, MemoryPause

# 423 Locked: the request is fine, the resource is locked for now (retrying later may work).
PAUSED_STATUS = 423


class AgentRefused(Exception):
    def __init__(self, status: int, code: str, detail: str):
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


# -- the global switch ---------------------------------------------------------------------------


_PAUSE_SQL = f"SELECT id, writes_paused FROM {MemoryPause._meta.db_table} WHERE id = 1"


def writes_paused() -> bool:
    """Whether the person paused all memory writes (raw SQL: every write request asks)."""
    row = next(iter(MemoryPause.objects.raw(_PAUSE_SQL)), None)
    return bool(row and row.writes_paused)


def set_writes_paused(paused: bool) -> MemoryPause:
    with transaction.atomic():
        switch, _created = MemoryPause.objects.get_or_create(pk=1)
        if switch.writes_paused != paused:
            switch.writes_paused = paused
            switch.changed_at = timezone.now()
            switch.save()
    return switch


# -- one agent -----------------------------------------------------------------------------------


def limited(scopes: Iterable[str] | None) -> frozenset[str] | None:
    """A stored scope list as a set, or None for "every scope" (the empty list)."""
    return frozenset(scopes) if scopes else None


def readable_scopes(agent: ApiToken | None) -> frozenset[str] | None:
    """The scopes this agent may read, None when unlimited (a person, a job, or no limit)."""
    return limited(agent.read_scopes) if agent is not None else None


def writable_scopes(agent: ApiToken | None) -> frozenset[str] | None:
    return limited(agent.write_scopes) if agent is not None else None


def write_scopes_of(agent_id: int | None) -> frozenset[str] | None:
    """For jobs working on an agent's conversation: the scopes that agent may write."""
    if agent_id is None:
        return None
    found = ApiToken.objects.filter(pk=agent_id).values_list("write_scopes", flat=True)
    return limited(found.first())


def check_read(agent: ApiToken) -> None:
    if agent.reads_paused:
        raise AgentRefused(
            PAUSED_STATUS,
            "agent_paused",
            _("This agent is paused: its reads and writes are refused until it is resumed."),
        )


def check_write(agent: ApiToken, scopes: Iterable[str] = ()) -> None:
    """Refuse a write before anything is stored; `scopes` are the memory scopes it touches."""
    if writes_paused():
        raise AgentRefused(
            PAUSED_STATUS,
            "memory_paused",
            _("Memory writes are paused by the person; nothing was stored. Try again later."),
        )
    if agent.writes_paused or agent.reads_paused:
        raise AgentRefused(
            PAUSED_STATUS,
            "agent_paused",
            _("This agent is paused: its writes are refused and nothing was stored."),
        )
    check_scopes(agent, scopes)


def check_scopes(agent: ApiToken, scopes: Iterable[str]) -> None:
    allowed = writable_scopes(agent)
    if allowed is None:
        return
    if outside := sorted(set(scopes) - allowed):
        raise AgentRefused(
            403,
            "scope_not_allowed",
            _("This agent may not write the scope %(scopes)s (it may write: %(allowed)s).")
            % {"scopes": ", ".join(outside), "allowed": ", ".join(sorted(allowed))},
        )


def may_read_scope(agent: ApiToken | None, scope: str) -> bool:
    allowed = readable_scopes(agent)
    return allowed is None or scope in allowed


# -- the person's switches -----------------------------------------------------------------------


def set_paused(agent: ApiToken, *, writes: bool, reads: bool = False) -> ApiToken:
    """Pause or resume; pausing reads pauses writes too (a reader that cannot read is off)."""
    agent.writes_paused = writes or reads
    agent.reads_paused = reads
    agent.save(update_fields=["writes_paused", "reads_paused"])
    return agent


def set_scopes(agent: ApiToken, *, read: Iterable[str], write: Iterable[str]) -> ApiToken:
    agent.read_scopes = sorted(set(read))
    agent.write_scopes = sorted(set(write))
    agent.save(update_fields=["read_scopes", "write_scopes"])
    return agent


def find_agent(name: str) -> ApiToken | None:
    """By exact name (the newest unrevoked one when names repeat), else by id."""
    found = ApiToken.objects.filter(name=name.strip(), revoked_at__isnull=True).first()
    if found is None and name.strip().isdigit():
        found = ApiToken.objects.filter(pk=int(name)).first()
    return found
