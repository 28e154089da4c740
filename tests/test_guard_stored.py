"""A new rule applied to what is already stored: list the matches, archive or redact them in
one undoable batch, then (optionally) forget the originals for good."""

import pytest
from django.db import connection

from curator import conversations, history_log
from curator import writepath as wp
from curator.guard import rules as guard
from curator.guard import stored
from curator.models import ConversationTurn, Fact, FactStatus, MemoryEvent, PendingItem
from curator.undo import UndoRefused, batch_events, undo_batch
from retrieval.models import SearchDoc
from retrieval.text import segment

pytestmark = pytest.mark.django_db


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def before_the_rule(commit):
    """A fact, a review item and a turn stored before the rule existed."""
    with commit():
        fact = wp.propose(wp.Candidate(content="小李最近健康状况不好"), actor="agent").fact
        wp.propose(wp.Candidate(content="喜欢喝茶"), actor="agent")
        item = wp.propose(wp.Candidate(content="担心健康", confidence=0.7), actor="agent").pending
        conversations.record_turn("s", 0, "user", "我的健康出了问题")
        conversations.record_turn("s", 1, "assistant", "好的")
    return fact, item, ConversationTurn.objects.get(turn_index=0)


def health():
    rule = guard.create_rule({"name": "健康", "words": ["健康"]})
    return guard.matcher(rule)


def fts_tokens(kind, pk):
    doc = SearchDoc.objects.get(kind=kind, object_id=pk)
    with connection.cursor() as cur:
        cur.execute("SELECT tokens FROM search_fts WHERE rowid = %s", [doc.pk])
        return cur.fetchone()[0]


def test_it_lists_the_matching_facts_review_items_and_turns(before_the_rule):
    fact, item, turn = before_the_rule
    found = stored.find(health())
    assert [f.pk for f in found.facts] == [fact.pk]
    assert [i.pk for i in found.pending] == [item.pk]
    assert [t.pk for t in found.turns] == [turn.pk]


def test_redact_masks_every_copy_and_undo_brings_it_back(before_the_rule, commit):
    fact, item, turn = before_the_rule
    with commit():
        done = stored.apply(health(), stored.REDACT)
    assert (done.facts, done.pending, done.turns) == (1, 1, 1)
    fact.refresh_from_db(), item.refresh_from_db(), turn.refresh_from_db()
    assert fact.content == "小李最近████状况不好" and fact.status == FactStatus.ACTIVE
    assert item.candidate["content"] == "担心████"
    assert turn.content == "我的████出了问题"
    assert "健康" not in fts_tokens("turn", turn.pk) and "健康" not in fts_tokens("fact", fact.pk)
    backup = (history_log.log_dir() / history_log.file_name("s")).read_text()
    assert "健康" not in backup and "好的" in backup
    with commit():
        undo_batch(done.batch)
    fact.refresh_from_db(), item.refresh_from_db(), turn.refresh_from_db()
    assert fact.content == "小李最近健康状况不好"
    assert item.candidate["content"] == "担心健康"
    assert turn.content == "我的健康出了问题"
    assert "健康" in fts_tokens("turn", turn.pk)
    assert "健康" in (history_log.log_dir() / history_log.file_name("s")).read_text()


def test_archive_archives_the_facts_and_ignores_the_items(before_the_rule, commit):
    fact, item, turn = before_the_rule
    with commit():
        done = stored.apply(health(), stored.ARCHIVE)
    fact.refresh_from_db(), item.refresh_from_db(), turn.refresh_from_db()
    assert fact.status == FactStatus.ARCHIVED and item.status == "rejected"
    assert turn.content == "我的████出了问题"  # a turn has no archive: it is masked
    assert Fact.objects.get(content="喜欢喝茶").status == FactStatus.ACTIVE
    undo_batch(done.batch)
    fact.refresh_from_db()
    assert fact.status == FactStatus.ACTIVE


def test_forgetting_the_originals_removes_them_from_the_log_for_good(before_the_rule, commit):
    rule = health()
    with commit():
        done = stored.apply(rule, stored.REDACT)
    assert "健康" in str(list(MemoryEvent.objects.values_list("payload", flat=True)))
    stored.forget_originals(done.batch, rule)
    payloads = str(list(MemoryEvent.objects.values_list("payload", flat=True)))
    assert "健康" not in payloads
    with pytest.raises(UndoRefused):
        undo_batch(done.batch)
    assert all(e.payload.get("originals_forgotten") for e in batch_events(done.batch))
    assert "健康" not in str(list(PendingItem.objects.values_list("candidate", flat=True)))


def test_a_type_rule_can_archive_but_not_redact(before_the_rule):
    rule = guard.matcher(guard.create_rule({"name": "facts", "fact_types": ["fact"]}))
    with pytest.raises(guard.RuleError):
        stored.apply(rule, stored.REDACT)
    assert stored.find(rule).turns == []


def test_the_segmenter_would_have_indexed_the_word():
    assert "健康" in segment("我的健康出了问题")  # so the checks above are meaningful


def test_what_is_masked_is_not_found_again(before_the_rule, commit):
    rule = health()
    with commit():
        stored.apply(rule, stored.REDACT)
    assert stored.find(rule).total == 0
    password = guard.matcher(next(r for r in guard.all_rules() if r.detector == "password"))
    assert password.spans("my password is ████") == []


def test_redacted_items_stay_editable_and_confirmable(before_the_rule, commit):
    fact, item, _turn = before_the_rule
    with commit():
        stored.apply(health(), stored.REDACT)
    wp.edit_fact(fact.pk, {"type": "preference"}, actor="person")
    assert wp.confirm_pending(item.pk).outcome == wp.WRITTEN
