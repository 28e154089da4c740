"""The Jobs page: queue, schedule, runs with progress and undo, dead letters, last errors."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator.models import MemoryEvent
from lifecycle import runs, schedule
from lifecycle.models import DeadLetter, Heartbeat, Incident, JobRun, RunStatus
from tests.lifecycle_helpers import fact

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def own_cards(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"


def test_it_requires_a_login(client):
    response = client.get("/jobs/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_it_says_clearly_when_no_consumer_is_running(client_in):
    html = client_in.get("/jobs/").content.decode()
    assert 'data-consumer="missing"' in html and "make run" in html
    assert "Run consolidation now" in html


def test_it_shows_a_running_consumer_from_its_heartbeat(client_in):
    schedule.beat(started=True)
    html = client_in.get("/jobs/").content.decode()
    assert 'data-consumer="running"' in html
    Heartbeat.objects.update(beat_at=timezone.now() - timedelta(minutes=5))
    assert 'data-consumer="missing"' in client_in.get("/jobs/").content.decode()


def test_it_lists_the_schedule_with_next_run_times(client_in):
    html = client_in.get("/jobs/").content.decode()
    for task in ("nightly_consolidation", "hourly_upkeep", "heartbeat"):
        assert f'data-task="{task}"' in html
    assert "03:00" in html


def test_htmx_gets_only_the_content_partial(client_in):
    html = client_in.get("/jobs/", **HTMX).content.decode()
    assert "<html" not in html and "Nightly consolidation" in html


def test_run_now_runs_a_consolidation_and_lists_it(client_in):
    fact("expired", expires_at=timezone.now() - timedelta(minutes=1))
    response = client_in.post("/jobs/consolidate/")
    assert response.status_code == 302 and response["Location"] == "/jobs/"
    run = JobRun.objects.get()
    assert (run.trigger, run.status) == ("manual", RunStatus.SUCCEEDED)
    html = client_in.get("/jobs/").content.decode()
    assert f'data-run="{run.run_id}"' in html and "d. Expiry" in html and "expired 1" in html


def test_run_now_needs_a_post(client_in):
    assert client_in.get("/jobs/consolidate/").status_code == 405


def test_a_running_run_is_polled_until_it_finishes(client_in):
    run = runs.create("consolidate", "manual")
    recorder = runs.Recorder(run)
    recorder.start(7)
    recorder.progress("decay", 3, 40, 100)
    html = client_in.get("/jobs/").content.decode()
    assert 'hx-trigger="every 1s"' in html and "Running step 3 of 7" in html
    polled = client_in.get(f"/jobs/runs/{run.run_id}/progress/", **HTMX).content.decode()
    assert 'hx-trigger="every 1s"' in polled and "40 / 100" in polled
    recorder.finish()
    done = client_in.get(f"/jobs/runs/{run.run_id}/progress/", **HTMX)
    assert done["HX-Retarget"] == "#main"  # finished: the whole page is swapped once
    html = done.content.decode()
    assert 'hx-trigger="every 1s"' not in html and f'data-run="{run.run_id}"' in html
    plain = client_in.get(f"/jobs/runs/{run.run_id}/progress/").content.decode()
    assert 'data-status="succeeded"' in plain


def test_a_second_run_now_while_one_runs_is_refused(client_in):
    runs.create("consolidate", "manual")
    response = client_in.post("/jobs/consolidate/", follow=True)
    assert "already queued or running" in response.content.decode()
    assert JobRun.objects.count() == 1


def test_the_run_page_lists_its_events_and_can_undo_it(client_in):
    idle = fact("idle", days_old=15, importance=0.8)
    client_in.post("/jobs/consolidate/")
    run = JobRun.objects.get()
    page = client_in.get(f"/jobs/runs/{run.run_id}/").content.decode()
    assert f"#{idle.pk}" in page and "Undo the whole run" in page
    part = client_in.get(f"/jobs/runs/{run.run_id}/?part=events", **HTMX).content.decode()
    assert "<h1>" not in part and f'data-event="{MemoryEvent.objects.get().pk}"' in part
    response = client_in.post(f"/jobs/runs/{run.run_id}/undo/", {"back": "run"}, follow=True)
    assert "Run undone" in response.content.decode()
    idle.refresh_from_db()
    assert idle.importance == 0.8 and JobRun.objects.get().status == RunStatus.UNDONE


def test_an_undo_that_is_refused_says_why(client_in):
    from curator.writepath import edit_fact

    idle = fact("idle", days_old=15, importance=0.8)
    client_in.post("/jobs/consolidate/")
    edit_fact(idle.pk, {"importance": 0.3}, actor="person")
    response = client_in.post(f"/jobs/runs/{JobRun.objects.get().run_id}/undo/", follow=True)
    assert "Cannot undo this run" in response.content.decode()


def test_dead_letters_can_be_retried_or_discarded(client_in, django_capture_on_commit_callbacks):
    target = fact("something to embed")
    a = DeadLetter.objects.create(task="embed", item_kind="fact", object_id=target.pk,
                                  error="EmbeddingError: timed out", attempts=6)  # fmt: skip
    b = DeadLetter.objects.create(
        task="embed", item_kind="fact", object_id=999, error="x", attempts=6
    )
    html = client_in.get("/jobs/").content.decode()
    assert f'data-dead-letter="{a.pk}"' in html and "timed out" in html
    with django_capture_on_commit_callbacks(execute=True):
        client_in.post(f"/jobs/dead/{a.pk}/retry/")
    client_in.post(f"/jobs/dead/{b.pk}/discard/")
    a.refresh_from_db(), b.refresh_from_db()
    assert (a.status, b.status) == ("retried", "discarded")
    assert "No dead letters" in client_in.get("/jobs/").content.decode()


def test_the_last_llm_and_embedding_errors_are_shown(client_in, settings):
    settings.LLM_MODEL, settings.LLM_BASE_URL = "m", "http://127.0.0.1:9/v1"
    Incident.objects.create(service="llm", message="malformed reply twice", context="turn 7")
    Incident.objects.create(service="embedding", message="endpoint timed out", context="fact 3")
    html = client_in.get("/jobs/").content.decode()
    assert "malformed reply twice" in html and "turn 7" in html and "endpoint timed out" in html
