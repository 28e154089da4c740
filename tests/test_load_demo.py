"""`manage.py load_demo`: a populated, recognisable, idempotent demo that spares real data."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from curator.models import (
    Attachment,
    ConversationTurn,
    Episode,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
    Owner,
    PendingItem,
    Scratchpad,
    Session,
    expiry_for,
)
from lifecycle import demo

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_indexing(monkeypatch):
    """Keep these tests about the demo itself; the indexer has its own tests (the recalls,
    which need the index, are tested in test_demo_use.py)."""
    monkeypatch.setattr(demo, "index_search", lambda: 7)
    monkeypatch.setattr(demo.demo_use, "recall", lambda *args: 0)


def run(*args: str) -> str:
    out = StringIO()
    call_command("load_demo", *args, stdout=out)
    return out.getvalue()


def counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (
            Fact,
            PendingItem,
            Session,
            ConversationTurn,
            Episode,
            Attachment,
            MemoryEvent,
            Scratchpad,
        )
    }


def test_facts_cover_types_scopes_and_stay_mostly_live():
    run()
    facts = Fact.objects.all()
    assert set(demo.demo_facts(Owner.default())) == set(facts)
    # the demo's own rows, and what its answered review items wrote from their sources
    assert {f.source for f in facts} == {"demo", "llm", "rules", "api", "consolidation"}
    assert {"identity", "preference", "rule", "skill", "error", "fact", "constraint"} <= {
        f.type for f in facts
    }
    assert {"user", "project", "insight", "system"} <= {f.scope for f in facts}
    assert all(0.6 <= f.confidence <= 1.0 for f in facts)
    assert all(f.expires_at == expiry_for(f.priority, f.created_at) for f in facts)
    assert {True, False} <= {f.verified for f in facts}
    assert Fact.objects.live().count() >= 20


def test_at_least_two_supersede_chains_with_events():
    run()
    newer = Fact.objects.filter(supersedes__isnull=False)
    assert newer.count() >= 2
    for fact in newer:
        old = fact.supersedes
        assert old.status == FactStatus.SUPERSEDED
        assert (old.subject, old.predicate) == (fact.subject, fact.predicate)
        event = MemoryEvent.objects.get(event_type=EventType.SUPERSEDE, fact=fact)
        assert event.payload["before"]["content"] == old.content
        assert event.payload["after"]["content"] == fact.content
        assert event.actor in {"person", "agent"}
    heads = [f for f in Fact.objects.active() if f.supersedes_id]
    chains = [f.chain() for f in heads]
    assert len(chains) >= 2
    assert max(len(c) for c in chains) >= 3  # the editor: VS Code -> Neovim -> Helix
    assert all(f.status == FactStatus.SUPERSEDED for c in chains for f in c[:-1])


def test_every_fact_has_a_write_event_at_its_creation():
    run()
    for item in PendingItem.objects.filter(status="confirmed"):
        event = MemoryEvent.objects.get(event_type=EventType.CONFIRM, pending=item)
        assert event.fact == item.resulting_fact
        assert event.created_at == item.resulting_fact.created_at > item.created_at
    for fact in Fact.objects.filter(source="demo"):
        event = MemoryEvent.objects.get(event_type=EventType.WRITE, fact=fact)
        assert event.created_at == fact.created_at
        assert event.payload["after"]["content"] == fact.content
        assert {"subject", "predicate", "type", "confidence"} <= event.payload["after"].keys()
    actors = set(MemoryEvent.objects.filter(event_type="write").values_list("actor", flat=True))
    assert actors == {"person", "agent", "job"}


def test_review_queue_and_dropped_candidate():
    run()
    items = PendingItem.objects.filter(status="pending")
    assert 4 <= items.count() <= 5
    assert {"low_confidence", "conflict", "deletion"} <= {i.reason for i in items}
    for item in items.filter(reason="conflict"):
        assert item.conflicts_with.status == FactStatus.ACTIVE
        assert item.candidate["content"] != item.conflicts_with.content
        assert item.candidate["predicate"] == item.conflicts_with.predicate
    deletion = items.get(reason="deletion")
    assert deletion.candidate["fact_id"] == deletion.conflicts_with_id
    queued = MemoryEvent.objects.filter(event_type="pending")
    assert queued.count() == PendingItem.objects.count()
    assert set(queued.values_list("pending", flat=True)) == set(
        PendingItem.objects.values_list("pk", flat=True)
    )
    drop = MemoryEvent.objects.get(event_type="drop")
    assert drop.payload["confidence"] == 0.4


def test_sessions_turns_and_episode():
    run()
    sessions = Session.objects.filter(external_id__startswith="demo-")
    assert sessions.count() == 2
    for session in sessions:
        turns = list(session.turns.order_by("turn_index"))
        assert [t.turn_index for t in turns] == list(range(len(turns)))
        assert len(turns) >= 8
        times = [t.timestamp for t in turns]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert {t.role for t in turns} == {"user", "assistant"}
        assert all(t.token_estimate > 0 for t in turns)
    assert (
        ConversationTurn.objects.exclude(tool_calls=None)
        .filter(tool_results__isnull=False)
        .exists()
    )

    ended = sessions.get(ended_at__isnull=False)
    episode = Episode.objects.get(session=ended)
    assert episode.summary and episode.goal
    assert set(ended.turns.values_list("episode", flat=True)) == {episode.pk}
    assert all(ended.turns.values_list("extracted", flat=True))
    assert episode.linked_facts.count() >= 2
    assert episode.action_nodes
    for node in episode.action_nodes:
        assert {"tool_name", "key_params", "result_summary", "success", "timestamp"} <= set(node)
    assert set(episode.tools_used) == {n["tool_name"] for n in episode.action_nodes}

    ongoing = sessions.get(ended_at__isnull=True)
    assert not Episode.objects.filter(session=ongoing).exists()
    assert not all(ongoing.turns.values_list("extracted", flat=True))


def test_attachments_and_scratchpad():
    run()
    names = set(Attachment.objects.values_list("original_name", flat=True))
    assert {"架构草图.png", "meeting-notes.pdf"} <= names
    for attachment in Attachment.objects.all():
        assert not attachment.file
        assert attachment.mime_type and attachment.size > 0
        assert attachment.description or attachment.extracted_text
    assert {a.direction for a in Attachment.objects.all()} == {"inbound", "outbound"}
    pad = Scratchpad.objects.get(owner=Owner.default())
    assert pad.content.startswith("##")
    assert pad.current_focus and pad.active_projects and pad.open_questions and pad.next_steps


def test_second_run_changes_nothing():
    run()
    before = counts()
    out = run()
    assert counts() == before
    assert "already" in out


def test_reset_replaces_demo_and_keeps_the_persons_data():
    run()
    before = counts()
    owner = Owner.default()
    demo_city = Fact.objects.get(source="demo", predicate="居住城市", status="active")
    own = Fact.objects.create(owner=owner, content="I like tea", source="manual")
    own_update = Fact.objects.create(
        owner=owner,
        content="李雷搬到了苏州",
        subject="李雷",
        predicate="居住城市",
        source="manual",
        supersedes=demo_city,
    )
    own_session = Session.objects.create(owner=owner, external_id="chat-42")
    ConversationTurn.objects.create(session=own_session, turn_index=0, role="user", content="hi")
    own_event = MemoryEvent.objects.create(
        owner=owner, event_type="write", actor="person", fact=own, operation_id="op-own-1"
    )

    out = run("--reset")

    assert Fact.objects.filter(pk__in=[own.pk, own_update.pk]).count() == 2
    own_update.refresh_from_db()
    assert own_update.supersedes_id is None  # the demo fact it replaced is gone, it is not
    assert Session.objects.filter(pk=own_session.pk).exists()
    assert own_session.turns.count() == 1
    assert MemoryEvent.objects.filter(pk=own_event.pk).exists()
    after = counts()
    assert after["Fact"] == before["Fact"] + 2
    assert after["Session"] == before["Session"] + 1
    assert after["MemoryEvent"] == before["MemoryEvent"] + 1
    assert "Removed previous demo" in out


def test_reset_keeps_an_edited_scratchpad():
    owner = Owner.default()
    Scratchpad.objects.create(owner=owner, content="my own notes")
    run()
    run("--reset")
    assert Scratchpad.objects.get(owner=owner).content == "my own notes"


def test_onboarding_and_users_untouched():
    owner = Owner.default()
    run()
    owner.refresh_from_db()
    assert owner.identity_confirmed is False
    assert owner.display_name == ""
    assert get_user_model().objects.count() == 0


def test_output_lists_counts():
    out = run()
    assert f"facts: {Fact.objects.count()}" in out
    assert f"pending: {PendingItem.objects.filter(status='pending').count()}" in out
    assert f"answered: {PendingItem.objects.exclude(status='pending').count()}" in out
    assert f"turns: {ConversationTurn.objects.count()}" in out
    assert f"events: {MemoryEvent.objects.count()}" in out
    assert "sessions: 2" in out and "episodes: 1" in out and "attachments: 2" in out
    assert "Indexed 7 search documents" in out
