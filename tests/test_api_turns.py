"""POST /turns and POST /sessions/{id}/end: recording is retry-safe and never rewrites a turn."""

import threading

import pytest
from django.db import connection

from curator.models import ConversationTurn, Session
from memsite.core.tokens import create_token
from memsite.models import TokenScope
from tests.api_helpers import Api, assert_error

TURN = {
    "session_id": "chat-42",
    "turn_index": 0,
    "role": "user",
    "content": "我下周三要去杭州面试",
    "timestamp": "2026-03-01T09:30:00+08:00",
}


def test_it_records_a_turn_and_creates_its_session(api):
    response = api.post("/turns", TURN)
    assert response.status_code == 201
    body = response.json()
    assert body == {"id": body["id"], "session_id": "chat-42", "turn_index": 0}
    turn = ConversationTurn.objects.get(pk=body["id"])
    assert turn.session.external_id == "chat-42" and turn.content == TURN["content"]
    assert turn.timestamp.isoformat() == "2026-03-01T01:30:00+00:00"
    assert turn.token_estimate > 0


def test_the_same_turn_again_answers_200_with_the_same_id(api):
    first = api.post("/turns", TURN).json()
    again = api.post("/turns", TURN)
    assert again.status_code == 200 and again.json() == first
    assert ConversationTurn.objects.count() == 1


def test_other_content_under_the_same_key_is_a_409(api):
    api.post("/turns", TURN)
    body = assert_error(api.post("/turns", {**TURN, "content": "changed"}), 409, "turn_conflict")
    assert "chat-42" in body["detail"]
    assert ConversationTurn.objects.get().content == TURN["content"]


def test_it_keeps_tool_calls_and_results(api):
    calls = [{"id": "c1", "function": {"name": "grep", "arguments": {"q": "OOM"}}}]
    results = [{"tool_call_id": "c1", "output": "worker killed: 内存不足"}]
    body = {
        **TURN,
        "role": "assistant",
        "turn_index": 1,
        "tool_calls": calls,
        "tool_results": results,
    }
    turn_id = api.post("/turns", body).json()["id"]
    turn = ConversationTurn.objects.get(pk=turn_id)
    assert turn.tool_calls == calls and turn.tool_results == results
    assert api.post("/turns", body).status_code == 200  # JSON round trip compares equal


def test_a_timestamp_defaults_to_now(api):
    body = {k: v for k, v in TURN.items() if k != "timestamp"}
    assert api.post("/turns", body).status_code == 201
    assert api.post("/turns", body).status_code == 200  # a retry without a timestamp is the same


@pytest.mark.parametrize(
    "change",
    [
        {"role": "robot"},
        {"turn_index": -1},
        {"session_id": ""},
        {"session_id": "x" * 201},
        {"timestamp": "yesterday"},
        {"tool_calls": "not a list"},
        {"content": None},
    ],
)
def test_it_rejects_invalid_turns_with_422(api, change):
    assert_error(api.post("/turns", {**TURN, **change}), 422, "invalid")
    assert not ConversationTurn.objects.exists()


def test_a_turn_after_the_end_reopens_the_session(api):
    from django.utils import timezone

    api.post("/turns", TURN)
    Session.objects.update(ended_at=timezone.now())
    api.post("/turns", {**TURN, "turn_index": 1, "content": "还有一件事"})
    assert Session.objects.get().ended_at is None


def test_a_recorded_turn_is_indexed_and_queued_for_extraction(
    api, django_capture_on_commit_callbacks, monkeypatch
):
    from curator import signals
    from lifecycle import receivers

    queued, scheduled = [], []
    monkeypatch.setattr(receivers.tasks, "extract_turn", queued.append)
    monkeypatch.setattr(receivers.tasks, "index_item", lambda k, i: scheduled.append((k, i)))
    assert signals.turn_recorded.has_listeners() and signals.item_changed.has_listeners()
    with django_capture_on_commit_callbacks(execute=True):
        turn_id = api.post("/turns", TURN).json()["id"]
    assert queued == [turn_id] and scheduled == [("turn", turn_id)]
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/turns", TURN)  # a retry queues nothing new
    assert queued == [turn_id]


def _post_concurrently(bodies):
    _, raw = create_token("racer", TokenScope.READ_WRITE)
    barrier = threading.Barrier(len(bodies))
    results = [None] * len(bodies)

    def run(i, body):
        from django.test import Client

        client = Api(Client(), raw)
        barrier.wait()
        try:
            results[i] = client.post("/turns", body)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, b)) for i, b in enumerate(bodies)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_store_the_turn_once(fresh_limits):
    results = _post_concurrently([TURN] * 6)
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200] * 5 + [201]
    assert len({r.json()["id"] for r in results}) == 1
    assert ConversationTurn.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_different_content_under_one_key_stores_one(fresh_limits):
    bodies = [{**TURN, "content": f"version {i}"} for i in range(4)]
    statuses = sorted(r.status_code for r in _post_concurrently(bodies))
    assert statuses == [201, 409, 409, 409]
    assert ConversationTurn.objects.count() == 1


def test_ending_an_unknown_session_is_a_404(api):
    assert_error(api.post("/sessions/nope/end"), 404, "not_found")


def test_ending_a_session_queues_the_job_and_returns_its_id(api, monkeypatch):
    from lifecycle import tasks

    calls = []

    class Result:
        id = "job-123"

    monkeypatch.setattr(tasks, "end_session", lambda pk: calls.append(pk) or Result)
    api.post("/turns", TURN)
    response = api.post("/sessions/chat-42/end")
    assert response.status_code == 202 and response.json() == {"job_id": "job-123"}
    assert calls == [Session.objects.get().pk]


# --- session ids with "/" and other characters (issue 18, item 7) ------------------------

ODD_IDS = ["a/b", "telegram/chat/42/", "/lead", "a//b", "x/end", "a?b#c%d", "行 1\n行 2", "%2F"]


@pytest.mark.parametrize("session_id", ODD_IDS)
def test_every_recorded_session_id_can_be_ended(api, session_id):
    from urllib.parse import quote

    assert api.post("/turns", {**TURN, "session_id": session_id}).status_code == 201
    response = api.post(f"/sessions/{quote(session_id, safe='')}/end")
    assert response.status_code == 202, response.content
    assert Session.objects.get(external_id=session_id).ended_at is not None


def test_a_slash_in_a_session_id_may_also_be_sent_unencoded(api):
    api.post("/turns", {**TURN, "session_id": "team/alice"})
    assert api.post("/sessions/team/alice/end").status_code == 202
    assert_error(api.post("/sessions/team/bob/end"), 404, "not_found")


def test_the_schema_says_which_session_ids_are_allowed(api):
    schema = api.get("/openapi.json").json()
    end = schema["paths"]["/api/v1/sessions/{session_id}/end"]["post"]
    (param,) = [p for p in end["parameters"] if p["name"] == "session_id"]
    assert "`/` included" in param["description"] and "%2F" in param["description"]
    turn_in = schema["components"]["schemas"]["TurnIn"]["properties"]["session_id"]
    assert "`/` included" in turn_in["description"]
