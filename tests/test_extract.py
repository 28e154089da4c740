"""Extracting a turn: through the write path, frequency control, the retry queue."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator.models import ConversationTurn, Fact, MemoryEvent, PendingItem
from lifecycle import llm, tasks
from lifecycle.extraction import extract
from lifecycle.extraction.extract import ExtractionDeferred, Plan, extract_turn, pending_turns
from lifecycle.models import DeadLetter, DeadTask, ExtractionItem, JobRun, QueueStatus
from tests.lifecycle_helpers import session, turn

pytestmark = pytest.mark.django_db
LONG = "我最近在做 Memory Curator 这个项目，主要用 Python 和 Django，数据都放在一个 SQLite 文件里。"


@pytest.fixture
def llm_on(settings):
    settings.LLM_MODEL, settings.LLM_BASE_URL = "fake-model", "http://127.0.0.1:9/v1"
    return settings


@pytest.fixture
def llm_calls(monkeypatch):
    """The LLM extractor replaced by a recorder that proposes nothing."""
    calls = []

    def fake_plan(t):
        calls.append(t.pk)
        return Plan()

    monkeypatch.setattr(extract, "llm_plan", fake_plan)
    return calls


def failing_llm(monkeypatch):
    def boom(t):
        raise llm.LLMError("APIConnectionError: connection refused")

    monkeypatch.setattr(extract, "llm_plan", boom)


def test_a_user_turn_goes_through_the_write_path_and_is_marked_extracted():
    t = turn(session(), "我叫李雷")
    (result,) = extract_turn(t)
    assert result.outcome == "written"
    fact = result.fact
    assert (fact.content, fact.source, fact.source_turn_id) == ("用户的名字是李雷", "rules", t.pk)
    assert MemoryEvent.objects.get(fact=fact).actor == "job"
    assert ConversationTurn.objects.get(pk=t.pk).extracted


def test_extracting_a_turn_twice_writes_nothing_more():
    t = turn(session(), "我叫李雷")
    extract_turn(t)
    assert extract_turn(ConversationTurn.objects.get(pk=t.pk)) == []
    assert Fact.objects.count() == 1


def test_assistant_turns_are_marked_done_without_candidates():
    t = turn(session(), "My name is Shiyi, I live in your laptop.", role="assistant")
    assert extract_turn(t) == []
    assert Fact.objects.count() == 0
    assert ConversationTurn.objects.get(pk=t.pk).extracted


def test_a_hedged_statement_waits_for_review():
    (result,) = extract_turn(turn(session(), "我可能喜欢爵士乐"))
    assert result.outcome == "pending"
    assert PendingItem.objects.get().candidate["source"] == "rules"


def test_without_an_llm_the_rules_extract_long_turns_too(llm_calls):
    (result,) = extract_turn(turn(session(), "我叫李雷。" + LONG))
    assert result.fact.content == "用户的名字是李雷"
    assert llm_calls == []


def test_short_turns_never_reach_the_llm(llm_on, llm_calls):
    (result,) = extract_turn(turn(session(), "我叫李雷"))
    assert result.outcome == "written" and llm_calls == []


def test_long_turns_go_to_the_llm(llm_on, llm_calls):
    t = turn(session(), LONG)
    extract_turn(t)
    assert llm_calls == [t.pk]


def test_a_session_gets_at_most_n_llm_calls_then_rules(llm_on, llm_calls):
    llm_on.EXTRACT_LLM_PER_SESSION = 2
    s = session()
    turns = [turn(s, LONG + str(n)) for n in range(3)]
    last = turn(s, "我叫李雷。" + LONG)
    for t in turns:
        extract_turn(t)
    (result,) = extract_turn(last)
    assert llm_calls == [turns[0].pk, turns[1].pk]
    assert result.fact.source == "rules"
    s.refresh_from_db()
    assert s.llm_calls == 2


def test_an_llm_failure_queues_the_turn_with_a_growing_delay(llm_on, monkeypatch):
    failing_llm(monkeypatch)
    t = turn(session(), LONG)
    with pytest.raises(ExtractionDeferred):
        extract_turn(t)
    item = ExtractionItem.objects.get(turn=t)
    first = item.next_attempt_at - timezone.now()
    assert item.attempts == 1 and item.status == QueueStatus.WAITING
    assert "connection refused" in item.last_error
    assert not ConversationTurn.objects.get(pk=t.pk).extracted
    with pytest.raises(ExtractionDeferred):
        extract_turn(t)
    item.refresh_from_db()
    assert item.attempts == 2 and item.next_attempt_at - timezone.now() > first


def test_a_waiting_turn_is_only_picked_up_when_its_retry_is_due(llm_on, monkeypatch):
    failing_llm(monkeypatch)
    t = turn(session(), LONG)
    with pytest.raises(ExtractionDeferred):
        extract_turn(t)
    assert list(pending_turns()) == []
    later = timezone.now() + timedelta(minutes=2)
    assert list(pending_turns(later)) == [t]


def test_after_the_last_attempt_a_dead_letter_and_the_rules_take_the_turn(llm_on, monkeypatch):
    llm_on.EXTRACT_MAX_ATTEMPTS = 2
    failing_llm(monkeypatch)
    t = turn(session(), "我叫李雷。" + LONG)
    for _attempt in range(2):
        with pytest.raises(ExtractionDeferred):
            extract_turn(t)
    letter = DeadLetter.objects.get(task=DeadTask.EXTRACT)
    assert (letter.item_kind, letter.object_id, letter.attempts) == ("turn", t.pk, 2)
    assert ExtractionItem.objects.get(turn=t).status == QueueStatus.DEAD
    assert ConversationTurn.objects.get(pk=t.pk).extracted
    assert Fact.objects.get().content == "用户的名字是李雷"


def test_retrying_an_extraction_dead_letter_asks_the_llm_again(
    llm_on, llm_calls, django_capture_on_commit_callbacks
):
    t = turn(session(), LONG)
    letter = DeadLetter.objects.create(
        task=DeadTask.EXTRACT, item_kind="turn", object_id=t.pk, error="x", attempts=4
    )
    ExtractionItem.objects.create(turn=t, status=QueueStatus.DEAD, attempts=4)
    from lifecycle.deadletters import retry_letter

    with django_capture_on_commit_callbacks(execute=True):
        retry_letter(letter.pk)  # immediate mode: the task runs once the retry committed
    letter.refresh_from_db()
    assert letter.status == "retried" and llm_calls == [t.pk]
    assert ExtractionItem.objects.get(turn=t).status == QueueStatus.DONE


def test_discarding_an_extraction_dead_letter_stops_its_retries():
    t = turn(session(), LONG)
    ExtractionItem.objects.create(turn=t, status=QueueStatus.WAITING, attempts=2)
    letter = DeadLetter.objects.create(
        task=DeadTask.EXTRACT, item_kind="turn", object_id=t.pk, error="x", attempts=2
    )
    from lifecycle.deadletters import discard_letter

    discard_letter(letter.pk)
    assert ExtractionItem.objects.get(turn=t).status == QueueStatus.DISCARDED
    assert list(pending_turns(timezone.now() + timedelta(days=1))) == []


def test_the_task_records_a_run_when_the_turn_proposed_something():
    t = turn(session(), "我叫李雷")
    quiet = turn(t.session, "好的，谢谢")
    tasks.extract_turn(t.pk)
    tasks.extract_turn(quiet.pk)
    run = JobRun.objects.get()
    assert run.kind == "extract" and run.steps[0]["counts"] == {"turn": t.pk, "written": 1}
    assert MemoryEvent.objects.get().job_run == run.run_id


def test_a_deleted_turn_is_skipped_by_the_task():
    tasks.extract_turn(123456)
    assert JobRun.objects.count() == 0
