"""The LLM extractor against the fake OpenAI-compatible server: every operation, short ids,
invented ids, malformed replies and endpoint failures."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from curator.models import ConversationTurn, Fact, PendingItem
from lifecycle.extraction.extract import ExtractionDeferred, extract_turn, retry_now
from lifecycle.models import ExtractionItem, Incident, QueueStatus
from retrieval import indexing
from tests.lifecycle_helpers import fact, session, turn

pytestmark = pytest.mark.django_db
ASK = "对了，我现在已经搬到杭州了，在滨江那边上班，以后周末的提醒也都别发了，谢谢你一直记着这些。"


@pytest.fixture
def llm(fake_openai, settings):
    settings.LLM_MODEL, settings.LLM_API_KEY = "fake-chat", "test"
    settings.LLM_BASE_URL = fake_openai.base_url
    return fake_openai


def ops(*operations) -> str:
    return json.dumps({"operations": list(operations)}, ensure_ascii=False)


def known(content="用户住在北京", **kwargs) -> Fact:
    """An existing memory the search finds for ASK (indexed with the local embedder)."""
    kwargs.setdefault("subject", "user")
    kwargs.setdefault("predicate", "location")
    f = fact(content, confidence=0.9, **kwargs)
    indexing.index_items("fact", [f])
    return f


def user_turn(text=ASK):
    s = session()
    turn(s, "我在 orchard-2 上看了一下进程。", role="assistant",
         tool_calls=[{"id": "c1",
                      "function": {"name": "run_shell", "arguments": {"cmd": "ps aux"}}}],
         tool_results=[{"tool_call_id": "c1", "ok": True, "output": "celery 3.7G"}])  # fmt: skip
    return turn(s, text)


def prompt_of(request) -> str:
    return request["body"]["messages"][1]["content"]


def test_add_writes_a_fact_with_its_retention(llm):
    llm.chat_replies = [ops({"op": "ADD", "type": "fact", "subject": "user",
                             "predicate": "workplace",
                             "content": "用户在滨江上班", "confidence": 0.95, "importance": 0.6,
                             "duration": "7d"})]  # fmt: skip
    t = user_turn()
    (result,) = extract_turn(t)
    written = result.fact
    assert (result.outcome, written.source, written.source_turn_id) == ("written", "llm", t.pk)
    assert (written.subject, written.predicate, written.priority) == (
        "user",
        "workplace",
        "short_term",
    )
    assert abs(written.expires_at - (timezone.now() + timedelta(days=7))) < timedelta(minutes=1)
    assert ConversationTurn.objects.get(pk=t.pk).extracted


def test_the_model_sees_short_ids_and_the_tool_activity_in_json_mode(llm):
    for n in range(4):
        fact(f"unrelated {n}")  # so the related fact's database id is not 1
    old = known()
    llm.chat_replies = [ops({"op": "NOOP"})]
    extract_turn(user_turn())
    body = llm.requests[-1]["body"]
    assert body["response_format"] == {"type": "json_object"} and body["model"] == "fake-chat"
    prompt = prompt_of(llm.requests[-1])
    assert "[1] (fact) user · location: 用户住在北京" in prompt
    assert f"[{old.pk}]" not in prompt
    assert "run_shell" in prompt and "celery 3.7G" in prompt and ASK in prompt


def test_update_supersedes_the_memory_it_names(llm):
    old = known()
    llm.chat_replies = [
        ops({"op": "UPDATE", "id": 1, "content": "用户已搬到杭州", "confidence": 0.95})
    ]
    (result,) = extract_turn(user_turn())
    assert result.outcome == "superseded"
    assert (result.fact.subject, result.fact.predicate) == ("user", "location")
    assert Fact.objects.get(pk=old.pk).status == "superseded"
    assert result.fact.supersedes_id == old.pk


def test_update_of_a_memory_without_subject_asks_before_removing_the_old_one(llm):
    old = known(subject="", predicate="")
    llm.chat_replies = [
        ops({"op": "UPDATE", "id": 1, "content": "用户已搬到杭州", "confidence": 0.95})
    ]
    added, removal = extract_turn(user_turn())
    assert (added.outcome, added.fact.content) == ("written", "用户已搬到杭州")
    assert removal.outcome == "pending" and removal.pending.conflicts_with_id == old.pk
    assert Fact.objects.get(pk=old.pk).status == "active"


def test_boost_repeats_the_memory_and_raises_its_importance(llm):
    old = known(importance=0.5)
    llm.chat_replies = [ops({"op": "BOOST", "id": "1"})]
    (result,) = extract_turn(user_turn())
    old.refresh_from_db()
    assert result.outcome == "boosted"
    assert (old.hit_count, old.importance, old.status) == (2, 0.6, "active")


def test_delete_only_suggests_a_removal(llm):
    old = known()
    llm.chat_replies = [ops({"op": "DELETE", "id": 1, "reason": "moved to Hangzhou"})]
    (result,) = extract_turn(user_turn())
    assert result.outcome == "pending"
    item = PendingItem.objects.get()
    assert (item.reason, item.conflicts_with_id) == ("deletion", old.pk)
    assert Fact.objects.get(pk=old.pk).status == "active"


def test_noop_writes_nothing_but_the_turn_is_done(llm):
    llm.chat_replies = [ops({"op": "NOOP"})]
    t = user_turn()
    assert extract_turn(t) == []
    assert Fact.objects.count() == 0 and ConversationTurn.objects.get(pk=t.pk).extracted


def test_ids_the_model_invented_are_rejected_and_the_rest_applied(llm):
    old = known()
    llm.chat_replies = [ops(
        {"op": "DELETE", "id": 7, "reason": "?"},
        {"op": "UPDATE", "id": 2, "content": "用户住在上海", "confidence": 0.95},
        {"op": "ADD", "type": "rule", "content": "周末不要发提醒", "confidence": 0.9},
    )]  # fmt: skip
    (result,) = extract_turn(user_turn())
    assert result.fact.content == "周末不要发提醒"
    assert Fact.objects.get(pk=old.pk).status == "active" and PendingItem.objects.count() == 0


def test_malformed_json_is_retried_once_with_the_error_shown(llm):
    llm.chat_replies = [
        '{"operations": [',
        ops({"op": "ADD", "content": "用户在滨江上班", "confidence": 0.95}),
    ]
    (result,) = extract_turn(user_turn())
    assert result.outcome == "written"
    retry = llm.requests[-1]["body"]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"operations": ['}
    assert "not valid JSON" in retry[-1]["content"]


def test_a_wrong_shape_is_corrected_the_same_way(llm):
    llm.chat_replies = ['{"operations": "ADD everything"}', ops({"op": "NOOP"})]
    extract_turn(user_turn())
    assert '"operations" must be a list' in llm.requests[-1]["body"]["messages"][-1]["content"]


def test_malformed_twice_sends_the_turn_to_the_retry_queue(llm):
    llm.chat_replies = ["not json", '{"operations": [{"op": "MAYBE"}]}']
    t = user_turn()
    with pytest.raises(ExtractionDeferred):
        extract_turn(t)
    assert len(llm.requests) == 2
    item = ExtractionItem.objects.get(turn=t)
    assert item.status == QueueStatus.WAITING and "unknown" in item.last_error
    assert not ConversationTurn.objects.get(pk=t.pk).extracted
    assert Incident.objects.get(service="llm").context == f"turn {t.pk}"


def test_an_endpoint_error_defers_the_turn_too(llm):
    llm.fail_next(status=500, times=2)  # the client retries once: both attempts fail
    t = user_turn()
    with pytest.raises(ExtractionDeferred):
        extract_turn(t)
    assert ExtractionItem.objects.get(turn=t).attempts == 1
    llm.chat_replies = [ops({"op": "ADD", "content": "用户在滨江上班", "confidence": 0.95})]
    (result,) = extract_turn(t)  # the retry succeeds
    assert result.outcome == "written"
    assert ExtractionItem.objects.get(turn=t).status == QueueStatus.DONE


def test_retrying_a_dead_letter_after_the_rules_took_the_turn_adds_what_the_llm_finds(
    llm, settings
):
    settings.EXTRACT_MAX_ATTEMPTS = 1
    llm.chat_replies = ["broken", "still broken"]
    t = user_turn("我叫李雷。" + ASK)
    with pytest.raises(ExtractionDeferred):
        extract_turn(t)  # the last attempt: a dead letter, and the rules take the turn
    assert set(Fact.objects.values_list("source", flat=True)) == {"rules"}
    llm.chat_replies = [ops({"op": "ADD", "content": "用户在滨江上班", "confidence": 0.95})]
    (result,) = retry_now(t.pk)
    assert (result.outcome, result.replayed, result.fact.source) == ("written", False, "llm")
