"""Importing chat history: ChatGPT's and Claude's exports and JSONL, written by hand in their
documented shapes (Chinese and English, edited-message branches, tool messages)."""

import io
import json
import shutil
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError

from curator import conversations, history_log
from curator.guard import rules as guard
from curator.models import (
    ConversationTurn,
    Episode,
    Fact,
    GuardHit,
    Owner,
    Scratchpad,
    Session,
)
from lifecycle import chat_formats, chat_import, tasks
from lifecycle.chat_formats import ImportRefused
from lifecycle.models import ChatImport, ImportStatus

pytestmark = pytest.mark.django_db
CHATS = Path(__file__).parent / "data" / "chats"
CHATGPT = CHATS / "chatgpt_conversations.json"
CLAUDE = CHATS / "claude_conversations.json"
JSONL = CHATS / "turns.jsonl"


def run_command(path, fmt, *extra) -> str:
    out = io.StringIO()
    call_command("import_chats", str(path), "--format", fmt, *extra, stdout=out, stderr=out)
    return out.getvalue()


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


# -- the acceptance path -----------------------------------------------------------------------


def test_import_chats_stores_both_conversations_with_their_original_times():
    output = run_command(CHATGPT, "chatgpt")
    assert "2 conversations, 8 turns" in output and "8 turns added" in output
    hangzhou = Session.objects.get(external_id="chatgpt:6a1f0c2e-0001-4f3b-9d2a-cn0000000001")
    assert hangzhou.title == "杭州周末去哪儿"
    turns = list(hangzhou.turns.order_by("turn_index"))
    assert [t.timestamp for t in turns] == [
        at(1714525201.0),
        at(1714525230.0),
        at(1714525400.0),
        at(1714525420.0),
    ]
    assert hangzhou.started_at == at(1714525201.0)
    # the branch on screen (the edited question), not the abandoned one nor custom instructions
    assert [t.content for t in turns if t.role == "user"] == [
        "我住在杭州，周末想去爬山，有什么推荐？",
        "我更喜欢九溪，那边人多吗？",
    ]
    assert not ConversationTurn.objects.filter(content__contains="北高峰要爬多久").exists()
    assert not ConversationTurn.objects.filter(content__contains="回答简短").exists()


def test_importing_the_same_file_again_adds_nothing():
    run_command(CHATGPT, "chatgpt")
    before = list(ConversationTurn.objects.values_list("pk", "content", "timestamp"))
    episodes = Episode.objects.count()
    output = run_command(CHATGPT, "chatgpt")
    assert (
        "Already stored: 8 turns; new: 0." in output and "0 turns added, 8 already there" in output
    )
    assert list(ConversationTurn.objects.values_list("pk", "content", "timestamp")) == before
    assert Session.objects.count() == 2 and Episode.objects.count() == episodes


def test_the_sessions_page_lists_both_conversations(client_in):
    run_command(CHATGPT, "chatgpt")
    page = client_in.get("/sessions/").content.decode()
    assert "杭州周末去哪儿" in page and "CSV column average" in page


def test_extraction_and_episodes_run_as_for_live_sessions():
    pad = Scratchpad.objects.create(owner=Owner.default(), content="current focus: unchanged")
    run_command(CHATGPT, "chatgpt")
    assert not ConversationTurn.objects.filter(role="user", extracted=False).exists()
    facts = " ".join(Fact.objects.values_list("content", flat=True))
    assert "杭州" in facts and "pandas" in facts  # the rules extractor saw the imported turns
    for session in Session.objects.all():
        episode = session.episodes.get()
        last = session.turns.order_by("-turn_index").first()
        assert episode.started_at == session.turns.order_by("turn_index").first().timestamp
        assert session.ended_at == last.timestamp  # ended when it ended, not today
    pad.refresh_from_db()
    assert pad.content == "current focus: unchanged"  # old history is not today's focus


def test_tool_calls_and_results_are_kept():
    run_command(CHATGPT, "chatgpt")
    call = ConversationTurn.objects.get(tool_calls__isnull=False)
    assert call.tool_calls[0]["function"]["name"] == "python"
    assert "read_csv" in call.tool_calls[0]["function"]["arguments"]
    result = ConversationTurn.objects.get(role="tool")
    assert result.tool_results == [
        {"tool_call_id": call.tool_calls[0]["id"], "name": "python", "output": "42.5"}
    ]
    episode = call.session.episodes.get()
    assert episode.tools_used == ["python"]


def test_claudes_export_with_branches_tools_and_attachments():
    output = run_command(CLAUDE, "claude")
    assert "2 conversations, 6 turns" in output
    deploy = Session.objects.get(title="Deploy script review")
    user, answer = deploy.turns.order_by("turn_index")
    assert "[deploy.sh]" in user.content and "git push --force" in user.content
    assert answer.tool_calls[0]["function"]["name"] == "run_shell"
    assert answer.tool_results[0]["output"].startswith("a1b2c3")
    plan = Session.objects.get(title="学习计划")
    said = [t.content for t in plan.turns.order_by("turn_index")]
    assert "有没有视频课？" not in said and "我更喜欢看书，推荐一本进阶的吧。" in said


