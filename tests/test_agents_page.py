"""The Agents page: create (the token shown once, in the connection snippets), list with
figures, pause, scope limits, revoke after a confirmation; the global pause on Settings; the
home page's pointers; the `agents` command. All without JavaScript."""

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from curator.models import PendingItem
from memsite.core import agents
from memsite.core.tokens import create_token, find_token
from memsite.models import ApiToken, TokenScope
from tests.api_helpers import Api, assert_error

TURN = {"session_id": "chat-1", "turn_index": 0, "role": "user", "content": "今天天气不错"}


def _secret(html: str) -> str:
    return re.search(r'id="new-token-secret"[^>]*value="([^"]+)"', html).group(1)


def _snippet(html: str, key: str) -> str:
    found = re.search(rf'id="snippet-{key}"[^>]*>(.*?)</textarea>', html, re.S).group(1)
    return found.replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&")


@pytest.fixture
def agent_api(client, db, fresh_limits):
    token, raw = create_token("chat assistant", TokenScope.READ_WRITE)
    return token, Api(client, raw)


# -- create and connect --------------------------------------------------------------------------


def test_it_creates_an_agent_and_shows_its_token_once_in_the_snippets(client_in):
    response = client_in.post(
        "/agents/",
        {"name": "coding agent", "description": "Cursor", "scope": "read-write", "expires": ""},
    )
    html = response.content.decode()
    secret = _secret(html)
    token = find_token(secret)
    assert token.name == "coding agent" and token.description == "Cursor"
    stdio = json.loads(_snippet(html, "mcp-stdio"))["mcpServers"]["memory-curator"]
    assert stdio["env"]["MEMSITE_API_TOKEN"] == secret and stdio["args"][-1] == "mcp"
    http = json.loads(_snippet(html, "mcp-http"))["mcpServers"]["memory-curator"]
    assert http["url"] == "http://testserver/mcp"
    assert http["headers"]["Authorization"] == f"Bearer {secret}"
    assert f"Bearer {secret}" in _snippet(html, "curl")
    assert f'token="{secret}"' in _snippet(html, "python")
    assert secret not in client_in.get("/agents/").content.decode()  # shown once


def test_a_created_token_works_on_the_api(client_in):
    html = client_in.post("/agents/", {"name": "a", "scope": "read"}).content.decode()
    response = client_in.get("/api/v1/traces", headers={"Authorization": f"Bearer {_secret(html)}"})
    assert response.status_code == 200


def test_scope_limits_can_be_set_at_creation(client_in):
    client_in.post(
        "/agents/", {"name": "coder", "scope": "read-write", "write_scopes": ["project"]}
    )
    token = ApiToken.objects.get(name="coder")
    assert token.write_scopes == ["project"] and token.read_scopes == []


def test_an_agent_without_a_name_shows_the_error_in_place(client_in):
    response = client_in.post("/agents/", {"name": "  ", "scope": "read"})
    assert response.status_code == 200 and 'class="error"' in response.content.decode()
    assert not ApiToken.objects.exists()


def test_the_old_tokens_address_leads_to_the_agents_page(client_in):
    response = client_in.get("/settings/tokens/")
    assert response.status_code == 301 and response["Location"] == "/agents/"


def test_the_agents_pages_need_a_login(client, db):
    for path in ("/agents/", "/agents/1/"):
        response = client.get(path)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_settings_link_to_the_agents_page_and_the_nav_has_it(client_in):
    html = client_in.get("/settings/").content.decode()
    assert 'href="/agents/"' in html and 'id="memory-pause"' in html


# -- the list and the detail ---------------------------------------------------------------------


def test_the_page_counts_each_agents_writes_and_reads(client_in, agent_api):
    token, api = agent_api
    api.post("/turns", TURN)
    api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95})
    api.post("/memories", {"content": "可能养猫", "confidence": 0.7})
    api.post("/search", {"query": "乌龙茶"})
    html = client_in.get("/agents/").content.decode()
    row = re.search(r'<tr data-agent="chat assistant">(.*?)</tr>', html, re.S).group(1)
    assert re.search(r"data-writes>3<", row)  # a turn, a written fact, a pending item
    assert re.search(r"data-reads>1<", row)
    assert "1 to review, 0 confirmed" in row


def test_the_agent_page_lists_its_recalls(client_in, agent_api, django_capture_on_commit_callbacks):
    token, api = agent_api
    with django_capture_on_commit_callbacks(execute=True):
        fact = api.post("/memories", {"content": "住在杭州西湖区", "confidence": 0.95}).json()
    api.post("/search", {"query": "杭州在哪"})
    html = client_in.get(f"/agents/{token.pk}/").content.decode()
    recalls = html[html.index('id="recalls"') :]
    assert "杭州在哪" in recalls and "住在杭州西湖区" in recalls  # the query and what came back
    assert f'href="/facts/{fact["fact"]["id"]}/"' in recalls


def test_the_agent_page_says_how_much_of_its_proposals_was_confirmed(client_in, agent_api, api):
    token, agent = agent_api
    first = agent.post("/memories", {"content": "可能养猫", "confidence": 0.7}).json()
    agent.post("/memories", {"content": "可能喜欢爬山", "confidence": 0.7})
    api.post(f"/pending/{first['pending']['id']}/confirm")
    html = client_in.get(f"/agents/{token.pk}/").content.decode()
    assert "2 to review, 1 confirmed (100%)" in html
    assert "可能喜欢爬山" in html


