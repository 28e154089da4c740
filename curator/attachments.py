"""Attachments for the person's pages: search, filters, edits and how a file is served.

Search goes through the retrieval search service over kind "attachment" (description,
transcription, extracted text, file name, tags). Only items the keyword channel found are
listed as matches: the vector channel always returns its nearest items, however unrelated, so
its suggestions are shown apart, and only when no word matched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Case, IntegerField, Q, When

from curator.models import Actor, Attachment, EventType, Fact, Owner
from curator.writepath import record_edit
from retrieval import indexing
from retrieval.search import search

TYPE_GROUPS = {
    "image": Q(mime_type__startswith="image/"),
    "audio": Q(mime_type__startswith="audio/"),
    "video": Q(mime_type__startswith="video/"),
    "pdf": Q(mime_type="application/pdf"),
    "text": Q(mime_type__startswith="text/") | Q(mime_type="application/json"),
    "document": Q(mime_type__startswith="application/vnd.") | Q(mime_type="application/msword"),
}
EDITABLE = ("description", "transcription", "tags")
SUGGESTIONS = 5


@dataclass
class Found:
    items: object  # a queryset, best match first
    suggestions: list = field(default_factory=list)  # closest by meaning when no word matched
    degraded: str = ""


def _ordered(queryset, ids: list[int]):
    rank = Case(*[When(pk=pk, then=i) for i, pk in enumerate(ids)], output_field=IntegerField())
    return queryset.filter(pk__in=ids).order_by(rank)


def find(owner: Owner, q: str = "", direction: str = "", kind: str = "") -> Found:
    found = Attachment.objects.filter(owner=owner).select_related("session")
    if direction:
        found = found.filter(direction=direction)
    if kind in TYPE_GROUPS:
        found = found.filter(TYPE_GROUPS[kind])
    q = q.strip()
    if not q:
        return Found(found.order_by("-created_at", "-id"))
    # Looking is not recalling: no access counters, no recall log.
    result = search(q, owner=owner, kinds=["attachment"], limit=50, record=False, caller="page")
    matched = [i.id for i in result.items if i.found_by in ("keyword", "both")]
    # Literal matches too: a file whose indexing is still queued is found by its words.
    literal = Q()
    for name in ("original_name", "description", "transcription", "extracted_text"):
        literal |= Q(**{f"{name}__icontains": q})
    pending = list(found.filter(literal).exclude(pk__in=matched).values_list("pk", flat=True))
    items = _ordered(found, matched + pending)
    suggestions = []
    if not matched and not pending:
        nearest = [i.id for i in result.items if i.found_by == "vector"][:SUGGESTIONS]
        suggestions = list(_ordered(found, nearest))
    return Found(items, suggestions, result.degraded_reason)


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
    indexing.schedule("attachment", att.pk)


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