def test_a_jsonl_file_groups_turns_by_session():
    output = run_command(JSONL, "jsonl")
    assert "2 conversations, 6 turns" in output
    notes = Session.objects.get(external_id="notes-2024-08-01")
    assert notes.title == "周会笔记" and notes.turns.count() == 4
    assert notes.turns.get(turn_index=0).timestamp == datetime(2024, 8, 1, 1, 0, tzinfo=UTC)
    assert Session.objects.get(external_id="travel").turns.first().timestamp == at(1725148800)


def test_the_apps_own_backup_reads_back_onto_the_turns_it_came_from(
    tmp_path, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        conversations.record_turn("live", 0, "user", "我喜欢爬山")
        conversations.record_turn("live", 1, "assistant", "好的")
    backup = history_log.log_dir() / history_log.file_name("live")
    output = run_command(backup, "jsonl")
    assert "0 turns added" in output and ConversationTurn.objects.count() == 2


def test_an_export_zip_is_read_like_its_conversations_json(tmp_path):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(CHATGPT, "conversations.json")
        zf.writestr("user.json", "{}")
    assert "8 turns added" in run_command(archive, "chatgpt")


# -- the preview -------------------------------------------------------------------------------


def test_the_preview_says_what_would_be_stored_masked_and_blocked():
    guard.create_rule({"name": "爬山", "words": ["爬山"], "redact_turns": True})
    guard.create_rule({"name": "pandas", "words": ["pandas"]})
    job = chat_import.prepare(CHATGPT, "chatgpt")
    p = job.preview
    assert (p["conversations"], p["turns"], p["new"], p["already"]) == (2, 8, 8, 0)
    assert p["first"].startswith("2024-05-01") and p["last"].startswith("2024-06-01")
    assert p["languages"] == {"zh": 1, "en": 1}
    assert p["tool_turns"] == 2
    assert p["masked"] == [{"rule": "爬山", "turns": 1}]
    assert p["blocked"] == [{"rule": "pandas", "turns": 1}]
    first = p["sample"][0]
    assert first["title"] == "杭州周末去哪儿"
    assert first["turns"][0]["content"] == "我住在杭州，周末想去████，有什么推荐？"
    assert not Session.objects.exists()  # a preview stores nothing


def test_imported_turns_pass_the_guardrails(tmp_path):
    line = {
        "session_id": "s",
        "role": "user",
        "content": "my password is hunter2, keep it",
        "timestamp": "2024-01-01T00:00:00Z",
    }
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(line) + "\n")
    run_command(path, "jsonl")
    assert ConversationTurn.objects.get().content == "my password is ████, keep it"
    masked = GuardHit.objects.get(source="import")
    assert masked.action == "redacted" and masked.excerpt == "my password is ████, keep it"
    # a memory drawn from the masked turn would only say something was hidden: blocked
    drawn = GuardHit.objects.get(source="rules")
    assert drawn.rule_name == guard.MASKED and not Fact.objects.exists()


# -- refused files -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, fmt, reason",
    [
        ("{not json", "chatgpt", "The file is not JSON"),
        ("", "claude", "The file is empty"),
        ("[]", "chatgpt", "The file holds no conversations"),
        ('{"a": 1}', "chatgpt", "must hold a list of conversations"),
        (CLAUDE.read_text(), "chatgpt", "It looks like a Claude export"),
        (CHATGPT.read_text(), "claude", "It looks like a ChatGPT export"),
        (
            '[{"title": "空", "mapping": {"r": {"message": null, "children": []}}}]',
            "chatgpt",
            "Conversation 1 (“空”) has no messages",
        ),
        ('[{"name": "x", "chat_messages": []}]', "claude", "Conversation 1 (“x”) has no messages"),
        ('{"session_id": "s", "role": "user"}\n', "jsonl", "Line 1 has no content, timestamp"),
        (
            '{"session_id": "s", "role": "bot", "content": "", "timestamp": "2024-01-01"}',
            "jsonl",
            "Line 1: role must be one of",
        ),
        (
            '{"session_id": "s", "role": "user", "content": "", "timestamp": "soon"}',
            "jsonl",
            "Line 1: the timestamp must be ISO 8601",
        ),
        (
            '{"session_id": "s", "role": "user", "content": "a", "timestamp": 1}\nnope',
            "jsonl",
            "Line 2 is not JSON",
        ),
        (
            '{"session_id": "s", "role": "user", "content": "a", "timestamp": "2024-01-01", '
            '"tool_results": [NaN]}',
            "jsonl",
            "Line 1 is not JSON: NaN is not a JSON number",
        ),
        ('[{"title": "t\\ud800", "mapping": {}}]', "chatgpt", "unpaired surrogate"),
    ],
)
def test_a_bad_file_is_refused_with_the_reason_and_nothing_stored(tmp_path, content, fmt, reason):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError) as caught:
        run_command(path, fmt)
    assert reason in str(caught.value)
    assert not Session.objects.exists() and not ChatImport.objects.exists()


