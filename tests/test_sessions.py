"""Ending a session without an LLM: the rules episode and the scratchpad update."""

from datetime import timedelta

import pytest
from django.utils import timezone, translation

from curator.models import ConversationTurn, Fact, Owner, Scratchpad, Session
from lifecycle import tasks
from lifecycle.models import JobRun
from lifecycle.sessions import completions, end_session
from tests.lifecycle_helpers import session, turn

pytestmark = pytest.mark.django_db

CALLS = [
    {
        "id": "c1",
        "type": "function",
        "function": {
            "name": "run_shell",
            "arguments": {"cmd": "ps aux --sort=-rss", "host": "orchard-2"},
        },
    }
]
RESULTS = [{"tool_call_id": "c1", "ok": True, "output": "celery worker 3.7G\ngunicorn 400M"}]


def leak_session() -> Session:
    s = session("leak", title="排查内存泄漏")
    start = timezone.now() - timedelta(hours=1)
    lines = [
        ("user", "orchard 的 worker 内存又涨到 3G 多了，帮我看看是哪个进程。", {}),
        (
            "assistant",
            "我先在 orchard-2 上按内存排序看一下进程。",
            {"tool_calls": CALLS, "tool_results": RESULTS},
        ),
        ("assistant", "是 Celery worker。建议先加 --max-tasks-per-child=200，再观察一天。", {}),
        ("user", "我叫李雷。要不要把会议纪要 meeting-notes.pdf 也发给王芳？", {}),
        ("assistant", "已整理成 meeting-notes.pdf，接下来周二随版本发布。", {}),
    ]
    for n, (role, content, extra) in enumerate(lines):
        turn(s, content, role=role, timestamp=start + timedelta(minutes=5 * n), **extra)
    return s


def test_ending_a_session_writes_an_episode_from_its_turns():
    Owner.objects.update_or_create(key="global", defaults={"language": "zh-hans"})
    s = leak_session()
    episode = end_session(s)
    assert episode.goal == "orchard 的 worker 内存又涨到 3G 多了，帮我看看是哪个进程。"
    assert episode.outcome == "success"
    assert episode.tools_used == ["run_shell"]
    (node,) = episode.action_nodes
    assert node["tool_name"] == "run_shell" and node["success"] is True
    assert node["key_params"] == {"cmd": "ps aux --sort=-rss", "host": "orchard-2"}
    assert node["result_summary"].startswith("celery worker 3.7G")
    assert "meeting-notes.pdf" in episode.entities and "orchard" in episode.entities
    # Stored in the owner's language (for search and agents) ...
    assert "run_shell" in episode.summary and "目标" in episode.summary
    # ... and shown in the reader's: switching language switches it.
    with translation.override("en"):
        assert episode.display_summary.startswith("Goal: orchard 的 worker")
        assert "1 tool call (run_shell), 0 failed." in episode.display_summary
        assert episode.display_summary.endswith("5 turns.")
    with translation.override("zh-hans"):
        shown = episode.display_summary
        assert "调用工具 1 次（run_shell），失败 0 次。" in shown and shown.endswith("共 5 轮。")
        assert "哪个进程。调用工具" in shown  # the goal's own full stop, not a second one
    turns = list(s.turns.order_by("turn_index"))
    assert (episode.started_at, episode.ended_at) == (turns[0].timestamp, turns[-1].timestamp)
    assert all(t.episode_id == episode.pk for t in turns)
    assert Session.objects.get(pk=s.pk).ended_at is not None


def test_turns_left_unextracted_are_extracted_and_their_facts_linked():
    episode = end_session(leak_session())
    fact = Fact.objects.get(predicate="name")
    assert list(episode.linked_facts.all()) == [fact]
    assert not ConversationTurn.objects.filter(role="user", extracted=False).exists()


def test_a_failed_last_tool_call_makes_the_outcome_failed():
    s = session()
    failed = [{"tool_call_id": "c1", "ok": False, "error": "permission denied"}]
    turn(s, "帮我重启 orchard")
    turn(s, "重启中", role="assistant", tool_calls=CALLS, tool_results=failed)
    episode = end_session(s)
    assert episode.outcome == "failed"
    assert episode.action_nodes[0]["error_message"] == "permission denied"


def test_a_session_ending_on_an_unanswered_message_is_ongoing():
    s = session()
    turn(s, "Can you check the deploy?")
    assert end_session(s).outcome == "ongoing"


def test_ending_twice_writes_one_episode_and_new_turns_get_their_own():
    s = leak_session()
    first = end_session(s)
    assert end_session(s) == first
    turn(s, "I prefer short answers.")
    second = end_session(s)
    assert second != first and second.turns.count() == 1
    assert s.episodes.count() == 2


def test_a_session_without_turns_gets_no_episode():
    assert end_session(session()) is None


def test_the_scratchpad_gets_focus_questions_next_steps_and_a_completion():
    end_session(leak_session())
    pad = Scratchpad.objects.get()
    assert pad.current_focus.startswith("orchard 的 worker")
    assert pad.open_questions == ["要不要把会议纪要 meeting-notes.pdf 也发给王芳？"]
    assert any("max-tasks-per-child" in step for step in pad.next_steps)
    (done,) = completions(pad.content)
    assert done.startswith(f"- {timezone.localdate():%Y-%m-%d}: orchard") and "(success)" in done


def test_recent_completions_keep_the_five_newest():
    for n in range(7):
        s = session(f"s{n}")
        turn(s, f"task number {n}")
        end_session(s)
    done = completions(Scratchpad.objects.get().content)
    assert len(done) == 5 and "task number 6" in done[0] and "task number 2" in done[-1]


def test_what_a_person_wrote_on_the_scratchpad_survives():
    owner = session("x").owner
    Scratchpad.objects.create(owner=owner, content="## My notes\n\n- buy milk\n")
    end_session(leak_session())
    content = Scratchpad.objects.get().content
    assert content.startswith("## My notes\n\n- buy milk\n")
    assert "<!-- generated:scratchpad" in content


def test_the_task_returns_nothing_and_records_the_run():
    s = leak_session()
    assert tasks.end_session.call_local(s.pk) is None
    run = JobRun.objects.get(kind="end_session")
    assert run.steps[0]["counts"]["episode"] == s.episodes.get().pk
