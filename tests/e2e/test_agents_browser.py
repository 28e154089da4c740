"""The Agents page in a real browser, in English and Chinese: create an agent and see its
connection snippets, limit its scopes, pause it, read its recalls, revoke it; and without
JavaScript, where the snippets stay selectable text."""

import json
import urllib.error
import urllib.request

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from memsite.api.ratelimit import limiter
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LABELS = {
    "en": {
        "nav": "Agents",
        "create": "Create the agent and its token",
        "may_write_project": "May write",
        "project": "project",
        "pause": "Pause its writes",
        "paused": "writes paused",
        "resume": "Resume",
        "revoke_link": "Revoke…",
        "revoke": "Revoke",
        "revoked": "revoked",
        "copy": "Copy",
    },
    "zh-hans": {
        "nav": "智能体",
        "create": "创建智能体和它的令牌",
        "may_write_project": "可写入",
        "project": "项目",
        "pause": "暂停它的写入",
        "paused": "写入已暂停",
        "resume": "恢复",
        "revoke_link": "吊销…",
        "revoke": "吊销",
        "revoked": "已吊销",
        "copy": "复制",
    },
}


@pytest.fixture
def person():
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    limiter.reset()


def call(live_server, token, method, path, body=None):
    """(status, JSON) of an API call, as an agent makes it."""
    request = urllib.request.Request(
        f"{live_server.url}/api/v1{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@pytest.mark.parametrize("lang", ["en", "zh-hans"])
def test_a_person_connects_limits_pauses_and_revokes_an_agent(
    page, live_server, person, lang, screenshot_dir
):
    text = LABELS[lang]
    log_in(page, live_server)
    if lang != "en":
        switch_language(page, lang)
    page.locator("nav.nav details.nav-more summary").click()  # Agents sits in the More menu
    page.locator("nav.nav a", has_text=text["nav"]).click()
    expect(page.locator("h1")).to_have_text(text["nav"])

    page.fill("#id_name", "coding agent")
    page.locator("#id_write_scopes input[value=project]").check()
    page.get_by_role("button", name=text["create"]).click()

    connect = page.locator("#connect")
    expect(connect).to_be_visible()
    token = page.locator("#new-token-secret").input_value()
    assert token.startswith("mc_")
    for key in ("mcp-stdio", "mcp-http", "curl", "python"):
        expect(page.locator(f"#snippet-{key}")).to_contain_text(token)
    copy = connect.locator("button.copy[data-copy=snippet-mcp-http]")
    expect(copy).to_have_text(text["copy"])  # shown because JavaScript runs
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    copy.click()
    expect(copy).to_have_text("✓")
    assert token in page.evaluate("navigator.clipboard.readText()")
    page.screenshot(path=str(screenshot_dir / f"agents-connect-{lang}.png"), full_page=True)

    # The scope limit holds on the API; the agent's search shows up as a recall.
    status, body = call(live_server, token, "POST", "/memories", {"content": "喜欢乌龙茶"})
    assert (status, body["code"]) == (403, "scope_not_allowed")
    status, _ = call(
        live_server,
        token,
        "POST",
        "/memories",
        {"content": "orchard 用 pytest", "scope": "project"},
    )
    assert status == 201
    assert call(live_server, token, "POST", "/search", {"query": "orchard 测试框架"})[0] == 200

    page.locator("#agent-list a", has_text="coding agent").click()
    expect(page.locator("#recalls")).to_contain_text("orchard 测试框架")
    expect(page.locator("#scopes input[value=project]").nth(1)).to_be_checked()

    page.get_by_role("button", name=text["pause"]).click()
    expect(page.locator(".page-head .badge")).to_have_text(text["paused"])
    status, body = call(
        live_server, token, "POST", "/turns", {"session_id": "s", "turn_index": 0, "role": "user"}
    )
    assert (status, body["code"]) == (423, "agent_paused")
    page.screenshot(path=str(screenshot_dir / f"agent-paused-{lang}.png"), full_page=True)
    page.get_by_role("button", name=text["resume"]).click()
    expect(page.get_by_role("button", name=text["pause"])).to_be_visible()

    page.get_by_role("link", name=text["revoke_link"]).click()
    page.locator("form button.danger", has_text=text["revoke"]).click()
    expect(page.locator("#agent-list tr[data-agent='coding agent'] .badge")).to_have_text(
        text["revoked"]
    )
    assert call(live_server, token, "GET", "/memories")[0] == 401


def test_without_javascript_the_snippets_stay_selectable_text(browser, live_server, person):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    log_in(page, live_server, "/agents/")
    page.fill("#id_name", "chat assistant")
    page.locator("#new-agent button[type=submit]").click()
    token = page.locator("#new-token-secret").input_value()
    snippet = page.locator("#snippet-mcp-stdio")
    expect(snippet).to_be_visible()
    assert (
        json.loads(snippet.input_value())["mcpServers"]["memory-curator"]["env"][
            "MEMSITE_API_TOKEN"
        ]
        == token
    )
    expect(page.locator("button.copy").first).to_be_hidden()
    context.close()
