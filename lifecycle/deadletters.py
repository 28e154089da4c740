"""A person's answer to a dead letter on the Jobs page: try again, or stop trying."""

from django.db import transaction
from django.utils import timezone

from lifecycle import tasks
from lifecycle.extraction.extract import give_up
from lifecycle.models import DeadLetter, DeadStatus, DeadTask


def retry_letter(letter_id: int) -> DeadLetter:
    """A person's Retry: the item goes back to the queue from its first attempt."""

    with transaction.atomic():
        letter = DeadLetter.objects.get(pk=letter_id)
        if letter.status != DeadStatus.OPEN:
            return letter
        letter.status, letter.resolved_at = DeadStatus.RETRIED, timezone.now()
        letter.save(update_fields=["status", "resolved_at"])
        if letter.task == DeadTask.EMBED:
            kind, object_id = letter.item_kind, letter.object_id
            transaction.on_commit(lambda: tasks.index_item(kind, object_id))
        else:
            turn_id = letter.object_id
            transaction.on_commit(lambda: tasks.retry_extraction(turn_id))
    return letter


def discard_letter(letter_id: int) -> DeadLetter:
    """A person's Discard: stop trying (an unembedded item stays keyword-searchable)."""

    with transaction.atomic():
        letter = DeadLetter.objects.get(pk=letter_id)
        if letter.status != DeadStatus.OPEN:
            return letter
        letter.status, letter.resolved_at = DeadStatus.DISCARDED, timezone.now()
        letter.save(update_fields=["status", "resolved_at"])
        if letter.task == DeadTask.EXTRACT:
            give_up(letter.object_id)
    return letter
