"""Fact actions: edit (and stale edits), archive / restore / delete / pin, bulk, purge, revert."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator import writepath as wp
from curator.models import EventType, Fact, FactStatus, MemoryEvent, Priority
from curator.writepath import Candidate, propose

pytestmark = pytest.mark.django_db


def fact(content="偏好简洁的中文回答", predicate="回答风格", **kw) -> Fact:
    kw.setdefault("subject", "李雷")
    return propose(Candidate(content, predicate=predicate, **kw), actor="agent").fact


def test_an_edit_changes_the_fact_in_place_and_keeps_the_old_values():
    f = fact()
    wp.edit_fact(f.pk, {"content": "偏好简洁的回答", "importance": 0.9}, actor="person")
    f.refresh_from_db()
    assert f.content == "偏好简洁的回答" and f.importance == 0.9 and f.verified
    event = MemoryEvent.objects.get(event_type=EventType.UPDATE)
    change = event.payload["changes"][0]
    assert change["before"]["content"] == "偏好简洁的中文回答"
    assert change["after"] == {
        "content": "偏好简洁的回答",
        "importance": 0.9,
        "verified": True,
        "confidence": 1.0,
    }
    assert Fact.objects.count() == 1


def test_a_fact_edited_by_hand_is_verified_and_certain():
    f = fact(confidence=0.85)
    wp.edit_fact(f.pk, {"content": "偏好简短的回答", "confidence": 0.85}, actor="person")
    f.refresh_from_db()
    assert f.verified and f.confidence == 1.0


def test_a_confidence_the_person_sets_in_the_same_edit_is_kept():
    f = fact(confidence=0.85)
    wp.edit_fact(f.pk, {"content": "偏好简短的回答", "confidence": 0.7}, actor="person")
    f.refresh_from_db()
    assert f.verified and f.confidence == 0.7


def test_an_agents_edit_does_not_verify():
    f = fact(confidence=0.85)
    wp.edit_fact(f.pk, {"content": "偏好简短的回答"}, actor="agent")
    f.refresh_from_db()
    assert not f.verified and f.confidence == 0.85


def test_the_persons_punctuation_is_kept_and_an_agents_is_unified():
    mine = fact("常用 Go", predicate="语言")
    wp.edit_fact(mine.pk, {"content": "常用 Python。"}, actor="person")
    theirs = propose(Candidate("最近在学 Rust。", subject="李雷", predicate="学习"), actor="agent")
    written = propose(Candidate("用 Go。", subject="李雷", predicate="写"), actor="person")
    mine.refresh_from_db()
    assert mine.content == "常用 Python。"  # edited by hand: kept as typed
    assert theirs.fact.content == "最近在学 Rust."  # an agent's text: widths unified
    assert written.fact.content == "用 Go。"  # the person's own marks


def test_an_edit_that_changes_nothing_records_nothing():
    f = fact()
    wp.edit_fact(f.pk, {"content": " 偏好简洁的中文回答 "}, actor="person")
    assert not MemoryEvent.objects.filter(event_type=EventType.UPDATE).exists()


def test_a_stale_edit_is_refused_with_the_current_version():
    f = fact()
    opened_at = f.updated_at
    wp.edit_fact(f.pk, {"content": "偏好英文回答"}, actor="agent")
    with pytest.raises(wp.StaleEdit) as exc:
        wp.edit_fact(f.pk, {"content": "偏好长回答"}, actor="person", expected_updated_at=opened_at)
    assert exc.value.fact.content == "偏好英文回答"
    assert str(exc.value) == "This fact changed since you opened it."
    f.refresh_from_db()
    assert f.content == "偏好英文回答"


def test_an_edit_with_the_current_version_goes_through():
    f = fact()
    wp.edit_fact(f.pk, {"tags": ["style"]}, actor="person", expected_updated_at=f.updated_at)
    f.refresh_from_db()
    assert f.tags == ["style"]


def test_an_edit_is_validated_like_a_candidate():
    f = fact()
    with pytest.raises(wp.InvalidCandidate) as exc:
        wp.edit_fact(f.pk, {"content": "x" * 2001}, actor="person")
    assert exc.value.code == "content_too_long"
    with pytest.raises(wp.InvalidCandidate) as exc:
        wp.edit_fact(f.pk, {"status": "active"}, actor="person")
    assert exc.value.code == "unknown_field"


def test_changing_priority_sets_a_fresh_expiry():
    f = fact(priority="permanent")
    wp.edit_fact(f.pk, {"priority": "short_term"}, actor="person")
    f.refresh_from_db()
    assert timezone.now() + timedelta(days=2) < f.expires_at < timezone.now() + timedelta(days=4)


def test_an_edit_may_not_put_two_active_facts_on_one_subject_and_predicate():
    a = fact("住在杭州", predicate="城市")
    b = fact("喜欢猫", predicate="宠物")
    with pytest.raises(wp.ActiveConflict) as exc:
        wp.edit_fact(b.pk, {"predicate": "城市"}, actor="person")
    assert exc.value.fact == a


def test_archive_restore_and_delete():
    f = fact()
    wp.archive_fact(f.pk, actor="person")
    f.refresh_from_db()
    assert f.status == FactStatus.ARCHIVED
    wp.restore_fact(f.pk, actor="person")
    f.refresh_from_db()
    assert f.status == FactStatus.ACTIVE
    wp.delete_fact(f.pk, actor="person")
    f.refresh_from_db()
    assert f.status == FactStatus.ARCHIVED
    types = list(MemoryEvent.objects.order_by("pk").values_list("event_type", flat=True))
    assert types == ["write", "archive", "update", "delete"]


def test_restoring_refuses_when_another_fact_took_its_place():
    f = fact("住在北京", predicate="城市")
    wp.archive_fact(f.pk, actor="person")
    fact("住在杭州", predicate="城市")
    with pytest.raises(wp.ActiveConflict):
        wp.restore_fact(f.pk, actor="person")


def test_restoring_an_expired_fact_gives_it_a_fresh_span():
    f = fact(priority="short_term")
    Fact.objects.filter(pk=f.pk).update(
        status=FactStatus.EXPIRED, expires_at=timezone.now() - timedelta(days=1)
    )
    wp.restore_fact(f.pk, actor="person")
    f.refresh_from_db()
    assert f.status == FactStatus.ACTIVE and f.expires_at > timezone.now()


def test_a_superseded_version_cannot_be_archived():
    old = fact("住在北京", predicate="城市")
    fact("住在杭州", predicate="城市")
    with pytest.raises(wp.NotAllowed):
        wp.archive_fact(old.pk, actor="person")


def test_pin_keeps_a_fact_forever():
    f = fact(priority="transient")
    wp.pin_fact(f.pk, actor="person")
    f.refresh_from_db()
    assert f.priority == Priority.PERMANENT and f.expires_at is None


def test_bulk_archive_shares_one_batch():
    facts = [fact(f"事实{i}", predicate=f"p{i}") for i in range(3)]
    batch, changed = wp.bulk_facts([f.pk for f in facts], "archive")
    assert changed == 3 and batch.startswith("bulk-")
    assert MemoryEvent.objects.filter(batch=batch, event_type=EventType.ARCHIVE).count() == 3
    assert not Fact.objects.active().exists()


def test_bulk_scope_and_priority():
    facts = [fact(f"事实{i}", predicate=f"p{i}") for i in range(2)]
    wp.bulk_facts([f.pk for f in facts], "scope", "project")
    wp.bulk_facts([f.pk for f in facts], "priority", "permanent")
    assert set(Fact.objects.values_list("scope", "priority")) == {("project", "permanent")}


def test_a_bad_bulk_value_changes_nothing():
    facts = [fact(f"事实{i}", predicate=f"p{i}") for i in range(2)]
    with pytest.raises(wp.InvalidCandidate):
        wp.bulk_facts([f.pk for f in facts], "scope", "galaxy")
    assert set(Fact.objects.values_list("scope", flat=True)) == {"user"}


def test_purge_needs_a_deleted_fact_and_removes_its_text_everywhere():
    f = fact("我的保险箱号码是 Q7731", predicate="保险箱")
    with pytest.raises(wp.NotAllowed):
        wp.purge_fact(f.pk)
    wp.delete_fact(f.pk, actor="person")
    wp.purge_fact(f.pk)
    assert not Fact.objects.filter(pk=f.pk).exists()
    assert "Q7731" not in str(list(MemoryEvent.objects.values_list("payload", flat=True)))
    assert MemoryEvent.objects.filter(event_type=EventType.PURGE).exists()


def test_purging_a_middle_version_keeps_the_chain_connected():
    a = fact("住在北京", predicate="城市")
    b = fact("住在上海", predicate="城市")
    c = fact("住在杭州", predicate="城市")
    wp.purge_fact(b.pk)
    c.refresh_from_db()
    assert c.chain() == [a, c]


def test_an_older_version_can_be_brought_back_as_a_new_version():
    a = fact("住在北京", predicate="城市")
    b = fact("住在杭州", predicate="城市")
    result = wp.revert_to(a.pk)
    b.refresh_from_db()
    assert result.fact.content == "住在北京" and result.fact.supersedes == b
    assert b.status == FactStatus.SUPERSEDED and len(result.fact.chain()) == 3
