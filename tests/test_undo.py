"""Undo: each event type, batches, redo, and the refusals that keep history honest."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator import writepath as wp
from curator.models import (
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    PendingItem,
    PendingStatus,
    Priority,
)
from curator.undo import UndoRefused, undo_batch, undo_blocker, undo_event
from curator.writepath import Candidate, propose
from lifecycle.demo import load_demo

pytestmark = pytest.mark.django_db


def fact(content="住在杭州", predicate="城市", **kw) -> Fact:
    candidate = Candidate(content, subject="李雷", predicate=predicate, **kw)
    return propose(candidate, actor="agent").fact


def last(event_type) -> MemoryEvent:
    return MemoryEvent.objects.filter(event_type=event_type).latest("pk")


def refreshed(obj):
    obj.refresh_from_db()
    return obj


def test_undoing_a_write_withdraws_the_fact_as_rejected():
    f = fact()
    undo = undo_event(last(EventType.WRITE).pk)
    assert refreshed(f).status == FactStatus.REJECTED
    assert undo.event_type == EventType.UNDO and undo.reverts == last(EventType.WRITE)
    assert MemoryEvent.objects.filter(event_type=EventType.WRITE).exists()  # history stays


def test_undoing_a_supersede_brings_the_old_version_back():
    old = fact("住在北京")
    new = fact("住在杭州")
    undo_event(last(EventType.SUPERSEDE).pk)
    assert refreshed(old).status == FactStatus.ACTIVE
    assert refreshed(new).status == FactStatus.REJECTED
    assert refreshed(new).supersedes == old  # the chain itself is kept


def test_undoing_a_boost_restores_count_and_confidence():
    f = fact(confidence=0.9)
    fact(confidence=0.9)
    undo_event(last(EventType.BOOST).pk)
    f = refreshed(f)
    assert f.hit_count == 1 and f.confidence == 0.9


def test_undoing_an_edit_restores_the_old_text():
    f = fact()
    wp.edit_fact(f.pk, {"content": "住在杭州西湖区", "scope": "project"}, actor="person")
    undo_event(last(EventType.UPDATE).pk)
    f = refreshed(f)
    assert f.content == "住在杭州" and f.scope == "user" and not f.verified


@pytest.mark.parametrize("action", [wp.archive_fact, wp.delete_fact])
def test_undoing_an_archive_or_delete_makes_the_fact_active(action):
    f = fact()
    event_type = EventType.ARCHIVE if action is wp.archive_fact else EventType.DELETE
    action(f.pk, actor="person")
    undo_event(last(event_type).pk)
    assert refreshed(f).status == FactStatus.ACTIVE


def test_undoing_a_pin_restores_the_expiry():
    f = fact(priority="short_term")
    expires = f.expires_at
    wp.pin_fact(f.pk, actor="person")
    undo_event(last(EventType.UPDATE).pk)
    f = refreshed(f)
    assert f.priority == Priority.SHORT_TERM and f.expires_at == expires


def test_undoing_a_restore_archives_again():
    f = fact()
    wp.archive_fact(f.pk, actor="person")
    wp.restore_fact(f.pk, actor="person")
    undo_event(last(EventType.UPDATE).pk)
    assert refreshed(f).status == FactStatus.ARCHIVED


def queued(content="李雷在学 Rust"):
    return propose(
        Candidate(content, subject="李雷", predicate="学习", confidence=0.7), actor="agent"
    ).pending


def test_undoing_a_confirm_puts_the_item_back_and_withdraws_the_fact():
    item = queued()
    result = wp.confirm_pending(item.pk)
    undo_event(result.event.pk)
    item = refreshed(item)
    assert item.status == PendingStatus.PENDING and item.resulting_fact is None
    assert refreshed(result.fact).status == FactStatus.REJECTED


def test_undoing_a_confirmed_conflict_restores_the_old_fact():
    old = fact("住在杭州")
    item = propose(
        Candidate("搬到了上海", subject="李雷", predicate="城市", confidence=0.7), actor="agent"
    ).pending
    result = wp.confirm_pending(item.pk)
    undo_event(result.event.pk)
    assert refreshed(old).status == FactStatus.ACTIVE
    assert refreshed(item).status == PendingStatus.PENDING


def test_undoing_an_ignore_puts_the_item_back():
    item = wp.ignore_pending(queued().pk).pending
    undo_event(last(EventType.REJECT).pk)
    assert refreshed(item).status == PendingStatus.PENDING


def test_undoing_a_snooze_puts_the_item_back_now():
    item = queued()
    wp.snooze_pending(item.pk, timezone.now() + timedelta(days=1))
    undo_event(last(EventType.SNOOZE).pk)
    item = refreshed(item)
    assert item.status == PendingStatus.PENDING and item.cooldown_until is None


def test_undoing_queued_for_review_removes_it_from_the_queue():
    item = queued()
    undo_event(last(EventType.PENDING).pk)
    assert refreshed(item).status == PendingStatus.REJECTED


def test_undoing_a_drop_sends_the_candidate_to_review():
    propose(Candidate("可能喜欢喝咖啡", subject="李雷", confidence=0.4), actor="job")
    undo = undo_event(last(EventType.DROP).pk)
    assert undo.pending.status == PendingStatus.PENDING
    assert undo.pending.candidate["content"] == "可能喜欢喝咖啡"
    with pytest.raises(UndoRefused):
        undo_event(last(EventType.DROP).pk)


def test_undoing_an_expiry_gives_the_fact_a_fresh_span():
    f = fact(priority="short_term")
    Fact.objects.filter(pk=f.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    wp.change_fact(f.pk, {"status": FactStatus.EXPIRED}, event_type=EventType.EXPIRE, actor="job")
    undo_event(last(EventType.EXPIRE).pk)
    f = refreshed(f)
    assert f.status == FactStatus.ACTIVE and f.expires_at > timezone.now() + timedelta(days=2)


def test_an_undo_can_itself_be_undone():
    f = fact()
    wp.archive_fact(f.pk, actor="person")
    undo = undo_event(last(EventType.ARCHIVE).pk)
    assert refreshed(f).status == FactStatus.ACTIVE
    undo_event(undo.pk)
    assert refreshed(f).status == FactStatus.ARCHIVED


def test_an_event_is_undone_only_once():
    f = fact()
    wp.archive_fact(f.pk, actor="person")
    event = last(EventType.ARCHIVE)
    undo_event(event.pk)
    assert "Already undone" in undo_blocker(event)
    with pytest.raises(UndoRefused):
        undo_event(event.pk)


def test_undo_refuses_when_a_later_change_touched_the_same_fields():
    f = fact()
    wp.edit_fact(f.pk, {"content": "住在杭州西湖区"}, actor="person")
    first = last(EventType.UPDATE)
    wp.edit_fact(f.pk, {"content": "住在杭州滨江区"}, actor="agent")
    why = undo_blocker(first)
    assert f"Fact #{f.pk} was changed afterwards" in why and "undo that change first" in why
    with pytest.raises(UndoRefused):
        undo_event(first.pk)
    assert refreshed(f).content == "住在杭州滨江区"


def test_undo_of_a_write_refuses_once_the_fact_was_superseded():
    fact("住在北京")
    write = MemoryEvent.objects.filter(event_type=EventType.WRITE).earliest("pk")
    fact("住在杭州")
    assert "changed afterwards" in undo_blocker(write)


def test_undo_refuses_to_put_two_active_facts_on_one_subject_and_predicate():
    old = fact("住在北京")
    wp.archive_fact(old.pk, actor="person")
    archive = last(EventType.ARCHIVE)
    fact("住在杭州")
    why = undo_blocker(archive)
    assert "now holds the same subject and predicate" in why
    with pytest.raises(UndoRefused):
        undo_event(archive.pk)
    assert refreshed(old).status == FactStatus.ARCHIVED


def test_unrelated_later_changes_do_not_block_undo():
    f = fact()
    wp.edit_fact(f.pk, {"content": "住在杭州西湖区"}, actor="person")
    first = last(EventType.UPDATE)
    wp.edit_fact(f.pk, {"importance": 0.9}, actor="person")
    assert undo_blocker(first) is None
    undo_event(first.pk)
    f = refreshed(f)
    assert f.content == "住在杭州" and f.importance == 0.9


def test_a_purged_fact_cannot_be_brought_back():
    f = fact()
    wp.delete_fact(f.pk, actor="person")
    delete = last(EventType.DELETE)
    wp.purge_fact(f.pk)
    assert "purged" in undo_blocker(delete)
    assert "cannot be undone" in undo_blocker(last(EventType.PURGE))


def test_undoing_a_bulk_archive_restores_every_fact():
    facts = [fact(f"事实{i}", predicate=f"p{i}") for i in range(4)]
    batch, _ = wp.bulk_facts([f.pk for f in facts], "archive")
    undos = undo_batch(batch)
    assert len(undos) == 4 and len({u.batch for u in undos}) == 1
    assert Fact.objects.active().count() == 4


def test_a_batch_is_undone_whole_or_not_at_all():
    facts = [fact(f"事实{i}", predicate=f"p{i}") for i in range(3)]
    batch, _ = wp.bulk_facts([f.pk for f in facts], "scope", "project")
    wp.edit_fact(facts[1].pk, {"scope": "insight"}, actor="person")
    with pytest.raises(UndoRefused) as exc:
        undo_batch(batch)
    assert "Event #" in str(exc.value)
    assert sorted(Fact.objects.values_list("scope", flat=True)) == ["insight", "project", "project"]


def test_a_job_run_is_undone_as_a_batch():
    facts = [fact(f"事实{i}", predicate=f"p{i}", importance=0.8) for i in range(2)]
    for f in facts:
        wp.change_fact(f.pk, {"importance": 0.4}, event_type=EventType.DECAY, actor="job",
                       job_run="nightly-1")  # fmt: skip
    undo_batch("nightly-1")
    assert set(Fact.objects.values_list("importance", flat=True)) == {0.8}


def test_an_undone_batch_has_nothing_left():
    batch, _ = wp.bulk_facts([fact().pk], "archive")
    undo_batch(batch)
    with pytest.raises(UndoRefused):
        undo_batch(batch)


def test_demo_events_without_change_lists_can_be_undone():
    load_demo(index=False)
    helix = Fact.objects.get(content__startswith="Now uses Helix")
    nvim = helix.supersedes
    supersede = MemoryEvent.objects.get(operation_id="demo:supersede:ed_helix")
    assert "now holds the same subject and predicate" in undo_blocker(supersede)
    wp.archive_fact(helix.pk, actor="person")
    undo_event(supersede.pk)
    assert refreshed(nvim).status == FactStatus.ACTIVE
    write = MemoryEvent.objects.get(operation_id="demo:write:orchard_what")
    undo_event(write.pk)
    assert Fact.objects.get(pk=write.fact_id).status == FactStatus.REJECTED
    queued_event = MemoryEvent.objects.filter(operation_id__startswith="demo:pending:").first()
    undo_event(queued_event.pk)
    assert PendingItem.objects.get(pk=queued_event.pending_id).status == "rejected"
