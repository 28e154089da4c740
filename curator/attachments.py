"""Attachments for the person's pages: filters, edits and how a file is served.

Finding attachments by their words is retrieval's (retrieval.lookup.find_attachments).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from curator import signals
from curator.models import Actor, Attachment, EventType, Fact, Owner
from curator.writepath import record_edit

TYPE_GROUPS = {
    "image": Q(mime_type__startswith="image/"),
    "audio": Q(mime_type__startswith="audio/"),
    "video": Q(mime_type__startswith="video/"),
    "pdf": Q(mime_type="application/pdf"),
    "text": Q(mime_type__startswith="text/") | Q(mime_type="application/json"),
    "document": Q(mime_type__startswith="application/vnd.") | Q(mime_type="application/msword"),
}
EDITABLE = ("description", "transcription", "tags")


def fact_choices(owner: Owner, attachment: Attachment):
    """Facts offered for linking: the linked ones, then the newest active ones."""
    linked = list(attachment.linked_facts.all())
    recent = Fact.objects.filter(owner=owner).active().exclude(pk__in=[f.pk for f in linked])
    return linked + list(recent.order_by("-updated_at")[:200])


def values(att: Attachment) -> dict:
    """The person-editable fields, as stored in an edit event (and restored by its undo)."""
    data = {name: getattr(att, name) for name in EDITABLE}
    data["linked_facts"] = sorted(att.linked_facts.values_list("pk", flat=True))
    return data


def restore(att: Attachment, changed: dict) -> None:
    for name, value in changed.items():
        if name == "linked_facts":
            att.linked_facts.set(value)
        else:
            setattr(att, name, value)
    if fields := [k for k in changed if k != "linked_facts"]:
        att.save(update_fields=fields)
    signals.changed("attachment", att.pk)


def edit_attachment(attachment_id: int, changes: dict, *, actor: str = Actor.PERSON):
    """Apply validated values (linked_facts as ids); one event; None if nothing changed."""
    with transaction.atomic():
        att = Attachment.objects.select_for_update().get(pk=attachment_id)
        before = values(att)
        wanted = dict(changes)
        if "linked_facts" in wanted:
            wanted["linked_facts"] = sorted(wanted["linked_facts"])
        changed = {k: v for k, v in wanted.items() if k in before and before[k] != v}
        if not changed:
            return None
        restore(att, changed)
        return record_edit(
            att,
            "attachment",
            EventType.ATTACHMENT_EDIT,
            before,
            values(att),
            changed,
            quote=(att.original_name, att.original_name),
            actor=actor,
        )


def is_image(att: Attachment) -> bool:
    return att.mime_type.startswith("image/")


def is_text(att: Attachment) -> bool:
    return bool(att.extracted_text)
