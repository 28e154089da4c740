"""Acceptance: the stdio MCP server is the only process of the product (as when Claude Desktop
or Cursor starts `memory-curator mcp` with no `make run`), driven by the MCP SDK's own client.
A remembered fact is found by recall at once; its jobs run (the server starts the consumer),
so get_context holds it in the cards; after a session ended over stdio, what extraction made
from it is in the cards. And never two consumers on one data directory."""

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
MANAGE = str(REPO / "manage.py")


def _run(main) -> None:
    """anyio.run in a thread of its own (Playwright may own the main thread's loop)."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(anyio.run, main).result()


def _manage(env, *args) -> str:
    done = subprocess.run(
        [sys.executable, MANAGE, *args], env=env, cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def alone(tmp_path):
    """A migrated data directory, a token, and no server or consumer running."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memsite.settings",
        "MEMSITE_DATA_DIR": str(tmp_path),
        "MEMSITE_HUEY_IMMEDIATE": "0",
        "MEMSITE_CARDS_REFRESH_DELAY": "0",
    }
    _manage(env, "migrate", "--noinput")
    token = _manage(env, "api_token", "create", "--name", "desktop").strip().splitlines()[-1]
    return {**env, "MEMSITE_API_TOKEN": token}


def _client(env) -> Client:
    return Client(StdioServerParameters(command=sys.executable, args=[MANAGE, "mcp"], env=env))


async def _until(call, holds, seconds: float = 90):
    """Poll `call` until `holds(answer)`; the last answer either way."""
    deadline = time.monotonic() + seconds
    while True:
        answer = await call()
        if holds(answer) or time.monotonic() > deadline:
            return answer
        await anyio.sleep(0.5)


def test_over_stdio_alone_a_remembered_fact_is_recalled_at_once_and_reaches_the_context(alone):
    async def run():
        async with _client(alone) as client:
            stored = await client.call_tool(
                "remember", {"content": "The user is allergic to peanuts", "confidence": 0.95}
            )
            assert not stored.is_error, stored.content
            fact_id = stored.structured_content["fact"]["id"]
            found = await client.call_tool("recall", {"query": "peanut allergy"})
            ids = [(r["kind"], r["id"]) for r in found.structured_content["results"]]
            assert ("fact", fact_id) in ids  # the keyword row committed with the fact

            async def context():
                return await client.call_tool(
                    "get_context", {"message": "what should I avoid eating?"}
                )

            answer = await _until(context, lambda a: "peanut" in a.structured_content["text"])
            assert "peanut" in answer.structured_content["text"]

    _run(run)


def test_over_stdio_alone_what_a_session_taught_reaches_the_cards(alone):
    async def run():
        async with _client(alone) as client:
            said = [
                ("user", "I live in Munich now and I work as a nurse."),
                ("assistant", "Thanks, noted."),
            ]
            for index, (role, content) in enumerate(said):
                turn = await client.call_tool(
                    "record_turn",
                    {"session_id": "s-1", "turn_index": index, "role": role, "content": content},
                )
                assert not turn.is_error, turn.content
            ended = await client.call_tool("end_session", {"session_id": "s-1"})
            assert not ended.is_error, ended.content

            async def profile():
                return await client.call_tool("get_profile", {})

            answer = await _until(profile, lambda a: "Munich" in str(a.structured_content))
            assert "Munich" in str(answer.structured_content)

    _run(run)


def test_a_second_consumer_waits_while_one_runs_and_takes_over_when_it_stops(alone):
    first = subprocess.Popen(
        [sys.executable, MANAGE, "consumer"], env=alone, cwd=REPO, stderr=subprocess.PIPE
    )
    second, lock = None, Path(alone["MEMSITE_DATA_DIR"]) / "consumer.lock"
    try:
        _wait_for_holder(lock, first.pid)
        second = subprocess.Popen(
            [sys.executable, MANAGE, "consumer"],
            env=alone,
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = second.stderr.readline()
        assert "waiting to take over" in line and str(first.pid) in line
        first.terminate()
        first.wait(30)
        _wait_for_holder(lock, second.pid)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(30)


def _wait_for_holder(lock: Path, pid: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if lock.exists() and lock.read_text().strip() == str(pid):
            return
        time.sleep(0.2)
    pytest.fail(f"process {pid} never held the consumer lock")
