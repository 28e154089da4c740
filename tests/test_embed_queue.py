"""The embedding queue: backoff, dead letters, Retry / Discard, keyword search meanwhile."""

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from curator.models import Fact, Owner
from lifecycle import deadletters, tasks
from lifecycle.embedqueue import backoff, index_with_retry
from lifecycle.models import DeadLetter, DeadStatus, DeadTask, Incident
from retrieval import indexing
from retrieval.backends import keyword_hits
from retrieval.embedders import EmbeddingError, LocalEmbedder

REPO = Path(__file__).resolve().parent.parent


class BrokenEmbedder(LocalEmbedder):
    """The local model's name and size (so vectors are wanted), but every call fails."""

    def passages(self, texts):
        raise EmbeddingError("endpoint timed out")


class GoodEmbedder(LocalEmbedder):
    def passages(self, texts):
        rows = np.ones((len(texts), self.dimension), dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture
def broken(monkeypatch):
    monkeypatch.setattr(indexing, "get_embedder", lambda: BrokenEmbedder())


@pytest.fixture
def stored_fact(db):
    return Fact.objects.create(owner=Owner.default(), content="用户住在杭州，在滨江上班")


def test_the_backoff_grows_exponentially_then_gives_up(settings):
    settings.EMBED_BACKOFF = [1, 4, 16, 64, 256]
    assert [backoff(n) for n in range(6)] == [1, 4, 16, 64, 256, None]


def test_a_failure_asks_for_a_retry_and_keyword_search_already_works(broken, stored_fact):
    result = index_with_retry("fact", stored_fact.pk, attempt=0)
    assert (result.status, result.delay) == ("retry", 1)
    assert "timed out" in result.error
    assert [h.object_id for h in keyword_hits("杭州", stored_fact.owner_id)] == [stored_fact.pk]
    assert Incident.objects.get().service == "embedding"


def test_after_the_last_retry_a_dead_letter_is_written(broken, stored_fact, settings):
    settings.EMBED_BACKOFF = [1, 4]
    assert index_with_retry("fact", stored_fact.pk, attempt=1).status == "retry"
    result = index_with_retry("fact", stored_fact.pk, attempt=2)
    assert result.status == "dead"
    letter = DeadLetter.objects.get()
    assert (letter.task, letter.item_kind, letter.object_id) == ("embed", "fact", stored_fact.pk)
    assert letter.attempts == 3 and "timed out" in letter.error


def test_a_repeated_failure_updates_the_open_dead_letter(broken, stored_fact, settings):
    settings.EMBED_BACKOFF = []
    index_with_retry("fact", stored_fact.pk)
    index_with_retry("fact", stored_fact.pk)
    assert DeadLetter.objects.get().attempts == 2


def test_the_task_schedules_its_own_retry(broken, stored_fact, monkeypatch):
    scheduled = []
    monkeypatch.setattr(tasks.index_item, "schedule", lambda **kw: scheduled.append(kw))
    tasks.index_item("fact", stored_fact.pk)
    assert scheduled == [{"args": ("fact", stored_fact.pk, 1), "delay": 1.0}]


def test_a_later_success_closes_the_dead_letter(stored_fact, monkeypatch, settings):
    settings.EMBED_BACKOFF = []
    monkeypatch.setattr(indexing, "get_embedder", lambda: BrokenEmbedder())
    index_with_retry("fact", stored_fact.pk)
    monkeypatch.setattr(indexing, "get_embedder", lambda: GoodEmbedder())
    assert index_with_retry("fact", stored_fact.pk).status == "ok"
    assert DeadLetter.objects.get().status == DeadStatus.RETRIED


def test_retry_puts_the_item_back_in_the_queue(
    stored_fact, monkeypatch, django_capture_on_commit_callbacks
):
    letter = DeadLetter.objects.create(
        task=DeadTask.EMBED, item_kind="fact", object_id=stored_fact.pk, error="x", attempts=6
    )
    monkeypatch.setattr(indexing, "get_embedder", lambda: GoodEmbedder())
    with django_capture_on_commit_callbacks(execute=True):
        deadletters.retry_letter(letter.pk)
    letter.refresh_from_db()
    assert letter.status == DeadStatus.RETRIED
    doc = indexing.SearchDoc.objects.get(kind="fact", object_id=stored_fact.pk)
    assert doc.embedded_hash == doc.content_hash  # embedded this time


def test_discard_stops_trying_and_keeps_the_keyword_row(broken, stored_fact, settings):
    settings.EMBED_BACKOFF = []
    index_with_retry("fact", stored_fact.pk)
    letter = DeadLetter.objects.get()
    deadletters.discard_letter(letter.pk)
    letter.refresh_from_db()
    assert letter.status == DeadStatus.DISCARDED and letter.resolved_at
    assert keyword_hits("滨江", stored_fact.owner_id)


# ----------------------------------------------------------------------------------------
# With a real consumer process: the retries really run with their delays.
# ----------------------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _manage(env, *args, **kwargs):
    return subprocess.run(
        [sys.executable, str(REPO / "manage.py"), *args],
        env=env, cwd=REPO, check=True, capture_output=True, text=True, **kwargs,
    )  # fmt: skip


def _dead_letters(db_file: Path) -> list[tuple]:
    with sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=5) as conn:
        try:
            return conn.execute(
                "SELECT task, item_kind, object_id, attempts, error FROM lifecycle_deadletter"
            ).fetchall()
        except sqlite3.OperationalError:
            return []


def test_a_real_consumer_retries_with_backoff_then_writes_a_dead_letter(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memsite.settings",
        "MEMSITE_DATA_DIR": str(tmp_path),
        "MEMSITE_HUEY_IMMEDIATE": "0",
        "MEMSITE_EMBED_BACKOFF": "0.2,0.2",
        "MEMSITE_EMBEDDING_MODEL": "unreachable-model",
        "MEMSITE_EMBEDDING_BASE_URL": f"http://127.0.0.1:{_closed_port()}/v1",
        "MEMSITE_EMBEDDING_DIM": "384",
    }
    _manage(env, "migrate", "--noinput")
    script = (
        "from curator.models import Fact, Owner; from lifecycle.tasks import index_item; "
        "f = Fact.objects.create(owner=Owner.default(), content='embedding keeps failing'); "
        "index_item('fact', f.pk); print(f.pk)"
    )
    fact_id = int(_manage(env, "shell", "-c", script).stdout.split()[-1])
    consumer = subprocess.Popen(
        [sys.executable, str(REPO / "manage.py"), "run_huey", "--skip-checks"],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline, letters = time.monotonic() + 90, []
        while time.monotonic() < deadline and not letters:
            time.sleep(0.5)
            letters = _dead_letters(tmp_path / "memory.sqlite3")
    finally:
        consumer.terminate()
        consumer.wait(30)
    assert len(letters) == 1
    task, kind, object_id, attempts, error = letters[0]
    assert (task, kind, object_id, attempts) == ("embed", "fact", fact_id, 3)
    assert "unreachable-model" in error
