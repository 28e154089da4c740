"""The nightly consolidation: each step on crafted data, dry runs, the lock, undo of a run."""

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.utils import timezone, translation

from curator import cards
from curator.generated import deletion_why
from curator.models import (
    Attachment,
    CardRevision,
    Episode,
    Fact,
    MemoryEvent,
    Owner,
    PendingItem,
    PendingStatus,
)
from curator.undo import UndoRefused
from curator.writepath import edit_fact, ignore_pending
from lifecycle import consolidate, dedup, runs
from lifecycle.models import JobRun, RunStatus
from lifecycle.undo import undo_run
from retrieval import indexing
from retrieval.embedders import LocalEmbedder
from tests.lifecycle_helpers import fact, session, turn

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def own_cards(settings, tmp_path):
    """Card files are not rolled back with the database: each test gets its own folder."""
    settings.MEMORY_DIR = tmp_path / "memory"


def run(**kwargs):
    report = consolidate.run(**kwargs)
    return report, {s["name"]: s["counts"] for s in report.steps}


class TableEmbedder(LocalEmbedder):
    """Vectors chosen by the test: texts starting with the same word are near duplicates."""

    def passages(self, texts):
        rows = []
        for text in texts:
            seed = sum(map(ord, text.split()[0])) if text.split() else 0
            base = np.random.default_rng(seed).normal(size=self.dimension)
            noise = np.random.default_rng(len(text)).normal(size=self.dimension) * 0.05
            rows.append(base + noise)
        rows = np.asarray(rows, dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture
def vectors(monkeypatch, settings):
    settings.DEDUP_THRESHOLD = 0.9
    monkeypatch.setattr(indexing, "get_embedder", lambda: TableEmbedder())

    def index(*facts):
        indexing.index_items("fact", facts)

    return index


# -- a. extract ---------------------------------------------------------------------------


def test_turns_left_unextracted_are_extracted_by_the_run():
    t = turn(session(), "我叫李雷")
    report, counts = run()
    assert counts["extract"] == {"retries_due": 0, "turns": 1, "written": 1}
    event = MemoryEvent.objects.get(fact__source_turn=t, event_type="write")
    assert event.job_run == report.run.run_id


# -- b. dedup -----------------------------------------------------------------------------


def test_exact_duplicates_are_merged_into_the_older_one():
    old = fact("Prefers pytest", days_old=10, subject="li", predicate="tests", importance=0.4)
    new = fact("prefers  pytest", days_old=1, importance=0.8, hit_count=2)
    report, counts = run(only=["dedup"])
    assert counts["dedup"]["merged"] == 1
    old.refresh_from_db(), new.refresh_from_db()
    assert (old.status, old.importance, old.hit_count) == ("active", 0.8, 3)
    assert new.status == "superseded"
    merges = MemoryEvent.objects.filter(event_type="merge", job_run=report.run.run_id)
    assert {e.fact_id for e in merges} == {old.pk, new.pk}


def test_a_verified_duplicate_is_the_one_kept():
    old = fact("Uses Helix", days_old=10)
    mine = fact("Uses Helix", days_old=1, verified=True, subject="li", predicate="editor")
    run(only=["dedup"])
    assert Fact.objects.get(pk=mine.pk).status == "active"
    assert Fact.objects.get(pk=old.pk).status == "superseded"


def test_near_duplicates_of_the_same_type_are_proposed_for_review(vectors):
    a = fact("ramen is what the user likes most", days_old=9)
    b = fact("ramen is liked by the user a lot", days_old=2)
    other_type = fact("ramen shop opens at 11", days_old=2, type="error")
    unrelated = fact("editor of choice is Helix", days_old=2)
    vectors(a, b, other_type, unrelated)
    _report, counts = run(only=["dedup"])
    assert counts["dedup"]["proposed"] == 1
    item = PendingItem.objects.get()
    assert (item.reason, item.conflicts_with_id) == ("deletion", b.pk)
    assert item.candidate["tags"] == ["merge", f"duplicate-of:{a.pk}"]
    assert Fact.objects.filter(status="active").count() == 4  # nothing removed yet
    # The reason is a code and values: the review desk words it in the reader's language.
    assert item.candidate["why_code"] == "near_duplicate"
    with translation.override("zh-hans"):
        assert deletion_why(item.candidate).startswith(f"与 #{a.pk}")
    with translation.override("en"):
        assert deletion_why(item.candidate).startswith(f"Near-duplicate of #{a.pk}")


def test_the_next_run_queries_only_vectors_embedded_since_the_last_dedup(vectors):
    vectors(fact("ramen first", days_old=3), fact("editor Helix", days_old=3))
    _report, counts = run(only=["dedup"])
    assert (counts["dedup"]["vectors"], counts["dedup"]["queried"]) == (2, 2)
    vectors(fact("ramen second one", days_old=1))
    _report, counts = run(only=["dedup"])
    assert (counts["dedup"]["queried"], counts["dedup"]["proposed"]) == (1, 1)
    _report, counts = run(only=["dedup"])
    assert counts["dedup"]["queried"] == 0


def test_a_merge_the_person_answered_is_never_proposed_again(vectors):
    a, b = fact("ramen first", days_old=3), fact("ramen second one", days_old=1)
    vectors(a, b)
    run(only=["dedup"])
    ignore_pending(PendingItem.objects.get().pk)
    found = dedup.find()  # every vector asks again, as on a first run
    assert found.queried == 2 and found.near == []


# -- c. decay -----------------------------------------------------------------------------


def test_idle_facts_decay_weekly_and_exempt_ones_never():
    idle = fact("idle two weeks", days_old=15, importance=0.8)
    fresh = fact("written yesterday", days_old=1, importance=0.8)
    recalled = fact("recalled", days_old=30, importance=0.8,
                    last_accessed_at=timezone.now() - timedelta(days=2))  # fmt: skip
    later = timezone.now() + timedelta(days=20)
    exempt = [
        fact("verified", days_old=60, importance=0.8, verified=True, expires_at=later),
        fact("permanent", days_old=60, importance=0.8, priority="permanent"),
        fact("core", days_old=60, importance=0.8, tags=["core"]),
        fact("system", days_old=60, importance=0.8, scope="system"),
    ]
    # Verified, but the person chose "fades when unused" on the review card: long term, no date.
    chose_decay = fact("chose decay", days_old=15, importance=0.8, verified=True)
    _report, counts = run(only=["decay"])
    assert counts["decay"]["facts_decayed"] == 2
    assert Fact.objects.get(pk=idle.pk).importance == pytest.approx(0.8 * 0.95**2)
    assert Fact.objects.get(pk=chose_decay.pk).importance == pytest.approx(0.8 * 0.95**2)
    for unchanged in [fresh, recalled, *exempt]:
        assert Fact.objects.get(pk=unchanged.pk).importance == 0.8


def test_running_twice_in_one_night_decays_once():
    idle = fact("idle", days_old=15, importance=0.8)
    now = timezone.now()
    run(only=["decay"], now=now)
    run(only=["decay"], now=now + timedelta(hours=1))
    assert Fact.objects.get(pk=idle.pk).importance == pytest.approx(0.8 * 0.95**2)
    run(only=["decay"], now=now + timedelta(days=7))
    assert Fact.objects.get(pk=idle.pk).importance == pytest.approx(0.8 * 0.95**3)


def test_episodes_decay_faster_and_are_archived_at_two_weeks():
    owner = Owner.default()
    week = Episode.objects.create(
        owner=owner, summary="a", ended_at=timezone.now() - timedelta(days=8)
    )
    old = Episode.objects.create(
        owner=owner, summary="b", ended_at=timezone.now() - timedelta(days=15)
    )
    _report, counts = run(only=["decay"])
    assert counts["decay"]["episodes_archived"] == 1
    week.refresh_from_db(), old.refresh_from_db()
    assert week.importance == pytest.approx(0.5 * 0.8) and "archived" not in week.tags
    assert old.importance == pytest.approx(0.5 * 0.8**2) and "archived" in old.tags


def test_low_facts_are_not_removed_before_the_person_was_asked():
    low = fact("low", days_old=8, importance=0.2)
    _report, counts = run(only=["decay", "reviews"])
    assert counts["decay"]["demoted"] == 0 and counts["reviews"]["removal_asked"] == 1
    assert Fact.objects.get(pk=low.pk).priority == "long_term"
    item = PendingItem.objects.get(conflicts_with=low)
    assert item.reason == "deletion" and item.candidate["tags"] == ["decay-review"]


def test_an_unanswered_question_lets_the_thresholds_act_after_two_weeks():
    low, lowest = (
        fact("low", days_old=30, importance=0.2),
        fact("lowest", days_old=30, importance=0.05),
    )
    run(only=["reviews"])
    PendingItem.objects.update(created_at=timezone.now() - timedelta(days=15))
    _report, counts = run(only=["decay"], now=timezone.now() + timedelta(hours=1))
    assert (counts["decay"]["demoted"], counts["decay"]["archived"]) == (1, 1)
    low.refresh_from_db()
    assert low.priority == "transient" and low.expires_at < timezone.now() + timedelta(days=2)
    assert Fact.objects.get(pk=lowest.pk).status == "archived"


def test_a_fact_the_person_kept_is_never_demoted_and_gets_its_importance_back():
    low = fact("keep me", days_old=30, importance=0.2)
    run(only=["reviews"])
    ignore_pending(PendingItem.objects.get().pk)  # "keep"
    PendingItem.objects.update(created_at=timezone.now() - timedelta(days=30))
    _report, counts = run(only=["decay", "reviews"], now=timezone.now() + timedelta(hours=1))
    assert counts["decay"]["demoted"] == 0 and counts["reviews"]["kept_reset"] == 1
    low.refresh_from_db()
    assert (low.priority, low.importance) == ("long_term", 0.5)


# -- d. expire, e. promotion, f. attachment files -------------------------------------------


def test_facts_past_their_expiry_become_expired_not_deleted():
    gone = fact("old task rule", expires_at=timezone.now() - timedelta(minutes=1))
    kept = fact("still valid", expires_at=timezone.now() + timedelta(days=1))
    _report, counts = run(only=["expire"])
    assert counts["expire"] == {"expired": 1}
    assert Fact.objects.get(pk=gone.pk).status == "expired"
    assert Fact.objects.get(pk=kept.pk).status == "active"


def test_important_reinforced_facts_are_put_up_for_promotion_once():
    hot = fact("hot", importance=0.95, priority="permanent", hit_count=3)
    fact("only written hot", importance=0.95)
    fact("verified hot", importance=0.95, verified=True, access_count=4)
    fact("lukewarm", importance=0.6, hit_count=5)
    _report, counts = run(only=["reviews"])
    assert counts["reviews"]["promote_asked"] == 1
    item = PendingItem.objects.get()
    assert (item.reason, item.conflicts_with_id) == ("promotion", hot.pk)
    _report, counts = run(only=["reviews"])
    assert counts["reviews"]["promote_asked"] == 0


def test_confirming_a_promotion_verifies_the_fact():
    from curator.writepath import confirm_pending

    hot = fact("hot", importance=0.95, subject="li", predicate="editor", access_count=2)
    run(only=["reviews"])
    confirm_pending(PendingItem.objects.get().pk)
    hot.refresh_from_db()
    assert hot.verified and hot.status == "active"


def test_attachment_files_past_retention_are_removed_and_records_kept(settings):
    settings.ATTACHMENT_RETENTION_DAYS = 30
    owner = Owner.default()
    old = Attachment.objects.create(owner=owner, original_name="old.txt", size=5,
                                    created_at=timezone.now() - timedelta(days=40))  # fmt: skip
    old.file.save("old.txt", ContentFile(b"hello"))
    new = Attachment.objects.create(owner=owner, original_name="new.txt")
    new.file.save("new.txt", ContentFile(b"hi"))
    path = Path(old.file.path)
    _report, counts = run(only=["attachments"])
    assert counts["attachments"] == {"retention_days": 30, "files": 1, "bytes": 5}
    assert not path.exists() and Attachment.objects.get(pk=old.pk).file.name == ""
    assert Path(Attachment.objects.get(pk=new.pk).file.path).exists()


# -- g. cards -----------------------------------------------------------------------------


def test_memory_and_user_cards_are_refreshed_from_the_facts():
    name = fact("用户叫李雷", type="identity", importance=1.0, priority="permanent")
    fact("喜欢拉面", type="preference", importance=0.7, priority="permanent")
    rule = fact("以后回答用中文", type="rule", importance=0.9, priority="permanent")
    _report, counts = run(only=["cards"])
    memory = cards.read("memory")
    assert f"- [identity] 用户叫李雷 <!-- facts:{name.pk} -->" in memory
    assert f"<!-- facts:{rule.pk} -->" in memory
    assert cards.measure("memory", memory).amount <= 1500
    user = cards.read("user")
    assert f"- 用户叫李雷 <!-- facts:{name.pk} -->" in user
    # The profile order: identity, then preferences, then rules for the assistant.
    assert user.index("用户叫李雷") < user.index("喜欢拉面") < user.index("以后回答用中文")
    assert counts["cards"]["memory_lines"] == 3 and counts["cards"]["user_lines"] == 3


def test_a_card_edited_by_hand_keeps_the_edits_around_the_generated_part():
    fact("用户叫李雷", type="identity", importance=1.0, priority="permanent")
    run(only=["cards"])
    edited = "# About me\n\nWritten by me.\n\n" + cards.read("user") + "\nP.S. by hand\n"
    cards.save("user", edited, "person")
    fact("喜欢拉面", type="preference", importance=0.7, priority="permanent")
    run(only=["cards"])
    user = cards.read("user")
    assert user.startswith("# About me\n\nWritten by me.\n") and "P.S. by hand" in user
    assert "喜欢拉面" in user


def test_memory_md_stays_within_its_limit_with_many_facts():
    for n in range(80):
        fact(f"fact number {n} " + "x" * 60, importance=0.5 + n / 200, priority="permanent",
             type=["fact", "preference", "rule", "skill"][n % 4])  # fmt: skip
    run(only=["cards"])
    memory = cards.read("memory")
    assert 1000 < cards.measure("memory", memory).amount <= 1500
    assert all("<!-- facts:" in line for line in memory.splitlines() if line.startswith("- "))


# -- the run as a whole -------------------------------------------------------------------


def crafted_world():
    turn(session(), "我叫李雷")
    fact("Prefers pytest", days_old=10)
    fact("Prefers pytest", days_old=3)
    fact("idle", days_old=15, importance=0.8)
    fact("expired", expires_at=timezone.now() - timedelta(hours=1))
    fact("hot", importance=0.95, hit_count=2)
    Episode.objects.create(
        owner=Owner.default(), summary="old", ended_at=timezone.now() - timedelta(days=20)
    )


def state():
    return (
        list(Fact.objects.order_by("pk").values_list("status", "importance", "priority")),
        list(Episode.objects.values_list("importance", "tags")),
        MemoryEvent.objects.count(),
        PendingItem.objects.count(),
        CardRevision.objects.count(),
        cards.read("memory"),
        JobRun.objects.count(),
    )


def test_a_dry_run_changes_nothing_and_counts_what_a_run_would_do():
    crafted_world()
    before = state()
    dry, dry_counts = run(dry_run=True)
    assert dry.run is None and state() == before
    _real, counts = run()
    for step in ("dedup", "decay", "expire", "reviews"):
        assert dry_counts[step] == counts[step], step
    assert dry_counts["extract"]["turns"] == counts["extract"]["turns"] == 1


def test_the_run_is_recorded_with_each_steps_counts():
    crafted_world()
    report, counts = run()
    job = JobRun.objects.get()
    assert job.status == RunStatus.SUCCEEDED and job.finished_at >= job.started_at
    assert [s["name"] for s in job.steps] == list(consolidate.STEPS)
    assert counts["dedup"]["merged"] == 1 and counts["expire"]["expired"] == 1
    assert counts["reviews"]["promote_asked"] == 1
    assert all(e.job_run == job.run_id for e in MemoryEvent.objects.filter(actor="job"))


def test_a_failing_step_is_recorded_and_the_others_still_run(monkeypatch):
    fact("expired", expires_at=timezone.now() - timedelta(hours=1))
    monkeypatch.setitem(consolidate.RUNNERS, "dedup", lambda ctx, counts: 1 / 0)
    report, counts = run()
    assert report.run.status == RunStatus.PARTIAL
    assert "ZeroDivisionError" in next(s["error"] for s in report.steps if s["name"] == "dedup")
    assert counts["expire"]["expired"] == 1


def test_a_run_while_another_holds_the_lock_is_skipped():
    assert runs.acquire(consolidate.LOCK, "someone-else")
    report, _counts = run()
    assert report.run.status == RunStatus.SKIPPED and "someone-else" in report.skipped
    runs.release(consolidate.LOCK, "someone-else")
    assert run()[0].run.status == RunStatus.SUCCEEDED


def test_a_stale_lock_of_a_crashed_run_is_taken_over():
    assert runs.acquire(consolidate.LOCK, "crashed", ttl=timedelta(seconds=-1))
    assert run()[0].run.status == RunStatus.SUCCEEDED


def test_undo_of_a_whole_run_restores_facts_episodes_and_cards():
    crafted_world()
    facts_before = dict(Fact.objects.values_list("content", "status"))
    importance_before = dict(Fact.objects.values_list("content", "importance"))
    episodes_before = list(Episode.objects.values_list("importance", "tags"))
    memory_before = cards.read("memory")
    report, _counts = run()
    assert cards.read("memory") != memory_before
    done = undo_run(report.run.run_id)
    assert done.events > 0 and done.episodes == 1 and set(done.cards) == {"memory", "user"}
    assert list(Episode.objects.values_list("importance", "tags")) == episodes_before
    after = dict(Fact.objects.values_list("content", "status"))
    assert after.pop("用户的名字是李雷") == "rejected"  # a creation is withdrawn, never erased
    assert after == facts_before
    assert dict(Fact.objects.exclude(source="rules").values_list("content", "importance")) == (
        importance_before
    )
    assert cards.read("memory") == memory_before
    assert PendingItem.objects.filter(status=PendingStatus.PENDING).count() == 0
    assert JobRun.objects.get().status == RunStatus.UNDONE
    with pytest.raises(UndoRefused):
        undo_run(report.run.run_id)


def test_undo_refuses_when_a_person_changed_a_fact_since():
    idle = fact("idle", days_old=15, importance=0.8)
    report, _counts = run()
    edit_fact(idle.pk, {"importance": 0.9}, actor="person")
    with pytest.raises(UndoRefused):
        undo_run(report.run.run_id)
    assert Fact.objects.get(pk=idle.pk).importance == 0.9
    assert JobRun.objects.get().status == RunStatus.SUCCEEDED


def test_an_unchanged_card_gets_no_new_revision_the_next_night():
    fact("用户叫李雷", type="identity", importance=1.0, priority="permanent")
    run(only=["cards"])
    revisions = CardRevision.objects.count()
    report, _counts = run(only=["cards"], now=timezone.now() + timedelta(minutes=5))
    assert CardRevision.objects.count() == revisions
    assert not any(step.get("cards") for step in report.run.steps)


def test_the_activity_logs_batch_undo_takes_back_a_whole_run(client, owner_user):
    client.force_login(owner_user)
    crafted_world()
    memory_before = cards.read("memory")
    report, _counts = run()
    response = client.post(f"/activity/batch/{report.run.run_id}/undo/", follow=True)
    assert "Undone:" in response.content.decode()
    assert cards.read("memory") == memory_before
    assert JobRun.objects.get().status == RunStatus.UNDONE
