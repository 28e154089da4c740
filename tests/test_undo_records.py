"""Undoing the person's edits of an episode or an attachment from the activity log."""

import pytest
from django.utils import timezone

from curator.attachments import edit_attachment
from curator.episodes import edit_episode
from curator.models import Attachment, Episode, EventType, Fact, Owner
from curator.undo import UndoRefused, undo_blocker, undo_event


@pytest.fixture
def episode(db):
    now = timezone.now()
    return Episode.objects.create(
        owner=Owner.default(), summary="排查 orchard 内存", goal="", started_at=now, ended_at=now
    )


@pytest.fixture
def attachment(db):
    return Attachment.objects.create(
        owner=Owner.default(), original_name="cat.png", mime_type="image/png", description="猫"
    )


def test_an_episode_edit_is_undone_field_by_field(episode):
    event = edit_episode(episode.pk, {"summary": "排查 orchard OOM", "importance": 0.9})
    assert undo_blocker(event) is None
    undo = undo_event(event.pk)
    episode.refresh_from_db()
    assert (episode.summary, episode.importance) == ("排查 orchard 内存", 0.5)
    assert undo.event_type == EventType.UNDO and undo.reverts == event


def test_undoing_the_undo_brings_the_edit_back(episode):
    event = edit_episode(episode.pk, {"goal": "找出内存泄漏"})
    undo = undo_event(event.pk)
    undo_event(undo.pk)
    episode.refresh_from_db()
    assert episode.goal == "找出内存泄漏"


def test_a_later_edit_blocks_undoing_an_earlier_one(episode):
    first = edit_episode(episode.pk, {"summary": "第一次"})
    edit_episode(episode.pk, {"summary": "第二次"})
    assert "was changed afterwards" in undo_blocker(first)
    with pytest.raises(UndoRefused):
        undo_event(first.pk)
    episode.refresh_from_db()
    assert episode.summary == "第二次"


def test_an_attachment_edit_is_undone_including_its_linked_facts(attachment):
    fact = Fact.objects.create(owner=attachment.owner, content="家里的猫叫橘子")
    event = edit_attachment(attachment.pk, {"description": "一只橘猫", "linked_facts": [fact.pk]})
    undo_event(event.pk)
    attachment.refresh_from_db()
    assert attachment.description == "猫"
    assert not attachment.linked_facts.exists()


def test_an_undone_edit_is_reindexed(episode, django_capture_on_commit_callbacks, monkeypatch):
    indexed = []
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, pk: indexed.append((kind, pk)))
    event = edit_episode(episode.pk, {"summary": "新的摘要"})
    with django_capture_on_commit_callbacks(execute=True):
        undo_event(event.pk)
    assert ("episode", episode.pk) in indexed


def test_the_activity_log_offers_and_performs_the_undo(client_in, episode):
    event = edit_episode(episode.pk, {"summary": "改过的摘要"})
    assert f"/activity/{event.pk}/undo/" in client_in.get("/activity/").content.decode()
    client_in.post(f"/activity/{event.pk}/undo/", follow=True)
    episode.refresh_from_db()
    assert episode.summary == "排查 orchard 内存"
