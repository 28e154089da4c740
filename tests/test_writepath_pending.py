"""Pending actions: confirm (with edits), ignore, later, and items that became moot."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator import writepath as wp
from curator.models import EventType, Fact, FactStatus, PendingStatus
from curator.writepath import Candidate, propose

pytestmark = pytest.mark.django_db


def queued(content="李雷最近在学 Rust", **kw):
    kw.setdefault("subject", "李雷")
    kw.setdefault("predicate", "正在学习")
    kw.setdefault("confidence", 0.7)
    return propose(Candidate(content=content, **kw), actor="agent").pending


def test_confirm_writes_a_verified_fact():
    item = queued(type="skill", tags=["coding"])
    result = wp.confirm_pending(item.pk)
    item.refresh_from_db()
    fact = result.fact
    assert result.outcome == "written" and item.status == PendingStatus.CONFIRMED
    assert item.resulting_fact == fact and fact.verified and fact.confidence == 1.0
    assert fact.type == "skill" and fact.tags == ["coding"]
    assert result.event.event_type == EventType.CONFIRM and result.event.actor == "person"


def test_confirm_with_edits_writes_the_edited_text():
    item = queued()
    fact = wp.confirm_pending(
        item.pk, edits={"content": "李雷在学 Rust 和 Go", "scope": "project"}
    ).fact
    assert fact.content == "李雷在学 Rust 和 Go" and fact.scope == "project"


def test_invalid_edits_are_refused_and_the_item_stays():
    item = queued()
    with pytest.raises(wp.InvalidCandidate) as exc:
        wp.confirm_pending(item.pk, edits={"content": ""})
    item.refresh_from_db()
    assert exc.value.code == "empty_content" and item.status == PendingStatus.PENDING
    assert not Fact.objects.exists()


def test_confirming_a_conflict_supersedes_the_old_fact():
    old = propose(Candidate("李雷住在杭州", subject="李雷", predicate="城市"), actor="agent").fact
    item = queued("李雷搬到了上海", predicate="城市")
    result = wp.confirm_pending(item.pk)
    old.refresh_from_db()
    assert result.outcome == "superseded" and old.status == FactStatus.SUPERSEDED
    assert result.fact.supersedes == old


def test_confirming_what_is_already_stored_verifies_it():
    item = queued("李雷住在杭州", predicate="城市")
    fact = propose(Candidate("李雷住在杭州", subject="李雷", predicate="城市"), actor="person").fact
    result = wp.confirm_pending(item.pk)
    fact.refresh_from_db()
    assert result.outcome == "boosted" and result.fact == fact and fact.verified
    assert Fact.objects.count() == 1


def test_a_conflict_whose_fact_was_archived_meanwhile_is_moot():
    old = propose(Candidate("李雷住在杭州", subject="李雷", predicate="城市"), actor="agent").fact
    item = queued("李雷搬到了上海", predicate="城市")
    wp.archive_fact(old.pk, actor="person")
    item.refresh_from_db()
    assert "no longer active" in wp.moot_reason(item)
    with pytest.raises(wp.MootPending):
        wp.confirm_pending(item.pk)
    assert wp.confirm_pending(item.pk, force=True).outcome == "written"


def test_a_conflict_whose_fact_was_edited_meanwhile_is_moot():
    old = propose(Candidate("李雷住在杭州", subject="李雷", predicate="城市"), actor="agent").fact
    item = queued("李雷搬到了上海", predicate="城市")
    wp.edit_fact(old.pk, {"content": "李雷住在杭州西湖区"}, actor="person")
    assert "was edited" in wp.moot_reason(item)


def test_a_low_confidence_item_is_moot_once_another_fact_holds_its_place():
    item = queued("李雷搬到了上海", predicate="城市")
    other = propose(Candidate("李雷住在苏州", subject="李雷", predicate="城市"), actor="person")
    assert f"#{other.fact.pk}" in wp.moot_reason(item)


def test_confirming_a_suggested_deletion_archives_the_fact():
    fact = propose(
        Candidate("本周在排查内存泄漏", subject="orchard", predicate="问题"), actor="job"
    ).fact
    item = propose(Candidate("", delete_fact_id=fact.pk), actor="agent").pending
    result = wp.confirm_pending(item.pk)
    fact.refresh_from_db()
    assert result.outcome == "deleted" and fact.status == FactStatus.ARCHIVED


def test_a_deletion_of_an_edited_fact_is_moot():
    fact = propose(
        Candidate("本周在排查内存泄漏", subject="orchard", predicate="问题"), actor="job"
    ).fact
    item = propose(Candidate("", delete_fact_id=fact.pk), actor="agent").pending
    wp.edit_fact(fact.pk, {"content": "内存泄漏已修复，继续观察"}, actor="person")
    with pytest.raises(wp.MootPending):
        wp.confirm_pending(item.pk)


def test_ignore_rejects_the_item():
    item = wp.ignore_pending(queued().pk).pending
    assert item.status == PendingStatus.REJECTED
    assert item.events.filter(event_type=EventType.REJECT).exists()


def test_later_hides_the_item_until_its_cooldown_passes():
    item = queued()
    until = timezone.now() + timedelta(hours=1)
    wp.snooze_pending(item.pk, until)
    item.refresh_from_db()
    assert item.status == PendingStatus.SNOOZED and item.cooldown_until == until
    assert item not in wp.due_pending()
    assert item in wp.due_pending(now=until + timedelta(seconds=1))


def test_a_snoozed_item_can_still_be_confirmed():
    item = queued()
    wp.snooze_pending(item.pk, timezone.now() + timedelta(days=1))
    assert wp.confirm_pending(item.pk).outcome == "written"


def test_later_needs_a_time_in_the_future():
    item = queued()
    with pytest.raises(wp.WritePathError) as exc:
        wp.snooze_pending(item.pk, timezone.now() - timedelta(minutes=1))
    assert exc.value.code == "invalid_snooze"


def test_a_handled_item_cannot_be_handled_twice():
    item = queued()
    wp.confirm_pending(item.pk)
    with pytest.raises(wp.AlreadyResolved):
        wp.ignore_pending(item.pk)
    with pytest.raises(wp.AlreadyResolved):
        wp.confirm_pending(item.pk)
    assert Fact.objects.count() == 1
