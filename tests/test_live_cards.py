"""Live cards: every change of a fact refreshes User.md and MEMORY.md within seconds, once per
burst, keeping the person's text, never repeating a line, in the profile's priority order."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator import cards, onboarding, profile
from curator import writepath as wp
from curator.models import CardRevision, Fact, Owner
from curator.undo import undo_event
from lifecycle import consolidate, tasks
from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from tests.lifecycle_helpers import fact
from tests.queue_helpers import run_scheduled

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"


def propose(content, **fields):
    fields.setdefault("confidence", 0.95)
    return wp.propose(wp.Candidate(content=content, **fields), actor="agent")


def live_revisions() -> int:
    return CardRevision.objects.filter(card="user", note="live_refresh").count()


def test_a_burst_of_changes_gives_one_refresh_after_the_last(
    live_queue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        for city in ("Munich", "Vienna", "Berlin"):
            propose(f"lives in {city}", subject="user", predicate="location")
        propose("likes hiking", type="preference")
    assert live_queue.scheduled_count() == 1  # one refresh waiting, not one per change
    assert "Berlin" not in cards.read("user")

    ran = run_scheduled()

    assert ran.count("refresh_cards") >= 1
    assert live_revisions() == 1
    user = cards.read("user")
    assert "lives in Berlin" in user and "likes hiking" in user
    assert "Munich" not in user  # superseded: only the current value is in the card


def test_a_change_after_the_refresh_schedules_another(
    live_queue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = propose("likes hiking", type="preference").fact
    run_scheduled()
    with django_capture_on_commit_callbacks(execute=True):
        wp.archive_fact(first.pk, actor="person")
    run_scheduled()
    assert live_revisions() == 2
    assert "likes hiking" not in cards.read("user")


@pytest.mark.parametrize("action", ["edit", "archive", "delete", "undo", "confirm"])
def test_every_change_a_card_is_built_from_refreshes_it(
    action, live_queue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        written = propose("lives in Munich", subject="user", predicate="location")
        waiting = propose("my daughter is called Mia", confidence=0.7)
    run_scheduled()
    assert "lives in Munich" in cards.read("user")
    with django_capture_on_commit_callbacks(execute=True):
        if action == "edit":
            wp.edit_fact(written.fact.pk, {"content": "lives in Hamburg"}, actor="person")
        elif action == "archive":
            wp.archive_fact(written.fact.pk, actor="person")
        elif action == "delete":
            wp.delete_fact(written.fact.pk, actor="person")
        elif action == "undo":
            undo_event(written.event.pk, actor="person")
        else:
            wp.confirm_pending(waiting.pending.pk)
    run_scheduled()
    user = cards.read("user")
    if action == "confirm":
        assert "my daughter is called Mia" in user
    else:
        assert "lives in Munich" not in user
    assert ("lives in Hamburg" in user) == (action == "edit")


def test_a_merge_and_an_onboarding_refresh_the_cards_too(
    live_queue, django_capture_on_commit_callbacks, tmp_path, settings
):
    Fact.objects.create(owner=Owner.default(), content="用户住在杭州", predicate="location")
    path = tmp_path / "one.zip"
    archive.export(path)
    Fact.objects.all().delete()
    settings.MEMORY_DIR = tmp_path / "fresh"
    Fact.objects.create(owner=Owner.default(), content="用户喜欢乌龙茶")  # memory here: a merge
    with django_capture_on_commit_callbacks(execute=True):
        assert imp.import_archive(path, reindex=False).mode == imp.MERGE
    run_scheduled()
    assert "用户住在杭州" in cards.read("user")
    answers = {"assistant_name": "十一", "positioning": "搭档", "address": "小李", "tech": "Go"}
    with django_capture_on_commit_callbacks(execute=True):
        assert onboarding.submit(answers).ok
    run_scheduled()
    user = cards.read("user")
    assert "用户住在杭州" in user and "小李" in user and live_revisions() == 2


def test_a_restore_brings_the_cards_as_the_archive_has_them(
    live_queue, django_capture_on_commit_callbacks, tmp_path, settings
):
    """Export -> restore -> export gives the same records: no card revision the archive lacks."""
    Fact.objects.create(owner=Owner.default(), content="用户住在杭州", predicate="location")
    path = tmp_path / "one.zip"
    archive.export(path)  # before the live refresh wrote User.md: the archive has no card
    Fact.objects.all().delete()
    settings.MEMORY_DIR = tmp_path / "fresh"
    with django_capture_on_commit_callbacks(execute=True):
        assert imp.import_archive(path, reindex=False).mode == imp.RESTORE
    run_scheduled()
    assert live_revisions() == 0 and not (tmp_path / "fresh").exists()


def test_the_persons_own_text_stays_and_no_line_is_said_twice():
    answers = {
        "assistant_name": "十一",
        "positioning": "务实的工程搭档",
        "address": "小李",
        "background": "杭州的后端工程师",
        "tech": "Python\n- Django",
    }
    assert onboarding.submit(answers).ok
    cards.save("user", cards.read("user") + "\nWritten by me.\n", "person")
    fact("用户的女儿叫米娅", predicate="family: daughter", importance=0.8)
    for minutes in (0, 5):  # two consolidations in a row
        consolidate.run(only=["cards"], now=timezone.now() + timedelta(minutes=minutes))
    user = cards.read("user")
    assert "Written by me." in user and "用户的女儿叫米娅" in user
    keys = [cards.line_key(line) for line in user.splitlines() if line.startswith("- ")]
    assert len(keys) == len(set(keys)), user  # the onboarding answers are not repeated


@pytest.mark.parametrize(
    "held, fact_text, repeated",
    [
        ("- **Address as**: Li", "Address as: Li", True),
        ("- **称呼**：小李", "称呼: 小李", True),
        ("## Tech preferences\n- Python\n- Django", "Tech preferences: Python; Django", True),
        ("- Lives in Munich with Anna and Mia", "The user lives in Munich", True),
        ("- 用户住在杭州", "用户住在杭州。", True),
        ("- Lives in Munich", "The user's daughter is called Mia", False),
        ("- 住在杭州", "住在北京", False),
    ],
)
def test_a_repeat_is_recognised_on_normalised_text(held, fact_text, repeated):
    assert cards.repeats(fact_text, cards.held_lines(held)) is repeated


def test_the_user_card_follows_the_profile_order():
    plan_facts = [
        ("plans to visit Japan next spring", {"predicate": "plan: japan"}),
        ("always answer in English", {"type": "rule"}),
        ("does not eat coriander", {"predicate": "preference: coriander"}),
        ("works at Siemens as an engineer", {"predicate": "employer"}),
        ("the user's daughter is called Mia", {"predicate": "family: daughter"}),
        ("lives in Munich", {"predicate": "location"}),
        ("wants to be called Li", {"predicate": "address as", "type": "identity"}),
        ("once debugged a flaky test for a day", {"type": "experience"}),
    ]
    for content, fields in plan_facts:
        fact(content, **fields)
    text = profile.plan(timezone.now()).text
    found = [text.index(content) for content, _ in plan_facts[:-1]]
    assert found == sorted(found, reverse=True)  # listed here lowest priority first
    assert "flaky test" not in text  # an experience is not part of a profile


def test_what_does_not_fit_is_cut_with_the_reason(settings):
    settings.CARDS_TOKEN_BUDGET = 60
    fact("wants to be called Li", predicate="address as", type="identity", importance=0.9)
    fact("lives in Munich", predicate="location")
    for n in range(12):
        fact(f"plans trip number {n} to a faraway place", predicate=f"plan: trip {n}")
    plan = profile.plan(timezone.now())
    assert "wants to be called Li" in plan.text and "lives in Munich" in plan.text
    assert plan.cut and all(c.section == "plans" for c in plan.cut)
    assert all(c.limit == "tokens" and "60" in c.reason for c in plan.cut)


def test_the_injected_preview_lists_what_was_cut(client_in, settings):
    settings.CARDS_TOKEN_BUDGET = 60
    for n in range(12):
        fact(f"plans trip number {n} to a faraway place", predicate=f"plan: trip {n}")
    cut = profile.plan(timezone.now()).cut
    page = client_in.get("/cards/injected/").content.decode()
    assert "Left out of User.md" in page and cut
    assert all(f'data-cut="{c.fact.pk}"' in page for c in cut)
    assert cut[0].fact.content in page and "tokens" in page


def test_nothing_changed_means_no_refresh(live_queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        propose("likes hiking", type="preference")
    run_scheduled()
    tasks.refresh_cards()  # a stray task with nothing new does nothing
    assert live_revisions() == 1
    assert Fact.objects.count() == 1 and Owner.objects.count() == 1