def test_a_zip_without_conversations_is_refused(tmp_path):
    archive = tmp_path / "x.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("other.json", "[]")
    with pytest.raises(ImportRefused, match="no conversations.json"):
        chat_formats.read(archive, "chatgpt")


# -- interruptions, failures, cancelling, changed exports --------------------------------------


def test_an_interrupted_import_resumes_where_it_stopped(tmp_path):
    job = chat_import.queue(chat_import.prepare(CHATGPT, "chatgpt"))

    def stop_after_first(progress):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        chat_import.run(
            job.pk, finish_session=tasks.end_imported_session, progress=stop_after_first
        )
    job.refresh_from_db()
    assert job.status == ImportStatus.INTERRUPTED and job.position == 1
    assert Session.objects.count() == 1 and ConversationTurn.objects.count() == 4

    output = run_command(CHATGPT, "chatgpt")  # the same file again: it goes on
    assert "Resuming: 1 of 2 conversations were stored." in output
    assert ChatImport.objects.count() == 1 and ConversationTurn.objects.count() == 8


def test_a_failing_conversation_leaves_nothing_half_stored(monkeypatch):
    real = conversations.record_turn
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 6:  # the second turn of the second conversation
            raise DatabaseError("disk I/O error")
        return real(*args, **kwargs)

    monkeypatch.setattr(conversations, "record_turn", flaky)
    job = chat_import.queue(chat_import.prepare(CHATGPT, "chatgpt"))
    job = chat_import.run(job.pk, finish_session=tasks.end_imported_session)
    assert job.status == ImportStatus.FAILED and "disk I/O error" in job.error
    assert Session.objects.count() == 1 and ConversationTurn.objects.count() == 4

    monkeypatch.setattr(conversations, "record_turn", real)
    job = chat_import.run(chat_import.queue(job).pk, finish_session=tasks.end_imported_session)
    assert job.status == ImportStatus.DONE and ConversationTurn.objects.count() == 8


def test_a_cancelled_import_stops_and_its_upload_goes(tmp_path):
    copy = tmp_path / "upload.json"
    shutil.copy(CHATGPT, copy)
    job = chat_import.prepare(copy, "chatgpt", uploaded=True)
    job = chat_import.cancel(chat_import.queue(job))
    assert job.status == ImportStatus.CANCELLED and not copy.exists()
    assert chat_import.run(job.pk, finish_session=tasks.end_imported_session).status == "cancelled"
    assert not Session.objects.exists()


def test_a_later_export_with_another_branch_keeps_what_is_stored(tmp_path):
    run_command(CHATGPT, "chatgpt")
    data = json.loads(CHATGPT.read_text())
    data[0]["current_node"] = "c1-a2a"  # the person switched back to the first branch
    changed = tmp_path / "later.json"
    changed.write_text(json.dumps(data, ensure_ascii=False))
    output = run_command(changed, "chatgpt")
    assert "2 differing (kept as stored)" in output
    assert ConversationTurn.objects.filter(content="我更喜欢九溪，那边人多吗？").exists()


def test_progress_is_printed_with_the_flag():
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_chats", str(CHATGPT), "--format", "chatgpt", "--progress", stdout=out, stderr=err
    )
    assert "100%" in err.getvalue() or "2/2 conversations" in err.getvalue()


def test_dry_run_stores_nothing():
    assert "Preview only" in run_command(CHATGPT, "chatgpt", "--dry-run")
    assert not Session.objects.exists()


# -- personal data goes to review ----------------------------------------------------------------


def _contact_file(tmp_path):
    lines = [
        ("记住李雷的电话是13812345678", "2024-01-01T00:00:00Z"),
        ("My email address is li.lei@example.com", "2024-01-01T00:01:00Z"),
    ]
    path = tmp_path / "contacts.jsonl"
    rows = [
        {"session_id": "c", "role": "user", "content": text, "timestamp": when}
        for text, when in lines
    ]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    return path


def test_the_preview_says_what_would_go_to_review(tmp_path):
    job = chat_import.prepare(_contact_file(tmp_path), "jsonl")
    review = {row["rule"]: row["turns"] for row in job.preview["review"]}
    assert review == {"Phone numbers": 1, "E-mail addresses": 1}
    assert job.preview["blocked"] == [] and job.preview["masked"] == []


def test_imported_contact_details_wait_for_review_and_stay_out_of_the_cards(tmp_path):
    from django.utils import timezone

    from curator import cards
    from curator.models import PendingItem
    from lifecycle import refresh

    run_command(_contact_file(tmp_path), "jsonl")
    assert ConversationTurn.objects.count() == 2  # the transcript keeps them (not masked)
    pending = list(PendingItem.objects.filter(reason="personal_data"))
    held = " ".join(item.candidate["content"] for item in pending)
    assert "13812345678" in held and "li.lei@example.com" in held
    for fact in Fact.objects.all():
        assert "13812345678" not in fact.content and "li.lei@example.com" not in fact.content
    refresh.refresh_cards(timezone.now(), {}, note="live_refresh")
    user_card = cards.read("user")
    assert "13812345678" not in user_card and "li.lei@example.com" not in user_card
