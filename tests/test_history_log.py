"""The JSONL conversation backup: one line per new turn, safe names, files pruned, rows kept."""

import json
import os
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from curator import history_log
from curator.conversations import record_turn
from curator.models import ConversationTurn
from lifecycle import schedule

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


def lines(session_id: str) -> list[dict]:
    path = history_log.log_dir() / history_log.file_name(session_id)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_new_turn_is_appended_once(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        record_turn("chat-1", 0, "user", "我下周三要去杭州面试")
        record_turn("chat-1", 1, "assistant", "好的", tool_calls=[{"name": "note", "id": "t1"}])
    with django_capture_on_commit_callbacks(execute=True):
        record_turn("chat-1", 1, "assistant", "好的", tool_calls=[{"name": "note", "id": "t1"}])
    got = lines("chat-1")
    assert [(r["turn_index"], r["role"]) for r in got] == [(0, "user"), (1, "assistant")]
    assert got[0]["content"] == "我下周三要去杭州面试" and got[0]["session_id"] == "chat-1"
    assert got[1]["tool_calls"] == [{"name": "note", "id": "t1"}] and got[1]["tool_results"] is None
    assert got[0]["timestamp"].endswith("+00:00")


def test_a_rolled_back_turn_is_not_logged(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            record_turn("chat-2", 0, "user", "never stored")
            raise RuntimeError
    assert not ConversationTurn.objects.exists()
    assert not (history_log.log_dir() / history_log.file_name("chat-2")).exists()


@pytest.mark.parametrize("session_id", ["../../etc/passwd", "a/b", ".hidden", "会话 1", ""])
def test_file_names_stay_inside_the_folder(session_id):
    name = history_log.file_name(session_id)
    assert "/" not in name and "\\" not in name and not name.startswith(".")
    assert (
        name.endswith(".jsonl") and (history_log.log_dir() / name).parent == history_log.log_dir()
    )


def test_unsafe_ids_do_not_share_a_file():
    assert history_log.file_name("a/b") != history_log.file_name("a_b")
    assert history_log.file_name("chat-1") == "chat-1.jsonl"


def test_retention_deletes_only_old_files_and_never_rows(
    settings, django_capture_on_commit_callbacks
):
    settings.CONVERSATION_LOG_RETENTION_DAYS = 30
    with django_capture_on_commit_callbacks(execute=True):
        record_turn("old", 0, "user", "long ago")
        record_turn("new", 0, "user", "just now")
    old = history_log.log_dir() / "old.jsonl"
    then = (timezone.now() - timedelta(days=31)).timestamp()
    os.utime(old, (then, then))
    removed = history_log.prune()
    assert removed == [old] and not old.exists()
    assert (history_log.log_dir() / "new.jsonl").exists()
    assert ConversationTurn.objects.count() == 2


def test_zero_days_keeps_every_file(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        record_turn("old", 0, "user", "long ago")
    assert history_log.prune(now=timezone.now() + timedelta(days=999), days=0) == []


def test_the_nightly_prune_is_listed_with_the_other_jobs():
    tasks = [p.task for p in schedule.periodic()]
    assert "prune_conversation_logs" in tasks and "nightly_consolidation" in tasks


def test_the_nightly_task_prunes(settings, django_capture_on_commit_callbacks):
    from lifecycle import tasks

    settings.CONVERSATION_LOG_RETENTION_DAYS = 1
    with django_capture_on_commit_callbacks(execute=True):
        record_turn("old", 0, "user", "long ago")
    old = history_log.log_dir() / "old.jsonl"
    then = (timezone.now() - timedelta(days=2)).timestamp()
    os.utime(old, (then, then))
    tasks.prune_conversation_logs()
    assert not old.exists() and ConversationTurn.objects.count() == 1
