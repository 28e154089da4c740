"""Guardrails: a candidate a rule matches is never written or queued, from any source, and
turns are masked before they are stored, indexed or backed up."""

import json

import pytest
from django.db import connection

from curator import conversations, history_log, onboarding
from curator import writepath as wp
from curator.guard import rules as guard
from curator.models import (
    ConversationTurn,
    EventType,
    Fact,
    GuardAction,
    GuardHit,
    GuardRule,
    MemoryEvent,
    Owner,
    PendingItem,
)
from curator.undo import undo_blocker
from lifecycle import sessions
from lifecycle.extraction import extract
from memsite.core.tokens import create_token
from tests.api_helpers import Api

KEY = "sk-proj-pLIix6MEOLeMa61EqJomTEI1JEzO3joOj37HyVaQXekW9Lct"

pytestmark = pytest.mark.django_db


def every_stored_text() -> str:
    """Every row of every table, search and vector shadow tables included, as one string."""
    with connection.cursor() as cur:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = [row[0] for row in cur.fetchall()]
        dump = []
        for table in tables:
            try:
                cur.execute(f'SELECT * FROM "{table}"')
            except Exception:  # a virtual table that cannot be read whole
                continue
            dump += [
                " ".join(
                    v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row
                )
                for row in cur.fetchall()
            ]
    return "\n".join(dump)


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    """Run what a call queues after its commit (indexing, extraction, the JSONL backup)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def rule(**values):
    return guard.create_rule({"name": "health", **values})


# -- secrets, on by default --------------------------------------------------------------------


def test_it_blocks_an_openai_key_from_the_api_with_nothing_holding_it_in_clear(api, commit):
    with commit():
        response = api.post("/memories", {"content": f"my OpenAI key is {KEY}", "confidence": 0.95})
    assert response.status_code == 200
    body = response.json()
    assert body["outcome"] == "blocked" and body["fact"] is None and body["pending"] is None
    assert body["rule"] == str(guard.DETECTOR_NAMES["api_key"])
    assert not Fact.objects.exists() and not PendingItem.objects.exists()
    event = MemoryEvent.objects.get(event_type=EventType.BLOCK)
    assert event.payload["rule"] == body["rule"]
    assert event.payload["excerpt"] == "my OpenAI key is ████"
    hit = GuardHit.objects.get()
    assert hit.action == GuardAction.BLOCKED and hit.agent_id is not None
    # not in any fact, pending item, event, index row (search_fts, SearchDoc) or log
    assert "pLIix6MEOLeMa61EqJom" not in every_stored_text()


def test_a_retry_of_a_blocked_memory_replays_blocked(api):
    body = {"content": f"key {KEY}", "operation_id": "op-1"}
    first = api.post("/memories", body)
    again = api.post("/memories", body)
    assert first.json()["outcome"] == again.json()["outcome"] == "blocked"
    assert again.json()["replayed"] is True
    assert MemoryEvent.objects.filter(event_type=EventType.BLOCK).count() == 1


def test_a_password_in_a_turn_is_masked_before_it_is_stored(api, commit):
    with commit():
        response = api.post(
            "/turns",
            {"session_id": "s", "turn_index": 0, "role": "user", "content": "我的密码是 abc123456"},
        )
    assert response.status_code == 201
    turn = ConversationTurn.objects.get()
    assert turn.content == "我的密码是 ████"
    assert "abc123456" not in every_stored_text()
    backup = history_log.log_dir() / history_log.file_name("s")
    assert "abc123456" not in backup.read_text() and "████" in backup.read_text()
    hit = GuardHit.objects.get(action=GuardAction.REDACTED)
    assert hit.turn_id == turn.pk


def test_a_retried_turn_with_a_secret_is_still_the_same_turn(api):
    turn = {"session_id": "s", "turn_index": 0, "role": "user", "content": f"use {KEY}"}
    first = api.post("/turns", turn)
    again = api.post("/turns", turn)
    assert first.status_code == 201 and again.status_code == 200
    assert GuardHit.objects.count() == 1


def test_secrets_in_tool_calls_are_masked_too():
    calls = [{"id": "c1", "function": {"name": "shell", "arguments": f"export KEY={KEY}"}}]
    conversations.record_turn("s", 0, "assistant", "running it", tool_calls=calls)
    stored = ConversationTurn.objects.get()
    assert stored.tool_calls[0]["function"]["arguments"] == "export KEY=████"


# -- the person's own rules --------------------------------------------------------------------


def test_the_health_rule_masks_a_turn_which_search_then_cannot_find(api, commit):
    created = api.post(
        "/rules", {"name": "health / 健康", "words": ["health", "健康"], "redact_turns": True}
    )
    assert created.status_code == 201
    with commit():
        api.post(
            "/turns",
            {
                "session_id": "s",
                "turn_index": 0,
                "role": "user",
                "content": "我最近在看心理医生，健康状况不好",
            },
        )
    turn = ConversationTurn.objects.get()
    assert turn.content == "我最近在看心理医生，████状况不好"
    found = api.post("/search", {"query": "健康", "kinds": ["turn"], "mode": "keyword"}).json()
    assert found["results"] == []
    assert api.get("/traces", {"q": "健康"}).json()["items"] == []
    assert "健康状况" not in every_stored_text().replace("health / 健康", "")
    # the rest of the turn is still found
    found = api.post("/search", {"query": "心理医生", "kinds": ["turn"], "mode": "keyword"})
    assert [hit["kind"] for hit in found.json()["results"]] == ["turn"]


def test_a_word_rule_blocks_matching_memories_whatever_their_source():
    rule(words=["health", "健康"])
    result = wp.propose(wp.Candidate(content="Li's health is poor lately"), actor="agent")
    assert result.outcome == wp.BLOCKED
    result = wp.propose(
        wp.Candidate(content="最近健康不太好", confidence=0.7, source="consolidation"), actor="job"
    )
    assert result.outcome == wp.BLOCKED  # would have gone to the review queue
    assert wp.propose(wp.Candidate(content="Li likes tea"), actor="agent").outcome == wp.WRITTEN
    assert not PendingItem.objects.exists()
    sources = set(GuardHit.objects.values_list("source", flat=True))
    assert sources == {"api", "consolidation"}


def test_english_words_match_whole_words_and_their_plurals():
    rule(words=["my ex"])
    assert wp.propose(wp.Candidate(content="My  ex called"), actor="agent").outcome == wp.BLOCKED
    assert wp.propose(wp.Candidate(content="my example"), actor="agent").outcome == wp.WRITTEN


def test_a_regex_rule_blocks_what_it_matches():
    guard.create_rule({"name": "project codes", "pattern": r"\bPRJ-\d{4}\b"})
    assert (
        wp.propose(wp.Candidate(content="working on PRJ-1234"), actor="agent").outcome == "blocked"
    )
    assert wp.propose(wp.Candidate(content="working on PRJ-12"), actor="agent").outcome == "written"


def test_a_fact_type_and_scope_rule_blocks_only_those():
    guard.create_rule({"name": "no identity", "fact_types": ["identity"], "scopes": ["user"]})
    blocked = wp.propose(wp.Candidate(content="I am Li", type="identity"), actor="agent")
    kept = wp.propose(
        wp.Candidate(content="I am Li", type="identity", scope="project"), actor="agent"
    )
    assert (blocked.outcome, kept.outcome) == ("blocked", "written")
    assert blocked.event.payload["excerpt"] == ""


def test_a_rule_limited_to_an_agent_blocks_only_that_agent(client):
    one, raw_one = create_token("one")
    _two, raw_two = create_token("two")
    rule(words=["health"], agents=[one.pk])
    first = Api(client, raw_one).post("/memories", {"content": "health is fine"})
    second = Api(client, raw_two).post("/memories", {"content": "health is fine"})
    assert first.json()["outcome"] == "blocked" and second.json()["outcome"] == "written"
    assert GuardHit.objects.get().agent_id == one.pk


def test_extraction_from_an_agents_turn_counts_as_that_agent(client, commit):
    one, raw = create_token("one")
    rule(words=["tea"], agents=[one.pk])  # blocks, does not redact
    with commit():
        Api(client, raw).post(
            "/turns",
            {"session_id": "s", "turn_index": 0, "role": "user", "content": "I prefer green tea"},
        )
    turn = ConversationTurn.objects.get()
    assert turn.content == "I prefer green tea" and turn.extracted
    hit = GuardHit.objects.get()
    assert (hit.source, hit.agent_id) == ("rules", one.pk)
    assert not Fact.objects.exists()


def test_extraction_is_blocked_by_a_rule_that_does_not_redact():
    rule(words=["健康"])
    conversations.record_turn("s", 0, "user", "我喜欢健康的饮食")
    extract.run_turn(ConversationTurn.objects.get().pk)
    assert not Fact.objects.exists() and not PendingItem.objects.exists()
    assert GuardHit.objects.get().source == "rules"


def test_onboarding_with_an_answer_a_rule_blocks_writes_nothing(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    rule(words=["后端"])
    answers = {
        "assistant_name": "十一",
        "positioning": "工程搭档",
        "address": "小李",
        "background": "杭州的后端工程师",
    }
    result = onboarding.submit(answers)
    assert not result.ok and result.code == "not_written"
    assert "blocked" in result.errors["__all__"]
    assert not Fact.objects.exists() and not Owner.default().identity_confirmed


def test_personal_data_goes_to_review_by_default_and_a_switched_off_detector_lets_it_through():
    email = GuardRule.objects.get(detector="email") if guard.all_rules() else None
    assert email is not None and email.enabled and email.action == "review"
    result = wp.propose(wp.Candidate(content="mail li@example.com"), actor="agent")
    assert result.outcome == "pending" and result.pending.reason == "personal_data"
    assert result.pending.candidate["guardrail"]["kind"] == "personal"
    assert not Fact.objects.filter(content__contains="li@example.com").exists()
    guard.update_rule(email, {"action": "block"})
    assert (
        wp.propose(wp.Candidate(content="mail lei@example.com"), actor="agent").outcome == "blocked"
    )
    guard.update_rule(email, {"enabled": False})
    assert (
        wp.propose(wp.Candidate(content="mail han@example.com"), actor="agent").outcome == "written"
    )
    key = GuardRule.objects.get(detector="api_key")
    guard.update_rule(key, {"enabled": False})
    assert wp.propose(wp.Candidate(content=f"key {KEY}"), actor="agent").outcome == "written"


def test_the_person_writing_their_own_phone_number_is_not_sent_to_review():
    result = wp.propose(wp.Candidate(content="我的手机号是13812345678"), actor="person")
    assert result.outcome == "written"


def test_a_secret_beside_personal_data_is_blocked_not_reviewed():
    result = wp.propose(wp.Candidate(content=f"mail li@example.com with key {KEY}"), actor="agent")
    assert result.outcome == "blocked"
    assert not PendingItem.objects.exists()


def test_confirming_a_personal_data_item_writes_it():
    item = wp.propose(wp.Candidate(content="李雷的电话是13812345678"), actor="agent").pending
    assert item is not None and item.reason == "personal_data"
    result = wp.confirm_pending(item.pk)
    assert result.outcome == "written" and "13812345678" in result.fact.content


def test_a_blocked_write_keeps_no_unrecognised_secret_beside_the_one_it_matched(
    api, commit, caplog
):
    """Issue 29: the AWS key id was masked but the secret access key after it stayed in the
    event and the Blocked log in clear."""
    aws = "My AWS key is AKIAIOSFODNN7EXAMPLE and the secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz"
    with commit():
        body = {"content": aws + " (staging)", "operation_id": "aws-1"}
        response = api.post("/memories", body)
    assert response.json()["outcome"] == "blocked"
    event = MemoryEvent.objects.get(event_type=EventType.BLOCK)
    assert event.payload["kind"] == "secret" and event.payload["length"] >= 16
    stored = every_stored_text() + caplog.text + response.content.decode()
    assert "AKIAIOSFODNN7EXAMPLE" not in stored
    assert "wJalrXUtnFEMI" not in stored and "bPxRfiCYzz" not in stored
    assert "staging" in GuardHit.objects.get().excerpt  # the words around are kept


def test_an_excerpt_masks_long_tokens_no_detector_knows_and_keeps_words():
    text = "AKIAIOSFODNN7EXAMPLE, and for staging use Zq8rT2vLm9Xy or the internationalisation one"
    assert not guard.active()[0].spans("use Zq8rT2vLm9Xy or")  # no detector knows it
    result = wp.propose(wp.Candidate(content=text), actor="agent")
    excerpt = result.event.payload["excerpt"]
    assert "Zq8rT2vLm9Xy" not in excerpt and "AKIAIOSFODNN7EXAMPLE" not in excerpt
    assert "staging" in excerpt and "CA12" not in excerpt
    # short codes, times, dates and Chinese stay readable
    kept = "flight CA1234 at 10:30, 杭州 2026-11-27"
    assert guard.mask_tokens(kept) == kept
    assert guard.mask_tokens("token k3Yx9QpL2z") == "token ████"


def test_a_blocked_slack_webhook_leaves_no_url_behind():
    hook = "https://hooks.slack.com/services/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"
    result = wp.propose(wp.Candidate(content=f"post deploy alerts to {hook}"), actor="agent")
    assert result.outcome == "blocked"
    assert "q8Wc0zLk3Vd9RrT2yPa7sNbX" not in every_stored_text()


def test_an_edit_that_adds_a_secret_is_refused_and_logged():
    fact = wp.propose(wp.Candidate(content="my key is in the vault"), actor="agent").fact
    with pytest.raises(wp.Blocked):
        wp.edit_fact(fact.pk, {"content": f"my key is {KEY}"}, actor="person")
    fact.refresh_from_db()
    assert fact.content == "my key is in the vault"
    assert MemoryEvent.objects.filter(event_type=EventType.BLOCK, fact=fact).exists()


def test_confirming_an_item_queued_before_the_rule_is_blocked():
    item = wp.propose(wp.Candidate(content="最近健康不太好", confidence=0.7), actor="agent").pending
    rule(words=["健康"])
    result = wp.confirm_pending(item.pk)
    assert result.outcome == wp.BLOCKED and not Fact.objects.exists()
    item.refresh_from_db()
    assert item.status == "pending"


def test_block_events_cannot_be_undone():
    rule(words=["健康"])
    event = wp.propose(wp.Candidate(content="健康"), actor="agent").event
    assert undo_blocker(event)


# -- rules themselves --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, field",
    [
        ({"name": "x"}, "words"),
        ({"name": "x", "pattern": "(unclosed"}, "pattern"),
        ({"name": "x", "pattern": "a*"}, "pattern"),
        ({"name": "", "words": ["a"]}, "name"),
        ({"name": "x", "words": ["a"], "fact_types": ["feelings"]}, "fact_types"),
        ({"name": "x", "words": ["a"], "agents": [999]}, "agents"),
    ],
)
def test_it_refuses_rules_that_cannot_work(values, field):
    with pytest.raises(guard.RuleError) as caught:
        guard.create_rule(values)
    assert caught.value.field == field


def test_a_detector_can_be_switched_but_not_changed_or_deleted():
    key = next(r for r in guard.all_rules() if r.detector == "api_key")
    with pytest.raises(guard.RuleError):
        guard.update_rule(key, {"words": ["x"]})
    with pytest.raises(guard.RuleError):
        guard.delete_rule(key)


def test_a_trial_masks_what_an_unsaved_rule_matches():
    matcher, spans = guard.trial({"words": ["health", "健康"]}, "Health: 健康状况不好")
    assert guard.mask("Health: 健康状况不好", spans) == "████: ████状况不好"
    _m, spans = guard.trial({"detector": "phone"}, "call 13812345678 now")
    assert guard.mask("call 13812345678 now", spans) == "call ████ now"


def test_the_excerpt_masks_other_secrets_next_to_the_match():
    rule(words=["health"])
    result = wp.propose(
        wp.Candidate(content=f"health notes, key {KEY}", confidence=0.95), actor="agent"
    )
    assert result.outcome == "blocked"
    assert KEY not in json.dumps(result.event.payload)


def test_a_turn_without_matches_is_stored_as_said():
    rule(words=["健康"], redact_turns=True)
    conversations.record_turn("a", 0, "user", "今天天气不错")
    assert ConversationTurn.objects.get().content == "今天天气不错"
    assert not GuardHit.objects.exists()
    assert Owner.default().guard_rules.filter(detector="").count() == 1


def test_an_episode_never_holds_what_a_rule_keeps_out():
    rule(words=["体检"])  # blocks memories, does not mask turns
    conversations.record_turn("s", 0, "user", "帮我整理体检报告")
    conversations.record_turn("s", 1, "assistant", "好的，体检报告整理好了")
    episode = sessions.end_session(conversations.session_for("s"))
    assert "体检" not in episode.summary + episode.goal + " ".join(episode.entities)


def test_an_episode_keeps_no_contact_details_the_person_has_not_reviewed():
    conversations.record_turn("p", 0, "user", "帮我把李雷的电话13812345678存一下")
    conversations.record_turn("p", 1, "assistant", "好的，已记下 13812345678")
    episode = sessions.end_session(conversations.session_for("p"))
    assert "13812345678" not in episode.summary + episode.goal + " ".join(episode.entities)
    assert ConversationTurn.objects.filter(content__contains="13812345678").count() == 2


def test_a_memory_drawn_from_a_masked_span_is_not_kept():
    result = wp.propose(wp.Candidate(content="The user's password is ████"), actor="job")
    assert result.outcome == wp.BLOCKED and result.event.payload["rule"] == guard.MASKED
