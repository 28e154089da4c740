"""The write path's routing: validation, thresholds, duplicates, supersede, rejection, replay."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from curator import writepath as wp
from curator.models import (
    ConversationTurn,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    Owner,
    PendingItem,
    PendingReason,
    Priority,
    Session,
)
from curator.normalize import content_key, normalise_label, normalise_text
from curator.writepath import Candidate, InvalidCandidate, propose

pytestmark = pytest.mark.django_db


def cand(content="李雷住在杭州", **kw) -> Candidate:
    kw.setdefault("subject", "李雷")
    kw.setdefault("predicate", "居住城市")
    return Candidate(content=content, **kw)


def nothing_written():
    return not Fact.objects.exists() and not PendingItem.objects.exists()


# --- normalisation ---------------------------------------------------------------------


def test_it_trims_collapses_whitespace_and_unifies_punctuation():
    assert normalise_text("  李雷住在杭州,在杭州   工作.  ") == "李雷住在杭州，在杭州 工作。"
    assert normalise_text("Uses Python 3.12，mostly") == "Uses Python 3.12, mostly"
    assert normalise_text("ＡＰＩ\u3000key") == "API key"


def test_a_predicate_keeps_ascii_colon_separators_after_chinese():
    # Predicates are keys: "：" after Han would make "event: 团建: scale" a different key
    # from what the extractor and an agent typed.
    for typed in ("event: 团建活动: scale", "event: 团建活动：scale", "event: 团建活动 : scale"):
        assert normalise_label(typed) == "event: 团建活动: scale"
    assert normalise_label("开会 10:30") == "开会 10:30"


def test_a_statement_supersedes_whichever_colon_width_the_earlier_predicate_used():
    old = propose(cand("团建大约五十人参加", predicate="event: 团建：scale"), actor="agent").fact
    assert old.predicate == "event: 团建: scale"
    result = propose(cand("团建大约八十人参加", predicate="event: 团建: scale"), actor="agent")
    assert result.outcome == "superseded" and result.fact.supersedes == old


def test_full_and_half_width_forms_share_one_key():
    assert content_key("李雷住在杭州，在杭州工作。") == content_key("李雷住在杭州, 在杭州工作")
    assert content_key("Prefers pytest") == content_key("prefers  PYTEST.")


def test_the_stored_content_is_normalised():
    result = propose(cand("  李雷住在杭州,  在西湖边  "), actor="agent")
    assert result.fact.content == "李雷住在杭州， 在西湖边"
    assert result.fact.content_key == content_key("李雷住在杭州，在西湖边")


# --- validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, code, field",
    [
        ({"content": "   "}, "empty_content", "content"),
        ({"content": "x" * 2001}, "content_too_long", "content"),
        ({"confidence": 1.2}, "invalid_confidence", "confidence"),
        ({"confidence": float("nan")}, "invalid_confidence", "confidence"),
        ({"confidence": True}, "invalid_confidence", "confidence"),
        ({"importance": -0.1}, "invalid_importance", "importance"),
        ({"type": "opinion"}, "invalid_type", "type"),
        ({"scope": "team"}, "invalid_scope", "scope"),
        ({"priority": "forever"}, "invalid_priority", "priority"),
        ({"duration": "3w"}, "invalid_duration", "duration"),
        ({"source": "guess"}, "invalid_source", "source"),
        ({"tags": "a,b"}, "invalid_tags", "tags"),
        ({"subject": "s" * 201}, "subject_too_long", "subject"),
        ({"source_turn_id": 9999}, "unknown_turn", "source_turn_id"),
        ({"delete_fact_id": 9999}, "unknown_fact", "delete_fact_id"),
    ],
)
def test_invalid_candidates_are_refused_and_nothing_is_written(changes, code, field):
    fields = {"content": "李雷住在杭州", **changes}
    with pytest.raises(InvalidCandidate) as exc:
        propose(Candidate(**fields), actor="agent")
    assert exc.value.code == code and exc.value.field == field
    assert str(exc.value)[0].isupper() and str(exc.value).endswith(".")
    assert nothing_written() and not MemoryEvent.objects.exists()


def test_content_of_exactly_2000_characters_is_accepted():
    assert propose(Candidate(content="记" * 2000), actor="agent").outcome == "written"


def test_an_unknown_actor_is_refused():
    with pytest.raises(InvalidCandidate) as exc:
        propose(cand(), actor="robot")
    assert exc.value.code == "invalid_actor"


# --- confidence routing ----------------------------------------------------------------


@pytest.mark.parametrize(
    "confidence, outcome",
    [(1.0, "written"), (0.85, "written"), (0.8499, "pending"), (0.6, "pending"),
     (0.5999, "dropped"), (0.0, "dropped")],
)  # fmt: skip
def test_confidence_routes_at_the_exact_thresholds(confidence, outcome):
    result = propose(cand(confidence=confidence), actor="agent")
    assert result.outcome == outcome
    assert Fact.objects.count() == (outcome == "written")
    assert PendingItem.objects.count() == (outcome == "pending")


@override_settings(CONFIDENCE_WRITE=0.95, CONFIDENCE_PENDING=0.9)
def test_thresholds_come_from_settings():
    assert propose(cand("a", confidence=0.94), actor="agent").outcome == "pending"
    assert propose(cand("b", confidence=0.89, predicate="x"), actor="agent").outcome == "dropped"


def test_a_pending_item_says_why_it_waits():
    item = propose(cand(confidence=0.7), actor="agent").pending
    assert item.reason == PendingReason.LOW_CONFIDENCE and item.conflicts_with is None
    assert item.candidate["content"] == "李雷住在杭州" and item.confidence == 0.7


def test_a_drop_is_recorded_but_stores_nothing():
    result = propose(cand(confidence=0.3), actor="job")
    assert result.fact is None and result.pending is None
    assert result.event.event_type == EventType.DROP
    assert result.event.payload["reason"] == "low_confidence"
    assert result.event.payload["candidate"]["content"] == "李雷住在杭州"
    assert nothing_written()


# --- duplicates and supersede -----------------------------------------------------------


def test_the_same_content_boosts_instead_of_adding_a_row():
    first = propose(cand(confidence=0.9), actor="agent").fact
    result = propose(cand("李雷住在杭州。", confidence=0.9), actor="agent")
    assert result.outcome == "boosted" and result.fact.pk == first.pk
    fact = Fact.objects.get()
    assert fact.hit_count == 2 and 0.9 < fact.confidence <= wp.CONFIDENCE_CAP
    assert result.event.event_type == EventType.BOOST


def test_boosting_never_passes_the_cap():
    propose(cand(confidence=0.98), actor="agent")
    for _ in range(30):
        propose(cand(confidence=1.0), actor="agent")
    fact = Fact.objects.get()
    assert fact.hit_count == 31 and fact.confidence == pytest.approx(wp.CONFIDENCE_CAP)


def test_a_new_value_for_subject_and_predicate_supersedes_and_keeps_the_chain():
    old = propose(cand("李雷住在北京"), actor="agent").fact
    result = propose(cand("李雷已经搬到杭州"), actor="agent")
    new = result.fact
    old.refresh_from_db()
    assert result.outcome == "superseded" and result.event.event_type == EventType.SUPERSEDE
    assert old.status == FactStatus.SUPERSEDED and new.supersedes == old
    assert old.superseded_by == new and new.chain() == [old, new]
    assert result.event.payload["before"]["content"] == "李雷住在北京"
    assert result.event.payload["after"]["content"] == "李雷已经搬到杭州"


def test_candidates_without_subject_and_predicate_never_supersede():
    propose(Candidate(content="喜欢猫", subject="李雷"), actor="agent")
    propose(Candidate(content="喜欢狗", subject="李雷"), actor="agent")
    assert Fact.objects.active().count() == 2


def test_a_mid_confidence_conflict_waits_with_both_texts():
    old = propose(cand("李雷住在杭州"), actor="agent").fact
    item = propose(cand("李雷搬到了上海", confidence=0.78), actor="agent").pending
    assert item.reason == PendingReason.CONFLICT and item.conflicts_with == old
    assert item.candidate["replaces"] == {"id": old.pk, "content": "李雷住在杭州"}
    old.refresh_from_db()
    assert old.status == FactStatus.ACTIVE


def test_only_the_person_replaces_a_verified_fact():
    verified = propose(cand("李雷住在杭州", verified=True), actor="person").fact
    by_agent = propose(cand("李雷搬到了上海", confidence=0.99), actor="agent")
    assert by_agent.outcome == "pending" and by_agent.pending.conflicts_with == verified
    by_person = propose(cand("李雷搬到了苏州", confidence=0.99), actor="person")
    assert by_person.outcome == "superseded" and by_person.fact.supersedes == verified


def test_the_same_candidate_waiting_in_review_is_not_queued_twice():
    first = propose(cand(confidence=0.7), actor="agent").pending
    again = propose(cand(confidence=0.8), actor="job")
    assert again.outcome == "pending" and again.pending.pk == first.pk
    assert PendingItem.objects.count() == 1
    first.refresh_from_db()
    assert first.confidence == 0.8


# --- rejection memory ------------------------------------------------------------------


def test_what_the_person_rejected_is_not_proposed_again():
    item = propose(cand("李雷搬到了上海", confidence=0.7), actor="agent").pending
    wp.ignore_pending(item.pk)
    again = propose(cand("李雷搬到了上海。", confidence=0.99), actor="agent")
    assert again.outcome == "dropped" and again.event.payload["reason"] == "rejected_before"
    assert again.event.payload["rejected"] == {"pending": item.pk}
    assert not Fact.objects.exists()


def test_a_person_may_still_write_what_they_once_rejected():
    item = propose(cand("李雷搬到了上海", confidence=0.7), actor="agent").pending
    wp.ignore_pending(item.pk)
    assert propose(cand("李雷搬到了上海"), actor="person").outcome == "written"


def test_rejection_memory_is_per_subject():
    item = propose(cand("喜欢猫", subject="王芳", confidence=0.7), actor="agent").pending
    wp.ignore_pending(item.pk)
    assert propose(cand("喜欢猫", subject="李雷"), actor="agent").outcome == "written"


# --- idempotency -----------------------------------------------------------------------


def test_the_same_operation_id_twice_writes_nothing_more():
    first = propose(cand(), actor="agent", operation_id="op-1")
    second = propose(cand("完全不同的内容"), actor="agent", operation_id="op-1")
    assert second.replayed and not first.replayed
    assert second.outcome == "written" and second.fact == first.fact
    assert second.event.pk == first.event.pk
    assert Fact.objects.count() == 1 and MemoryEvent.objects.count() == 1


def test_a_replayed_pending_outcome_returns_the_same_item():
    first = propose(cand(confidence=0.7), actor="agent", operation_id="op-2")
    second = propose(cand(confidence=0.7), actor="agent", operation_id="op-2")
    assert second.outcome == "pending" and second.pending == first.pending
    assert second.fact is None


def test_an_api_retry_with_other_content_is_an_operation_conflict():
    first = propose(cand(), actor="agent", operation_id="op-9", same_request=True)
    assert propose(cand(), actor="agent", operation_id="op-9", same_request=True).replayed
    with pytest.raises(wp.OperationConflict):
        propose(cand("完全不同的内容"), actor="agent", operation_id="op-9", same_request=True)
    assert Fact.objects.count() == 1 and MemoryEvent.objects.get().pk == first.event.pk


def test_an_operation_recorded_before_fingerprints_still_replays():
    first = propose(cand(), actor="agent", operation_id="op-old")
    MemoryEvent.objects.filter(pk=first.event.pk).update(payload={"outcome": "written"})
    again = propose(cand("另一句"), actor="agent", operation_id="op-old", same_request=True)
    assert again.replayed and again.fact == first.fact


def test_a_refused_candidate_does_not_burn_its_operation_id():
    with pytest.raises(InvalidCandidate):
        propose(cand(""), actor="agent", operation_id="op-3")
    assert propose(cand(), actor="agent", operation_id="op-3").outcome == "written"


# --- suggested deletions ---------------------------------------------------------------


def test_a_suggested_deletion_never_deletes():
    fact = propose(cand(), actor="agent").fact
    result = propose(
        Candidate(content="已经不住那里了", delete_fact_id=fact.pk, confidence=0.95),
        actor="agent",
    )
    fact.refresh_from_db()
    assert result.outcome == "pending" and fact.status == FactStatus.ACTIVE
    item = result.pending
    assert item.reason == PendingReason.DELETION and item.conflicts_with == fact
    assert item.candidate["operation"] == "DELETE" and item.candidate["fact_id"] == fact.pk
    assert item.candidate["content"] == fact.content and item.candidate["why"] == "已经不住那里了"


def test_a_repeated_deletion_suggestion_reuses_the_waiting_item():
    fact = propose(cand(), actor="agent").fact
    first = propose(Candidate(content="", delete_fact_id=fact.pk), actor="agent").pending
    again = propose(Candidate(content="", delete_fact_id=fact.pk), actor="job").pending
    assert first.pk == again.pk


def test_a_rejected_deletion_suggestion_is_not_asked_again():
    fact = propose(cand(), actor="agent").fact
    item = propose(Candidate(content="", delete_fact_id=fact.pk), actor="agent").pending
    wp.ignore_pending(item.pk)
    again = propose(Candidate(content="", delete_fact_id=fact.pk), actor="agent")
    assert again.outcome == "dropped" and again.event.payload["reason"] == "rejected_before"


# --- retention -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, priority, span",
    [
        ({"duration": "permanent"}, Priority.PERMANENT, None),
        ({"duration": "7d"}, Priority.SHORT_TERM, timedelta(days=7)),
        ({"duration": "24h"}, Priority.TRANSIENT, timedelta(hours=24)),
        ({"duration": "session"}, Priority.TRANSIENT, timedelta(days=1)),
        ({"priority": "long_term"}, Priority.LONG_TERM, timedelta(days=30)),
        ({"type": "preference"}, Priority.PERMANENT, None),
        ({"type": "error"}, Priority.SHORT_TERM, timedelta(days=7)),
        ({"type": "fact"}, Priority.LONG_TERM, timedelta(days=30)),
    ],
)
def test_priority_or_duration_sets_the_expiry(kw, priority, span):
    before = timezone.now()
    fact = propose(cand(**kw), actor="agent").fact
    assert fact.priority == priority
    if span is None:
        assert fact.expires_at is None
    else:
        assert before + span <= fact.expires_at <= timezone.now() + span


# --- transactions, events, indexing ----------------------------------------------------


def test_it_works_inside_an_outer_transaction_and_rolls_back_with_it():
    with pytest.raises(RuntimeError), transaction.atomic():
        propose(cand("甲", predicate="a"), actor="person")
        propose(cand("乙", predicate="b"), actor="person")
        assert Fact.objects.count() == 2
        raise RuntimeError("the surrounding step failed")
    assert nothing_written() and not MemoryEvent.objects.exists()


def test_every_change_has_its_event_with_actor_and_snapshots():
    result = propose(cand(tags=["profile", " profile ", ""]), actor="job", job_run="run-7")
    event = result.event
    assert event.actor == "job" and event.job_run == "run-7" and event.fact == result.fact
    assert event.payload["before"] is None and event.payload["after"]["status"] == "active"
    assert event.payload["changes"] == [
        {"kind": "fact", "id": result.fact.pk, "before": None, "after": {"status": "active"}}
    ]
    assert result.fact.tags == ["profile"]


def test_reindexing_is_queued_after_commit(django_capture_on_commit_callbacks, monkeypatch):
    seen = []
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, pk: seen.append((kind, pk)))
    with django_capture_on_commit_callbacks(execute=True):
        old = propose(cand("李雷住在北京"), actor="agent").fact
        new = propose(cand("李雷住在杭州"), actor="agent").fact
    assert ("fact", old.pk) in seen and ("fact", new.pk) in seen


def test_the_source_turn_is_linked():
    session = Session.objects.create(owner=Owner.default(), external_id="s")
    turn = ConversationTurn.objects.create(session=session, turn_index=0, role="user", content="x")
    fact = propose(cand(source_turn_id=turn.pk, source="rules"), actor="job").fact
    assert fact.source_turn == turn and fact.source == "rules"
