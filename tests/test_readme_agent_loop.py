"""The README's agent loop, run as printed: the openai client against the fake OpenAI server,
MemoryClient against the live app. Its second answer is written with the first exchange in
the context, and every turn is recorded."""

import re
from pathlib import Path

import pytest

from curator.models import ConversationTurn, Episode
from memsite.api.ratelimit import limiter
from memsite.core.tokens import create_token

pytestmark = pytest.mark.django_db(transaction=True)
README = Path(__file__).resolve().parent.parent / "README.md"


def readme_agent_loop() -> str:
    text = README.read_text(encoding="utf-8")
    marker = text.index("tests/test_readme_agent_loop.py runs this block")
    return re.search(r"```python\n(.*?)```", text[marker:], re.S).group(1)


def test_the_readmes_agent_loop_records_turns_and_injects_the_context(
    live_server, fake_openai, monkeypatch, capsys
):
    limiter.reset()
    _token, raw = create_token("readme agent")
    monkeypatch.setenv("MEMSITE_API_TOKEN", raw)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    fake_openai.chat_replies = ["好的，记住了：你住在杭州。", "你住在杭州。"]
    code = readme_agent_loop().replace("http://127.0.0.1:8000", live_server.url)

    exec(compile(code, str(README), "exec"), {"__name__": "readme"})  # noqa: S102

    assert "你住在杭州。" in capsys.readouterr().out
    chats = [r for r in fake_openai.requests if r["path"].endswith("/chat/completions")]
    assert len(chats) == 2
    second_system = chats[1]["body"]["messages"][0]["content"]
    assert "## Recent conversation" in second_system and "我住在杭州" in second_system
    turns = ConversationTurn.objects.filter(session__external_id="chat-1").order_by("turn_index")
    assert [(t.turn_index, t.role) for t in turns] == [
        (0, "user"),
        (1, "assistant"),
        (2, "user"),
        (3, "assistant"),
    ]
    assert all(t.agent is not None for t in turns)
    assert Episode.objects.filter(session__external_id="chat-1").exists()  # the session ended
