"""Every job is also a management command, and --dry-run changes nothing."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from curator.models import ConversationTurn, Episode, Fact, MemoryEvent
from lifecycle.models import DeadLetter, JobRun
from tests.lifecycle_helpers import fact, session, turn

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def own_cards(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"


def call(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_consolidate_dry_run_prints_counts_and_changes_nothing():
    fact("expired", expires_at=timezone.now() - timedelta(hours=1))
    out = call("consolidate", "--dry-run")
    assert "Dry run" in out and "expired 1" in out
    assert Fact.objects.get().status == "active" and JobRun.objects.count() == 0


def test_consolidate_runs_and_its_undo_takes_it_back():
    f = fact("expired", expires_at=timezone.now() - timedelta(hours=1))
    out = call("consolidate", "--step", "expire")
    run = JobRun.objects.get()
    assert f"Run {run.run_id}" in out and Fact.objects.get(pk=f.pk).status == "expired"
    assert "Undone: 1 events" in call("consolidate", "--undo", run.run_id)
    assert Fact.objects.get(pk=f.pk).status == "active"
    with pytest.raises(CommandError):
        call("consolidate", "--undo", run.run_id)


def test_extract_turns_dry_run_shows_candidates_without_writing():
    t = turn(session(), "我叫李雷")
    out = call("extract_turns", "--dry-run")
    assert "用户的名字是李雷" in out and Fact.objects.count() == 0
    assert not ConversationTurn.objects.get(pk=t.pk).extracted
    assert "written" in call("extract_turns")
    assert Fact.objects.count() == 1


def test_end_session_dry_run_shows_the_rules_episode_without_writing():
    s = session("s-42")
    turn(s, "帮我看看 orchard 的内存")
    assert "帮我看看 orchard 的内存" in call("end_session", "s-42", "--dry-run")
    assert Episode.objects.count() == 0
    assert "Episode #" in call("end_session", "s-42")
    with pytest.raises(CommandError):
        call("end_session", "no-such-session")


def test_embed_queue_lists_and_retries_dead_letters():
    f = fact("to embed")
    DeadLetter.objects.create(
        task="embed", item_kind="fact", object_id=f.pk, error="boom", attempts=6
    )
    assert "1 open embedding dead letter" in call("embed_queue", "--retry", "--dry-run")
    assert DeadLetter.objects.get().status == "open"
    assert "-> ok" in call("embed_queue", "--retry")
    assert DeadLetter.objects.get().status == "retried"
    assert MemoryEvent.objects.count() == 0
