"""Small builders for retrieval tests: items written and indexed the way the app does it."""

from datetime import timedelta

from django.utils import timezone

from curator.models import Attachment, ConversationTurn, Episode, Fact, Owner, Session
from retrieval.indexing import index_items


def fact(owner: Owner, content: str, index: bool = True, **kw) -> Fact:
    item = Fact.objects.create(owner=owner, content=content, **kw)
    if index:
        index_items("fact", [item])
    return item


def session(owner: Owner, key: str = "s1", **kw) -> Session:
    return Session.objects.create(owner=owner, external_id=key, **kw)


def turn(sess: Session, content: str, index_no: int | None = None, when=None, role="user"):
    number = sess.turns.count() if index_no is None else index_no
    item = ConversationTurn.objects.create(
        session=sess,
        turn_index=number,
        role=role,
        content=content,
        timestamp=when or timezone.now(),
    )
    index_items("turn", [ConversationTurn.objects.select_related("session").get(pk=item.pk)])
    return item


def episode(owner: Owner, summary: str, when=None, **kw) -> Episode:
    when = when or timezone.now()
    item = Episode.objects.create(
        owner=owner, summary=summary, started_at=when, ended_at=when, **kw
    )
    index_items("episode", [item])
    return item


def attachment(owner: Owner, name: str, description: str = "", **kw) -> Attachment:
    item = Attachment.objects.create(owner=owner, original_name=name, description=description, **kw)
    index_items("attachment", [item])
    return item


def days_ago(n: float):
    return timezone.now() - timedelta(days=n)