def test_the_review_desk_filters_by_agent(client_in, agent_api, api):
    token, agent = agent_api
    agent.post("/memories", {"content": "可能养猫", "confidence": 0.7})
    api.post("/memories", {"content": "可能喜欢爬山", "confidence": 0.7})
    html = client_in.get(f"/review/?agent={token.pk}").content.decode()
    assert "可能养猫" in html and "可能喜欢爬山" not in html
    assert f'href="/agents/{token.pk}/"' in html  # the item shows its agent


def test_the_activity_log_and_the_fact_page_show_the_agent(client_in, agent_api):
    token, api = agent_api
    fact = api.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95}).json()
    activity = client_in.get(f"/activity/?agent={token.pk}").content.decode()
    assert "chat assistant" in activity and "喜欢乌龙茶" in activity
    detail = client_in.get(f"/facts/{fact['fact']['id']}/").content.decode()
    assert f'href="/agents/{token.pk}/">chat assistant</a>' in detail


# -- pause, scopes, revoke -----------------------------------------------------------------------


def test_the_pause_switch_refuses_the_agents_writes_until_resumed(client_in, agent_api):
    token, api = agent_api
    response = client_in.post(f"/agents/{token.pk}/pause/", {"action": "pause"})
    assert response.status_code == 302
    assert_error(api.post("/turns", TURN), 423, "agent_paused")
    assert api.get("/memories").status_code == 200
    client_in.post(f"/agents/{token.pk}/pause/", {"action": "pause_reads"})
    assert_error(api.get("/memories"), 423, "agent_paused")
    html = client_in.get(f"/agents/{token.pk}/").content.decode()
    assert 'data-state="reads_paused"' in html
    client_in.post(f"/agents/{token.pk}/pause/", {"action": "resume"})
    assert api.post("/turns", TURN).status_code == 201


def test_an_unknown_pause_action_changes_nothing(client_in, agent_api):
    token, _ = agent_api
    client_in.post(f"/agents/{token.pk}/pause/", {"action": "explode"})
    token.refresh_from_db()
    assert not token.writes_paused and not token.reads_paused


def test_the_scope_form_limits_what_the_agent_may_write(client_in, agent_api):
    token, api = agent_api
    client_in.post(f"/agents/{token.pk}/scopes/", {"write_scopes": ["project"]})
    token.refresh_from_db()
    assert token.write_scopes == ["project"]
    assert_error(api.post("/memories", {"content": "喜欢乌龙茶"}), 403, "scope_not_allowed")
    assert api.post("/memories", {"content": "用 pytest", "scope": "project"}).status_code == 201


def test_revoking_asks_first_and_then_refuses_the_token(client_in, agent_api):
    token, api = agent_api
    confirm = client_in.get(f"/agents/{token.pk}/revoke/")
    assert confirm.status_code == 200 and 'method="post"' in confirm.content.decode()
    token.refresh_from_db()
    assert token.revoked_at is None  # looking at the question changes nothing
    response = client_in.post(f"/agents/{token.pk}/revoke/")
    assert response.status_code == 302 and response["Location"] == "/agents/"
    assert_error(api.get("/memories"), 401, "invalid_token")


# -- the global switch and the home page ---------------------------------------------------------


def test_pausing_all_memory_writes_from_settings(client_in, agent_api):
    _token, api = agent_api
    client_in.post("/settings/memory-pause/", {"paused": "1"})
    assert agents.writes_paused()
    assert_error(api.post("/turns", TURN), 423, "memory_paused")
    assert "data-writes-paused" in client_in.get("/").content.decode()
    client_in.post("/settings/memory-pause/", {"paused": "0"})
    assert not agents.writes_paused()
    assert "data-writes-paused" not in client_in.get("/").content.decode()


def test_getting_started_points_to_the_agents_page_until_an_agent_has_called(client_in, agent_api):
    _token, api = agent_api
    page = client_in.get("/").content.decode()
    assert 'data-step="connect" data-done="false"' in page and 'href="/agents/"' in page
    api.get("/memories")
    assert 'data-step="connect" data-done="true"' in client_in.get("/").content.decode()


# -- the command ---------------------------------------------------------------------------------


def _run(*args) -> str:
    out = StringIO()
    call_command("agents", *args, stdout=out)
    return out.getvalue()


def test_the_agents_command_lists_pauses_and_resumes(agent_api):
    token, api = agent_api
    assert "chat assistant" in _run("list")
    assert "Paused 'chat assistant'" in _run("pause", "chat assistant")
    assert_error(api.post("/turns", TURN), 423, "agent_paused")
    _run("pause", "chat assistant", "--reads")
    assert "paused-all" in _run("list")
    assert_error(api.get("/memories"), 423, "agent_paused")
    _run("resume", "chat assistant")
    assert api.post("/turns", TURN).status_code == 201


def test_the_agents_command_names_an_unknown_agent(db):
    with pytest.raises(CommandError, match="No agent 'ghost'"):
        _run("pause", "ghost")
    assert not PendingItem.objects.exists()
