"""Agents on the JSON API: every write records its agent, pauses refuse with 423 and store
nothing, scope limits refuse writes (403) and hide memories from reads, and the recall log
says which agent got which items."""

import pytest

from curator import cards
from curator.models import ConversationTurn, EventType, Fact, MemoryEvent, PendingItem, Session
from memsite.core import agents
from memsite.core.tokens import create_token
from memsite.models import ApiToken, TokenScope
from retrieval.models import RecallLog
from tests.api_helpers import Api, assert_error

TURN = {"session_id": "chat-1", "turn_index": 0, "role": "user", "content": "今天天气不错"}


@pytest.fixture
def agent(client, db, fresh_limits):
    token, raw = create_token("chat assistant", TokenScope.READ_WRITE)
    return token, Api(client, raw)


def _limited(client, read=(), write=()):
    token, raw = create_token("coding agent", TokenScope.READ_WRITE)
    agents.set_scopes(token, read=read, write=write)
    return token, Api(client, raw)


# -- attribution ---------------------------------------------------------------------------------


def test_every_write_records_the_agent_that_made_it(agent, django_capture_on_commit_callbacks):
    token, api = agent
    assert api.post("/turns", TURN).status_code == 201
    written = api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95}).json()
    pending = api.post("/memories", {"content": "可能养猫", "confidence": 0.7}).json()
    turn = ConversationTurn.objects.get()
    assert turn.agent == token and Session.objects.get().agent == token
    assert Fact.objects.get(pk=written["fact"]["id"]).agent == token
    assert PendingItem.objects.get(pk=pending["pending"]["id"]).agent == token
    events = MemoryEvent.objects.filter(event_type__in=[EventType.WRITE, EventType.PENDING])
    assert {e.agent_id for e in events} == {token.pk}


def test_a_confirmed_proposal_stays_the_proposing_agents(agent, api):
    token, agent_api = agent
    item = agent_api.post("/memories", {"content": "可能养猫", "confidence": 0.7}).json()
    confirmed = api.post(f"/pending/{item['pending']['id']}/confirm").json()
    assert Fact.objects.get(pk=confirmed["fact"]["id"]).agent == token


def test_the_recall_log_records_which_agent_received_which_items(
    agent, django_capture_on_commit_callbacks
):
    token, api = agent
    with django_capture_on_commit_callbacks(execute=True):  # indexed once committed
        fact = api.post("/memories", {"content": "住在杭州西湖区", "confidence": 0.95}).json()
    api.post("/search", {"query": "杭州"})
    log = RecallLog.objects.get(agent=token)
    assert log.query == "杭州"
    assert {"kind": "fact", "id": fact["fact"]["id"]}.items() <= log.results[0].items()


# -- pauses --------------------------------------------------------------------------------------


def test_a_paused_agents_turn_is_refused_with_423_and_nothing_is_stored(agent):
    token, api = agent
    agents.set_paused(token, writes=True)
    body = assert_error(api.post("/turns", TURN), 423, "agent_paused")
    assert "paused" in body["detail"]
    assert not ConversationTurn.objects.exists() and not Session.objects.exists()
    agents.set_paused(token, writes=False)
    assert api.post("/turns", TURN).status_code == 201


def test_a_paused_agent_may_still_read_until_its_reads_are_paused_too(agent):
    token, api = agent
    agents.set_paused(token, writes=True)
    assert_error(api.post("/memories", {"content": "x y z"}), 423, "agent_paused")
    assert api.get("/memories").status_code == 200
    assert api.post("/search", {"query": "x"}).status_code == 200
    agents.set_paused(token, writes=True, reads=True)
    assert_error(api.get("/memories"), 423, "agent_paused")
    assert_error(api.post("/context", {"query": "hi"}), 423, "agent_paused")
    assert not Fact.objects.exists()


def test_pausing_all_memory_writes_refuses_every_agent_with_memory_paused(agent, api):
    _token, agent_api = agent
    agents.set_writes_paused(True)
    assert_error(agent_api.post("/turns", TURN), 423, "memory_paused")
    assert_error(api.post("/memories", {"content": "喜欢乌龙茶"}), 423, "memory_paused")
    assert api.get("/memories").status_code == 200  # reading still works
    assert not ConversationTurn.objects.exists() and not Fact.objects.exists()
    agents.set_writes_paused(False)
    assert agent_api.post("/turns", TURN).status_code == 201


# -- scope limits --------------------------------------------------------------------------------


def test_an_out_of_scope_write_is_refused_with_403_and_nothing_is_stored(client, db, fresh_limits):
    _token, api = _limited(client, write=["project"])
    body = assert_error(
        api.post("/memories", {"content": "喜欢乌龙茶", "scope": "user"}), 403, "scope_not_allowed"
    )
    assert "user" in body["detail"]
    assert not Fact.objects.exists() and not MemoryEvent.objects.exists()
    ok = api.post("/memories", {"content": "orchard 用 pytest", "scope": "project"})
    assert ok.status_code == 201


