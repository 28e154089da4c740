"""Acceptance: the MCP SDK's own client against real processes, over stdio (`manage.py mcp`
with the token in the environment) and over HTTP (/mcp on a running `manage.py serve`, whose
Huey consumer indexes what was remembered). Remember, then recall finds it; a read-only
token's remember is refused; a paused agent's remember stores nothing."""

import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memsite.web.connect import snippets

REPO = Path(__file__).resolve().parent.parent
MANAGE = str(REPO / "manage.py")
READY = re.compile(r"running at (http://\S+/) ")
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


def _run(main) -> None:
    """anyio.run in a thread of its own: once the browser tests ran, Playwright keeps an event
    loop running in the main thread for the rest of the session."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(anyio.run, main).result()


def _manage(env, *args) -> str:
    done = subprocess.run(
        [sys.executable, MANAGE, *args], env=env, cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """A migrated data directory with a running server (and its consumer), and tokens."""
    data_dir = tmp_path_factory.mktemp("mcp-data")
    env = {
        **os.environ,
        # The real settings: tests.settings would give every process a data dir of its own.
        "DJANGO_SETTINGS_MODULE": "memsite.settings",
        "MEMSITE_DATA_DIR": str(data_dir),
        "MEMSITE_HOST": "127.0.0.1",
    }
    env.pop("MEMSITE_PORT", None)
    _manage(env, "migrate", "--noinput")
    tokens = {
        name: _manage(env, "api_token", "create", "--name", name, *extra).strip().splitlines()[-1]
        for name, extra in (("stdio", []), ("http", []), ("reader", ["--read-only"]))
    }
    with open(data_dir / "serve.log", "w") as log:
        server = subprocess.Popen(
            [sys.executable, MANAGE, "serve", "--port", "0"],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        try:
            url = _ready_url(server)
            yield {"env": env, "url": url, "tokens": tokens}
        finally:
            server.send_signal(2)  # SIGINT: serve stops its consumer too
            server.wait(30)


def _ready_url(server) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = server.stdout.readline()
        if match := READY.search(line):
            return match.group(1)
        if not line and server.poll() is not None:
            break
    pytest.fail("serve did not start")


def _stdio(app, token: str) -> Client:
    env = {**app["env"], "MEMSITE_API_TOKEN": token}
    return Client(StdioServerParameters(command=sys.executable, args=[MANAGE, "mcp"], env=env))


def _http(app, token: str):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return http, Client(streamable_http_client(app["url"] + "mcp", http_client=http))


async def _remember_then_recall(client: Client, content: str, query: str) -> None:
    tools = await client.list_tools()
    assert {t.name for t in tools.tools} == TOOLS
    stored = await client.call_tool("remember", {"content": content, "confidence": 0.95})
    assert not stored.is_error, stored.content
    fact_id = stored.structured_content["fact"]["id"]
    deadline = time.monotonic() + 60  # the server's consumer indexes it in the background
    while time.monotonic() < deadline:
        found = await client.call_tool("recall", {"query": query})
        ids = [(r["kind"], r["id"]) for r in found.structured_content["results"]]
        if ("fact", fact_id) in ids:
            return
        await anyio.sleep(0.3)
    pytest.fail(f"recall never returned fact {fact_id}: {ids}")


def test_over_stdio_the_sdk_client_remembers_and_recalls(app):
    async def run():
        async with _stdio(app, app["tokens"]["stdio"]) as client:
            await _remember_then_recall(client, "用户住在杭州西湖区", "杭州")

    _run(run)


def test_over_http_the_sdk_client_remembers_and_recalls(app):
    async def run():
        http, client = _http(app, app["tokens"]["http"])
        async with http, client:
            await _remember_then_recall(client, "用户每天早上喝乌龙茶", "乌龙茶")

    _run(run)


async def _refused(client: Client, code: str, content: str) -> None:
    answer = await client.call_tool("remember", {"content": content, "confidence": 0.95})
    assert answer.is_error and code in answer.content[0].text
    listed = await client.call_tool("list_memories", {"q": content})
    assert listed.is_error or listed.structured_content["count"] == 0


def test_a_read_only_tokens_remember_is_refused_over_both_transports(app):
    async def run():
        async with _stdio(app, app["tokens"]["reader"]) as client:
            await _refused(client, "read_only_token", "只读令牌写的记忆一")
        http, client = _http(app, app["tokens"]["reader"])
        async with http, client:
            await _refused(client, "read_only_token", "只读令牌写的记忆二")

    _run(run)


def test_a_paused_agents_remember_stores_nothing(app):
    _manage(app["env"], "agents", "pause", "stdio")
    _manage(app["env"], "agents", "pause", "http")
    try:

        async def run():
            async with _stdio(app, app["tokens"]["stdio"]) as client:
                await _refused(client, "agent_paused", "暂停时写的记忆一")
            http, client = _http(app, app["tokens"]["http"])
            async with http, client:
                await _refused(client, "agent_paused", "暂停时写的记忆二")

        _run(run)
    finally:
        _manage(app["env"], "agents", "resume", "stdio")
        _manage(app["env"], "agents", "resume", "http")


@pytest.mark.parametrize("token", ["", "mc_not-a-real-token"], ids=["missing", "invalid"])
def test_stdio_without_a_valid_token_exits_with_one_sentence(app, token):
    env = {**app["env"], "MEMSITE_API_TOKEN": token}
    done = subprocess.run(
        [sys.executable, MANAGE, "mcp"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "token" in lines[0]


def test_the_connection_snippets_of_the_agents_page_work_as_pasted(app, settings):
    """What a person pastes into Claude Desktop / Cursor: the stdio command with its own
    environment only (no variables of this test process), and the HTTP URL with its header."""
    settings.DATA_DIR = Path(app["env"]["MEMSITE_DATA_DIR"])
    token = app["tokens"]["http"]
    found = {s.key: json.loads(s.text) for s in snippets(app["url"], token) if "mcp" in s.key}
    stdio = found["mcp-stdio"]["mcpServers"]["memory-curator"]
    http = found["mcp-http"]["mcpServers"]["memory-curator"]

    async def run():
        pasted = StdioServerParameters(
            command=stdio["command"], args=stdio["args"], env=stdio["env"]
        )
        async with Client(pasted) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        with_header = create_mcp_http_client(headers=http["headers"])
        async with (
            with_header,
            Client(streamable_http_client(http["url"], http_client=with_header)) as client,
        ):
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS

    _run(run)
