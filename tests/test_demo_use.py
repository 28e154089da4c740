"""The demo looks like a used install: its cards, agents, recalls, contradictions and
calibration come from the same functions a real install's use goes through."""

import io
from collections import Counter

import pytest
from django.core.management import call_command
from django.urls import reverse

from curator import calibration, cards, signals
from curator.models import (
    Actor,
    CardRevision,
    Contradiction,
    ContradictionStatus,
    ConversationTurn,
    Fact,
    FactStatus,
    MemoryEvent,
    Owner,
    PendingItem,
    Session,
)
from curator.writepath import Work
from lifecycle import demo, demo_use, refresh
from memsite.models import ApiToken
from retrieval.models import RecallHit, RecallLog
from tests.archive_helpers import members, wipe
from tests.queue_helpers import run_scheduled

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"


def card_fact_ids(key: str) -> list[int]:
    return cards.generated_fact_ids(cards.read(key))


def test_a_fact_recorded_in_a_unit_of_work_is_announced_like_any_fact_change(
    django_capture_on_commit_callbacks,
):
    fact = Fact.objects.create(owner=Owner.default(), content="李雷住在杭州")
    heard = []

    def listen(sender, fact_ids, **kwargs):
        heard.extend(fact_ids)

    signals.facts_changed.connect(listen)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            work = Work(Owner.default(), Actor.JOB)
            work.record("fact", fact.pk, None, {"status": FactStatus.ACTIVE})
            work.event("write", fact=fact)
    finally:
        signals.facts_changed.disconnect(listen)
    assert heard == [fact.pk]


def test_the_cards_hold_the_demos_facts_and_the_queue_adds_nothing(
    live_queue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        demo.load_demo(index=False)
    live = set(Fact.objects.live().values_list("pk", flat=True))
    for key in ("user", "memory"):
        ids = card_fact_ids(key)
        assert len(ids) >= 10 and set(ids) <= live, key
    revisions = CardRevision.objects.count()
    assert set(CardRevision.objects.values_list("note", flat=True)) == {"live_refresh"}
    assert "refresh_cards" in run_scheduled()  # the refresh the facts' changes queued
    assert CardRevision.objects.count() == revisions  # found the cards up to date


def test_every_agent_action_names_one_of_the_demos_agents(client_in):
    demo.load_demo(index=False)
    agents = {a.pk: a for a in demo_use.demo_agents()}
    assert len(agents) == 3
    chat = ApiToken.objects.get(name="ShiYi 聊天助手")
    assert set(Session.objects.values_list("agent", flat=True)) == {chat.pk}
    assert set(ConversationTurn.objects.values_list("agent", flat=True)) == {chat.pk}
    by_agent = MemoryEvent.objects.filter(actor=Actor.AGENT)
    assert by_agent.count() >= 8
    assert set(by_agent.values_list("agent", flat=True)) <= set(agents)
    assert not MemoryEvent.objects.exclude(actor=Actor.AGENT).exclude(agent=None).exists()
    assert Fact.objects.filter(agent__isnull=False).count() >= 8
    proposals = PendingItem.objects.filter(candidate__source="api")
    assert proposals and all(p.agent_id == p.candidate["token_id"] for p in proposals)
    page = client_in.get(reverse("agents")).content.decode()
    assert all(agent.name in page for agent in agents.values())
    assert "No agents yet" not in page


def test_the_recall_log_accounts_for_every_recall_count():
    demo.load_demo()
    facts = Fact.objects.all()
    hits = Counter(RecallHit.objects.filter(kind="fact").values_list("object_id", flat=True))
    assert sum(hits.values()) >= 40
    for fact in facts:
        assert fact.access_count == hits[fact.pk], fact.content
        if fact.access_count:
            last = RecallLog.objects.filter(hits__kind="fact", hits__object_id=fact.pk).first()
            assert fact.last_accessed_at == last.created_at
            # nothing is recalled before it was written
            first = RecallLog.objects.filter(hits__kind="fact", hits__object_id=fact.pk).last()
            assert first.created_at >= fact.created_at
    for agent in demo_use.demo_agents():
        recalls = RecallLog.objects.filter(agent=agent)
        assert recalls.exists(), agent.name
        assert agent.last_used_at == recalls.first().created_at
    digest = ApiToken.objects.get(name="日报 daily digest")
    read = RecallHit.objects.filter(log__agent=digest, kind="fact").values_list("object_id")
    assert set(Fact.objects.filter(pk__in=read).values_list("scope", flat=True)) == {"project"}


def test_the_contradiction_check_finds_the_demos_pairs(client_in):
    demo.load_demo(index=False)
    found = Contradiction.objects.filter(status=ContradictionStatus.OPEN)
    assert found.count() >= 1 and {c.rule for c in found} <= {"exclusive", "slot", "negation"}
    page = client_in.get(reverse("contradictions")).content.decode()
    assert all(f'id="contradiction-{c.pk}"' in page for c in found)
    # The person's "Look for contradictions now" finds them in the same facts.
    pairs = set(found.values_list("left", "right"))
    Contradiction.objects.all().delete()
    client_in.post(reverse("contradictions_check"))
    assert set(Contradiction.objects.values_list("left", "right")) == pairs


def test_calibration_has_confirmed_and_ignored_items_of_several_sources(client_in):
    demo.load_demo(index=False)
    reports = {r.key: r for r in calibration.report()}
    answered = {
        key: Counter(
            outcome for b in r.buckets for outcome, n in b.review.items() for _ in range(n)
        )
        for key, r in reports.items()
    }
    sources = [k for k, seen in answered.items() if seen["confirmed"] and seen["ignored"]]
    assert len(sources) >= 3, answered
    assert any(seen["edited"] for seen in answered.values())
    written = {k: sum(b.written for b in r.buckets) for k, r in reports.items()}
    assert sum(1 for n in written.values() if n) >= 4
    assert any(b.auto["corrected"] for r in reports.values() for b in r.buckets)
    page = client_in.get(reverse("calibration")).content.decode()
    assert "ShiYi 聊天助手" in page and "coding agent" in page


def test_an_export_after_the_demo_holds_its_cards_and_importing_it_writes_no_revision(
    tmp_path, settings
):
    demo.load_demo(index=False)
    path = tmp_path / "demo.zip"
    call_command("export", str(path), stdout=io.StringIO())
    files = members(path)
    texts = {key: cards.read(key) for key in ("user", "memory")}
    assert files["files/memory/shared/User.md"].decode() == texts["user"]
    assert files["files/memory/shared/MEMORY.md"].decode() == texts["memory"]
    revisions = sorted(CardRevision.objects.values_list("card", "content"))

    wipe()
    settings.MEMORY_DIR = tmp_path / "fresh"
    call_command("import", str(path), stdout=io.StringIO())
    refresh.refresh_cards(demo.timezone.now(), {}, note="live_refresh")  # what the queue runs

    assert sorted(CardRevision.objects.values_list("card", "content")) == revisions
    assert {key: cards.read(key) for key in texts} == texts