def test_an_agent_cannot_move_a_memory_out_of_its_scopes(client, api, db):
    fact = api.post("/memories", {"content": "orchard 用 pytest", "scope": "project"}).json()
    _token, limited = _limited(client, write=["project"])
    patch = limited.patch(f"/memories/{fact['fact']['id']}", {"scope": "user"})
    assert_error(patch, 403, "scope_not_allowed")
    assert Fact.objects.get().scope == "project"


@pytest.fixture
def two_scopes(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        user = api.post("/memories", {"content": "住在杭州西湖区", "scope": "user"}).json()
        project = api.post(
            "/memories", {"content": "orchard 项目在杭州部署", "scope": "project"}
        ).json()
    return user["fact"]["id"], project["fact"]["id"]


def test_out_of_scope_memories_never_reach_a_limited_reader(client, two_scopes):
    user_fact, project_fact = two_scopes
    _token, api = _limited(client, read=["project"])
    listed = api.get("/memories").json()
    assert [f["id"] for f in listed["items"]] == [project_fact]
    assert_error(api.get(f"/memories/{user_fact}"), 404, "not_found")
    found = api.post("/search", {"query": "杭州"}).json()["results"]
    assert {(r["kind"], r["id"]) for r in found} == {("fact", project_fact)}
    context = api.post("/context", {"query": "杭州", "evidence": "always"}).json()
    assert "西湖区" not in context["text"]
    assert "orchard" in context["text"]


def test_a_limited_reader_sees_only_its_own_conversations(
    client, api, db, django_capture_on_commit_callbacks
):
    token, limited = _limited(client, read=["project"])
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/turns", {**TURN, "session_id": "private", "content": "我的秘密日记"})
        limited.post("/turns", {**TURN, "session_id": "work", "content": "部署日记"})
    traces = limited.get("/traces", {"q": "日记"}).json()["items"]
    assert [t["session_id"] for t in traces] == ["work"]
    hits = limited.post("/search", {"query": "日记", "kinds": ["turn"]}).json()["results"]
    assert {r["content"] for r in hits} == {"部署日记"}
    assert_error(limited.post("/sessions/private/end"), 404, "not_found")


def test_a_limited_agents_cards_leave_out_the_scopes_it_may_not_read(client, api, db):
    cards.save("persona", "# 助手\n- 名字：十一", "person")
    cards.save("user", "# 用户\n- 住在杭州西湖区", "person")
    assert "西湖区" in api.get("/profile").json()["user_card"]
    _token, limited = _limited(client, read=["project", "system"])
    profile = limited.get("/profile").json()
    assert "十一" in profile["persona_card"] and profile["user_card"] == ""
    context = limited.post("/context", {"query": "你好"}).json()
    assert "十一" in context["text"] and "西湖区" not in context["text"]


def test_extraction_from_a_limited_agents_turn_stays_within_its_scopes(
    client, db, fresh_limits, django_capture_on_commit_callbacks
):
    token, api = _limited(client, write=["project"])
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/turns", {**TURN, "content": "我叫李雷"})
    assert not Fact.objects.filter(scope="user").exists()
    drop = MemoryEvent.objects.get(event_type=EventType.DROP)
    assert drop.payload["reason"] == "scope_not_allowed"


# -- forget --------------------------------------------------------------------------------------


def test_forget_files_a_deletion_request_and_deletes_nothing(agent):
    token, api = agent
    fact = api.post("/memories", {"content": "住在杭州西湖区", "confidence": 0.95}).json()
    fact_id = fact["fact"]["id"]
    response = api.post(f"/memories/{fact_id}/forget", {"reason": "搬家了"})
    assert response.status_code == 201 and response.json()["outcome"] == "pending"
    assert Fact.objects.get(pk=fact_id).status == "active"
    item = PendingItem.objects.get(reason="deletion")
    assert item.conflicts_with_id == fact_id and item.agent == token


def test_a_read_only_token_cannot_forget(api, read_api):
    fact = api.post("/memories", {"content": "住在杭州西湖区", "confidence": 0.95}).json()
    response = read_api.post(f"/memories/{fact['fact']['id']}/forget")
    assert_error(response, 403, "read_only_token")
    assert not PendingItem.objects.exists()


def test_revoked_agents_stay_in_the_history(agent):
    token, api = agent
    api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95})
    token.delete()  # even a deleted token leaves its memories (the reference is cleared)
    assert Fact.objects.get().agent is None and ApiToken.objects.count() == 0


def test_a_limited_agent_sees_and_answers_only_pending_items_in_its_scopes(client, api, db):
    user = api.post("/memories", {"content": "可能养了猫", "confidence": 0.7, "scope": "user"})
    project = api.post(
        "/memories", {"content": "orchard 可能换框架", "confidence": 0.7, "scope": "project"}
    )
    _token, limited = _limited(client, read=["project"], write=["project"])
    listed = limited.get("/pending").json()["items"]
    assert [i["id"] for i in listed] == [project.json()["pending"]["id"]]
    hidden = user.json()["pending"]["id"]
    assert_error(limited.post(f"/pending/{hidden}/confirm"), 404, "not_found")
    assert PendingItem.objects.get(pk=hidden).status == "pending"
