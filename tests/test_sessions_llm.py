"""Ending a session with an LLM configured (fake server): its episode and scratchpad, and
the rules fallback when the model's replies stay unusable."""

import json

import pytest

from curator.models import Scratchpad
from lifecycle.models import Incident
from lifecycle.sessions import completions, end_session
from tests.lifecycle_helpers import session, turn

pytestmark = pytest.mark.django_db

EPISODE = {
    "summary": "李雷排查 orchard 内存泄漏，定位到 Celery worker，决定限制 max_tasks_per_child。",
    "goal": "找出 orchard 内存上涨的原因",
    "outcome": "partial",
    "entities": ["orchard", "Celery", "max_tasks_per_child"],
    "tags": ["运维"],
}
PAD = {
    "current_focus": "orchard 内存泄漏的修复上线",
    "active_projects": ["orchard"],
    "open_questions": ["周二发布后内存是否稳定？"],
    "next_steps": ["加 --max-tasks-per-child=200"],
    "completed": "定位 orchard 内存泄漏",
}


@pytest.fixture
def llm(fake_openai, settings):
    settings.LLM_MODEL, settings.LLM_API_KEY = "fake-chat", "test"
    settings.LLM_BASE_URL = fake_openai.base_url
    return fake_openai


def finished_session():
    s = session("leak")
    turn(s, "好的")  # short: the rules extractor takes it, no LLM call for extraction
    turn(s, "我看了进程", role="assistant",
         tool_calls=[{"id": "c1", "function": {"name": "run_shell", "arguments": {"cmd": "ps"}}}],
         tool_results=[{"tool_call_id": "c1", "ok": True, "output": "celery 3.7G"}])  # fmt: skip
    return s


def test_the_episode_and_scratchpad_come_from_the_model(llm):
    llm.chat_replies = [
        json.dumps(EPISODE, ensure_ascii=False),
        json.dumps(PAD, ensure_ascii=False),
    ]
    episode = end_session(finished_session())
    assert (episode.summary, episode.goal, episode.outcome) == (
        EPISODE["summary"], EPISODE["goal"], "partial")  # fmt: skip
    assert episode.entities == EPISODE["entities"] and episode.tags == ["运维"]
    assert episode.tools_used == ["run_shell"]  # action nodes always come from the tool calls
    assert "run_shell" in llm.requests[0]["body"]["messages"][1]["content"]
    pad = Scratchpad.objects.get()
    assert pad.current_focus == PAD["current_focus"] and pad.next_steps == PAD["next_steps"]
    assert completions(pad.content)[0].endswith(": 定位 orchard 内存泄漏")
    assert (
        "Session summary: " + EPISODE["summary"]
        in llm.requests[1]["body"]["messages"][1]["content"]
    )


def test_an_invalid_outcome_is_corrected_on_the_retry(llm):
    llm.chat_replies = [
        json.dumps({**EPISODE, "outcome": "great"}),
        json.dumps(EPISODE, ensure_ascii=False),
        json.dumps(PAD, ensure_ascii=False),
    ]
    assert end_session(finished_session()).outcome == "partial"
    assert '"outcome" must be one of' in llm.requests[1]["body"]["messages"][-1]["content"]


def test_unusable_replies_fall_back_to_the_rules_summary(llm):
    llm.chat_replies = ["no", "still no", "nope", "never"]
    episode = end_session(finished_session())
    assert episode.goal == "好的" and "run_shell" in episode.summary
    assert Scratchpad.objects.get().current_focus == "好的"
    # the scratchpad does not ask a model that just failed twice
    assert Incident.objects.filter(service="llm").count() == 1 and len(llm.requests) == 2
