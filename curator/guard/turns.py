"""A recorded turn's text as a redaction changes it and its undo restores it.

Raw turns are append-only for everything else; a redaction (a guardrail applied to what is
already stored) is the one change, and it reaches every copy: the row, the search indexes
(re-indexed after the commit) and the line in the JSONL backup.
"""

from __future__ import annotations

from django.db import transaction

from curator import history_log, signals
from curator.models import ConversationTurn

FIELDS = ("content", "tool_calls", "tool_results")


def values(turn: ConversationTurn) -> dict:
    return {name: getattr(turn, name) for name in FIELDS}


def restore(turn: ConversationTurn, changed: dict) -> None:
    for name, value in changed.items():
        setattr(turn, name, value)
    turn.save(update_fields=list(changed))
    signals.changed("turn", turn.pk)
    transaction.on_commit(lambda: history_log.rewrite(turn), robust=True)
