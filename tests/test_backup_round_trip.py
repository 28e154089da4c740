"""A used install survives export -> import into an empty install -> export, row by row.

The install is built through what a person and agents use: two agents over the API and one
over MCP, turns with tool calls, memories, review items confirmed and ignored, facts edited
and superseded, a card edited by hand and refreshed, attachments, a chat-history import,
guardrails that blocked writes, an answered contradiction, per-source thresholds, recalls and
a replay, onboarding. Both archives must hold the same records; the restored install must
find what the first one found.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from curator import cards, onboarding
from curator import writepath as wp
from curator.models import Contradiction, Fact, GuardRule, Owner, PendingItem
from lifecycle import chat_import, contradictions, tasks
from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from memsite.core.tokens import create_token
from retrieval import recalls
from retrieval.models import RecallLog
from retrieval.search import flush_recalls, search
from tests.api_helpers import Api
from tests.archive_helpers import assert_same_records, wipe
from tests.queue_helpers import run_scheduled
from tests.test_mcp import Mcp

# Real commits: jobs run on commit as in a live install, and the recall log's writer (a thread
# with its own connection) sees what the test wrote.
pytestmark = pytest.mark.django_db(transaction=True)

CHATGPT = Path(__file__).parent / "data" / "chats" / "chatgpt_conversations.json"
QUERIES = ["杭州", "王芳", "乌龙茶", "coffee", "内存不足", "orchard"]


@pytest.fixture
def used(settings, tmp_path, client, client_in, live_queue):
    """Build the install; the queue is drained at the end."""
    settings.MEMORY_DIR = tmp_path / "first" / "memory"
    settings.MEDIA_ROOT = tmp_path / "first" / "attachments"
    _build(client, client_in)
    run_scheduled()
    flush_recalls()
    return tmp_path


def _build(client, client_in) -> None:
    owner = Owner.default()
    status = onboarding.status(owner)
    answers = {q["key"]: q["default"] for q in status["questions"]}
    answers.update(assistant_name="十一", positioning="务实的工程搭档", address="小李")
    assert onboarding.submit(answers, owner=owner).ok

    chat = Api(client, create_token("chat assistant")[1])
    coder = Api(client, create_token("coding agent")[1])
    desktop = Mcp(client, create_token("desktop assistant")[1])

    turn = {"session_id": "chat-1", "role": "user", "timestamp": "2026-03-01T09:30:00+08:00"}
    assert (
        chat.post(
            "/turns", {**turn, "turn_index": 0, "content": "我住在杭州，我的上司叫王芳。"}
        ).status_code
        == 201
    )
    calls = [{"id": "c1", "function": {"name": "grep", "arguments": {"q": "OOM"}}}]
    results = [{"tool_call_id": "c1", "output": "worker killed: 内存不足"}]
    reply = {**turn, "turn_index": 1, "role": "assistant", "content": "查到了 OOM 的原因"}
    assert (
        chat.post("/turns", {**reply, "tool_calls": calls, "tool_results": results}).status_code
        == 201
    )
    assert chat.post("/memories", {"content": "喜欢乌龙茶", "confidence": 0.95}).status_code == 201
    upload = {"file": SimpleUploadedFile("notes.txt", b"orchard memory leak notes", "text/plain")}
    assert chat.upload("/attachments", {**upload, "session_id": "chat-1"}).status_code == 201
    assert chat.post("/search", {"query": "杭州"}).status_code == 200
    assert chat.post("/context", {"query": "上司是谁"}).status_code == 200
    assert chat.post("/sessions/chat-1/end").status_code == 202

    # The coding agent's proposals go to review: one confirmed, one ignored.
    wp.set_threshold(f"token:{_agent('coding agent')}", write=0.99, pending=0.3)
    wp.set_threshold("rules", write=0.85, pending=0.5)
    for text in ("项目用 Django 5.2", "周五部署", "喜欢深色主题"):
        assert coder.post("/memories", {"content": text, "confidence": 0.7}).status_code == 201
    first, second, _third = PendingItem.objects.filter(agent__name="coding agent").order_by("pk")
    assert client_in.post(reverse("review_confirm", args=[first.pk])).status_code in (200, 302)
    assert client_in.post(reverse("review_ignore", args=[second.pk])).status_code in (200, 302)

    # A guardrail blocks one write of the MCP agent; its other write and its recall go through.
    GuardRule.objects.create(owner=owner, name="no salary", words=["工资"])
    desktop.call("remember", content="住在杭州西湖区", confidence=0.95)
    assert (
        desktop.post(
            "tools/call",
            {"name": "remember", "arguments": {"content": "我的工资是两万", "confidence": 0.95}},
        ).status_code
        == 200
    )
    desktop.call("recall", query="杭州")

    # The person edits and supersedes facts, answers a contradiction.
    tea = Fact.objects.get(content="喜欢乌龙茶")
    wp.edit_fact(tea.pk, {"content": "喜欢乌龙茶和龙井"}, actor="person")
    for text in ("I drink coffee every morning", "I don't drink coffee any more"):
        wp.propose(wp.Candidate(content=text, confidence=0.95, priority="permanent"), actor="agent")
    contradictions.scan()
    pair = Contradiction.objects.get()
    wp.resolve_contradiction(pair.pk, "both")
    onboarding.reset(owner)
    owner.refresh_from_db()
    assert onboarding.submit({**answers, "address": "李工"}, owner=owner).ok  # supersedes

    # A chat-history import, then a card edited by hand while live refreshes run.
    job = chat_import.queue(chat_import.prepare(CHATGPT, "chatgpt"))
    chat_import.run(job.pk, finish_session=tasks.end_imported_session)
    cards.save("user", cards.read("user") + "\n## 我的笔记\n\n周末去爬山。\n", "person")

    # A regression check saved from the debugger, and a replay of the first recall.
    tea = Fact.objects.get(content="喜欢乌龙茶和龙井")
    check = {"name": "tea", "query": "乌龙茶", "must_include": str(tea.pk), "within": 5}
    assert client_in.post(reverse("debugger_save_check"), check).status_code == 302
    recalls.replay(RecallLog.objects.order_by("pk").first())


def _agent(name: str) -> int:
    from memsite.models import ApiToken

    return ApiToken.objects.get(name=name).pk


# -- the round trips ---------------------------------------------------------------------------


def found_ids() -> dict[str, list]:
    owner = Owner.objects.get()
    return {
        q: sorted((i.kind, i.id) for i in search(q, owner=owner, record=False).items)
        for q in QUERIES
    }


def test_a_used_install_round_trips_with_every_record_and_the_same_search_results(used, settings):
    tmp_path = used
    counts = {kind.name: kind.model.objects.count() for kind in archive.KINDS}
    # every surface left its rows (what this test would not notice if a step silently failed)
    for kind in archive.KINDS:
        assert counts[kind.name] > 0, kind.name
    assert Fact.objects.exclude(supersedes=None).exists()
    assert Fact.objects.filter(agent__name="desktop assistant").exists()
    assert PendingItem.objects.filter(status="confirmed").exists()
    assert PendingItem.objects.filter(status="rejected").exists()
    before = found_ids()
    assert all(before.values()), before
    first = tmp_path / "first.zip"
    archive.export(first)

    wipe()
    settings.MEMORY_DIR = tmp_path / "second" / "memory"
    settings.MEDIA_ROOT = tmp_path / "second" / "attachments"
    report = imp.import_archive(first)
    run_scheduled()  # what a live install does next (card refreshes, ...) must change nothing
    assert report.mode == imp.RESTORE and not report.index_error
    second = tmp_path / "second.zip"
    archive.export(second)

    assert_same_records(first, second)
    assert found_ids() == before


def test_the_demo_round_trips_with_every_record(settings, tmp_path, live_queue):
    from lifecycle import demo

    settings.MEMORY_DIR = tmp_path / "first" / "memory"
    settings.MEDIA_ROOT = tmp_path / "first" / "attachments"
    demo.load_demo()
    run_scheduled()
    before = found_ids()
    first = tmp_path / "first.zip"
    archive.export(first)
    wipe()
    settings.MEMORY_DIR = tmp_path / "second" / "memory"
    settings.MEDIA_ROOT = tmp_path / "second" / "attachments"
    imp.import_archive(first)
    run_scheduled()
    second = tmp_path / "second.zip"
    archive.export(second)
    assert_same_records(first, second)
    assert found_ids() == before
