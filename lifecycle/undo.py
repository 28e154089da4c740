"""Undo a whole job run: its events (curator.undo's batch undo), episodes and cards.

All or nothing: if any event cannot be undone (a person changed that fact since), or a card
was edited after the run wrote it, nothing is undone and the reason is given. Removed
attachment files cannot come back; the result says how many.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from curator import cards
from curator.models import CardAuthor, CardRevision, Episode
from curator.undo import UndoRefused, batch_summary, undo_batch
from lifecycle.models import JobRun, RunStatus


@dataclass
class Undone:
    events: int
    episodes: int
    cards: list[str]
    files_lost: int


def _details(run: JobRun, key: str) -> list:
    out = []
    for step in run.steps or []:
        value = step.get(key)
        if isinstance(value, list):
            out += value
        elif isinstance(value, dict):
            out += list(value.items())
    return out


def _undo_episodes(changes: list[dict]) -> int:
    for change in changes:
        episode = Episode.objects.filter(pk=change["id"]).first()
        if episode is None:
            continue
        now = {k: getattr(episode, k) for k in change["after"]}
        if now != change["after"]:
            raise UndoRefused(
                _("Episode #%(id)s changed after this run; it cannot be put back.")
                % {"id": episode.pk}
            )
        Episode.objects.filter(pk=episode.pk).update(**change["before"])
    return len(changes)


def _undo_cards(changes: list[tuple[str, list]]) -> list[str]:
    restored = []
    for key, (before_id, after_id) in changes:
        latest = cards.latest_revision(key)
        if latest is None or latest.pk != after_id:
            raise UndoRefused(
                _("%(card)s was changed after this run; restore it from its revisions instead.")
                % {"card": cards.spec(key).title}
            )
        before = CardRevision.objects.filter(pk=before_id).first() if before_id else None
        text = before.content if before else ""
        cards.save(key, text, CardAuthor.PERSON, base=latest.content, note="undo_run")
        restored.append(key)
    return restored


def undo_run(run_id: str, *, actor: str = "person") -> Undone:
    run = JobRun.objects.get(run_id=run_id)
    if run.status == RunStatus.UNDONE:
        raise UndoRefused(_("This run was already undone."))
    if not run.finished:
        raise UndoRefused(_("This run is still going; undo it when it has finished."))
    card_changes = _details(run, "cards")
    keys = [key for key, _ids in card_changes]
    with cards.rollback_files(keys), transaction.atomic():
        left = batch_summary(run.run_id)["open"]  # events not undone one by one already
        events = undo_batch(run.run_id, actor=actor) if left else []
        episodes = _undo_episodes(_details(run, "episodes"))
        restored = _undo_cards(card_changes)
        run.status, run.undone_at = RunStatus.UNDONE, timezone.now()
        run.save(update_fields=["status", "undone_at"])
    return Undone(len(events), episodes, restored, len(_details(run, "removed_files")))
