"""The MCP server's tools through /mcp in this process (JSON-RPC over the Django test client):
the same write path, search and checks as the JSON API. tests/test_mcp_transports.py runs the
SDK's own client over stdio and HTTP against real processes."""

import json

import pytest

from curator import cards
from curator.models import ConversationTurn, Fact, PendingItem
from memsite.core import agents
from memsite.core.tokens import create_token
from memsite.models import TokenScope
from retrieval.models import RecallLog

TOOLS = {
    "remember",
    "recall",
    "get_context",
    "record_turn",
    "end_session",
    "list_memories",
    "get_profile",
    "forget",
}


class Mcp:
    """One agent speaking JSON-RPC to /mcp."""

    def __init__(self, client, raw: str | None):
        self.client, self.raw, self.ids = client, raw, 0

    def post(self, method: str, params: dict | None = None, headers=None):
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params or {}}
        auth = {"Authorization": f"Bearer {self.raw}"} if self.raw else {}
        return self.client.post(
            "/mcp",
            json.dumps(body),
            content_type="application/json",
            headers={"Accept": "application/json, text/event-stream", **auth, **(headers or {})},
        )

    def result(self, method: str, params: dict | None = None) -> dict:
        response = self.post(method, params)
        assert response.status_code == 200, response.content[:500]
        body = response.json()
        assert "error" not in body, body
        return body["result"]

    def call(self, tool: str, **arguments) -> dict:
        """The tool's structured answer; an error answer raises ToolFailed with its text."""
        result = self.result("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise ToolFailed(result["content"][0]["text"])
        return result["structuredContent"]


class ToolFailed(Exception):
    pass


@pytest.fixture
def mcp(client, db, fresh_limits):
    token, raw = create_token("desktop assistant", TokenScope.READ_WRITE)
    found = Mcp(client, raw)
    found.token = token
    return found


@pytest.fixture
def reader(client, db, fresh_limits):
    _token, raw = create_token("reader", TokenScope.READ)
    return Mcp(client, raw)


def test_it_lists_the_tools_with_descriptions_for_a_model(mcp):
    tools = mcp.result("tools/list")["tools"]
    assert {t["name"] for t in tools} == TOOLS
    for tool in tools:
        assert len(tool["description"]) > 60, tool["name"]
    remember = next(t for t in tools if t["name"] == "remember")
    assert {"content", "type", "scope", "confidence", "importance", "expires_at"} <= set(
        remember["inputSchema"]["properties"]
    )


def test_remember_then_recall_finds_it(mcp, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        stored = mcp.call("remember", content="住在杭州西湖区", confidence=0.95)
    assert stored["outcome"] == "written" and "memory #" in stored["message"]
    fact = Fact.objects.get()
    assert fact.agent == mcp.token and fact.source == "api"
    found = mcp.call("recall", query="杭州")["results"]
    assert found[0]["kind"] == "fact" and found[0]["id"] == fact.pk
    assert found[0]["reason"] and found[0]["score"] > 0
    log = RecallLog.objects.get()
    assert log.agent == mcp.token and log.caller == "mcp"


def test_an_unsure_memory_goes_to_review_and_says_so(mcp):
    answer = mcp.call("remember", content="可能养了一只猫", confidence=0.7)
    assert answer["outcome"] == "pending" and "review" in answer["message"]
    assert PendingItem.objects.get().agent == mcp.token
    assert not Fact.objects.exists()


def test_remember_with_an_expiry_keeps_it(mcp):
    answer = mcp.call(
        "remember", content="这周在上海出差", confidence=0.95, expires_at="2099-01-01T00:00:00Z"
    )
    assert answer["fact"]["expires_at"].startswith("2099-01-01")


def test_a_read_only_tokens_remember_is_refused(reader):
    with pytest.raises(ToolFailed, match="read_only_token"):
        reader.call("remember", content="喜欢乌龙茶", confidence=0.95)
    with pytest.raises(ToolFailed, match="read_only_token"):
        reader.call("record_turn", session_id="s", turn_index=0, role="user", content="hi")
    assert not Fact.objects.exists() and not ConversationTurn.objects.exists()
    assert reader.call("list_memories")["count"] == 0  # reading is fine


def test_a_paused_agents_remember_stores_nothing(mcp):
    agents.set_paused(mcp.token, writes=True)
    with pytest.raises(ToolFailed, match="agent_paused"):
        mcp.call("remember", content="喜欢乌龙茶", confidence=0.95)
    with pytest.raises(ToolFailed, match="agent_paused"):
        mcp.call("record_turn", session_id="s", turn_index=0, role="user", content="hi")
    assert not Fact.objects.exists() and not ConversationTurn.objects.exists()
    agents.set_paused(mcp.token, writes=False)
    assert mcp.call("remember", content="喜欢乌龙茶", confidence=0.95)["outcome"] == "written"


def test_the_global_pause_refuses_mcp_writes_too(mcp):
    agents.set_writes_paused(True)
    with pytest.raises(ToolFailed, match="memory_paused"):
        mcp.call("remember", content="喜欢乌龙茶", confidence=0.95)
    assert not Fact.objects.exists()


def test_a_limited_agent_gets_no_out_of_scope_results(
    client, mcp, fresh_limits, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        mcp.call("remember", content="住在杭州西湖区", confidence=0.95, scope="user")
        mcp.call("remember", content="orchard 在杭州部署", confidence=0.95, scope="project")
    token, raw = create_token("coding agent", TokenScope.READ_WRITE)
    agents.set_scopes(token, read=["project"], write=["project"])
    coder = Mcp(client, raw)
    found = coder.call("recall", query="杭州")["results"]
    assert [r["content"] for r in found] == ["orchard 在杭州部署"]
    listed = coder.call("list_memories")["items"]
    assert [f["scope"] for f in listed] == ["project"]
    assert "西湖区" not in coder.call("get_context", message="杭州", session_id="x")["text"]
    with pytest.raises(ToolFailed, match="scope_not_allowed"):
        coder.call("remember", content="喜欢乌龙茶", confidence=0.95, scope="user")


def test_forget_files_a_request_and_deletes_nothing(mcp):
    fact_id = mcp.call("remember", content="住在杭州西湖区", confidence=0.95)["fact"]["id"]
    answer = mcp.call("forget", memory_id=fact_id, reason="搬去上海了")
    assert answer["outcome"] == "pending" and "Nothing was deleted" in answer["message"]
    assert Fact.objects.get(pk=fact_id).status == "active"
    assert PendingItem.objects.get().reason == "deletion"


def test_turns_context_and_session_end(mcp, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first = mcp.call(
            "record_turn", session_id="chat-9", turn_index=0, role="user", content="我在学 Rust"
        )
    assert first["created"] is True
    again = mcp.call(
        "record_turn", session_id="chat-9", turn_index=0, role="user", content="我在学 Rust"
    )
    assert again["created"] is False and again["id"] == first["id"]
    context = mcp.call("get_context", message="继续", session_id="chat-9")
    assert "我在学 Rust" in context["text"]
    assert [s["name"] for s in context["sections"]] == ["cards", "turns", "evidence"]
    assert mcp.call("end_session", session_id="chat-9")["queued"] is True
    with pytest.raises(ToolFailed, match="not_found"):
        mcp.call("end_session", session_id="never-seen")


def test_invalid_arguments_come_back_as_a_readable_tool_error(mcp):
    result = mcp.result(
        "tools/call", {"name": "remember", "arguments": {"content": "x", "confidence": 3}}
    )
    assert result["isError"] and "confidence" in result["content"][0]["text"]


def test_the_cards_are_resources(mcp, client, fresh_limits):
    cards.save("user", "# 用户\n- 住在杭州西湖区", "person")
    uris = {r["uri"] for r in mcp.result("resources/list")["resources"]}
    assert {"memory://cards/User.md", "memory://cards/MEMORY.md"} <= uris
    read = mcp.result("resources/read", {"uri": "memory://cards/User.md"})
    assert "西湖区" in read["contents"][0]["text"]
    token, raw = create_token("coding agent", TokenScope.READ)
    agents.set_scopes(token, read=["project"], write=[])
    refused = Mcp(client, raw).post("resources/read", {"uri": "memory://cards/User.md"}).json()
    assert "error" in refused and "may not read" in refused["error"]["message"]


def test_the_profile_tool(mcp):
    cards.save("persona", "# 助手\n- 名字：十一", "person")
    assert "十一" in mcp.call("get_profile")["persona_card"]


# -- the HTTP endpoint itself --------------------------------------------------------------------


def test_it_needs_a_bearer_token(client, db):
    response = Mcp(client, None).post("tools/list")
    assert response.status_code == 401 and response.json()["code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == "Bearer"
    bad = Mcp(client, "mc_not-a-token").post("tools/list")
    assert bad.status_code == 401 and bad.json()["code"] == "invalid_token"


def test_a_revoked_token_is_refused(mcp):
    mcp.token.revoked_at = mcp.token.created_at
    mcp.token.save()
    assert mcp.post("tools/list").status_code == 401


def test_it_shares_the_api_rate_limit(mcp, settings):
    settings.API_RATE_LIMIT = 2
    assert mcp.post("tools/list").status_code == 200
    assert mcp.post("tools/list").status_code == 200
    limited = mcp.post("tools/list")
    assert limited.status_code == 429 and limited.json()["code"] == "rate_limited"
    assert int(limited["Retry-After"]) >= 1


def test_a_stateless_endpoint_refuses_get_and_delete(mcp):
    for method in ("get", "delete"):
        response = getattr(mcp.client, method)("/mcp", headers={"Authorization": "x"})
        assert response.status_code == 405 and response["Allow"] == "POST"


def test_a_body_over_the_api_limit_is_refused_before_it_is_read(mcp, settings):
    settings.API_MAX_BODY_BYTES = 200
    response = mcp.post("tools/call", {"name": "remember", "arguments": {"content": "x" * 500}})
    assert response.status_code == 413 and response.json()["code"] == "too_large"
    assert not Fact.objects.exists()
