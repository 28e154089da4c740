"""Small builders shared by the lifecycle tests (sessions, turns, facts at a given age)."""

from datetime import timedelta

from django.utils import timezone

from curator.models import ConversationTurn, Fact, Owner, Session


def session(external_id: str = "s1", **kwargs) -> Session:
    owner = kwargs.pop("owner", None) or Owner.default()
    return Session.objects.create(owner=owner, external_id=external_id, **kwargs)


def turn(sess: Session, content: str, role: str = "user", **kwargs) -> ConversationTurn:
    index = kwargs.pop("turn_index", None)
    if index is None:
        index = sess.turns.count()
    return ConversationTurn.objects.create(
        session=sess, turn_index=index, role=role, content=content, **kwargs
    )


def fact(content: str, *, days_old: float = 0, **kwargs) -> Fact:
    """A fact created `days_old` days ago (never recalled unless last_accessed_at is given)."""
    created = timezone.now() - timedelta(days=days_old)
    kwargs.setdefault("owner", Owner.default())
    kwargs.setdefault("priority", "long_term")
    return Fact.objects.create(content=content, created_at=created, **kwargs)
