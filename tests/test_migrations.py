"""Migrations go forward and backward, virtual tables included."""

import pytest
from django.core.management import call_command
from django.db import connection


def _tables():
    with connection.cursor() as cur:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in cur.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_search_tables_can_be_migrated_back_and_forth():
    assert {"search_fts", "search_vec", "curator_fact"} <= _tables()
    call_command("migrate", "retrieval", "0001", verbosity=0)
    assert not {"search_fts", "search_vec"} & _tables()
    call_command("migrate", "retrieval", verbosity=0)
    assert {"search_fts", "search_vec"} <= _tables()


@pytest.mark.django_db(transaction=True)
def test_every_app_migrates_to_zero_and_back():
    call_command("migrate", "curator", "zero", verbosity=0)
    assert "curator_fact" not in _tables()
    call_command("migrate", verbosity=0)
    assert "curator_fact" in _tables()


def test_models_and_migrations_agree(db):
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db(transaction=True)
def test_upgrading_the_keyword_index_fills_each_turns_context():
    from curator.models import Owner
    from retrieval.models import SearchDoc
    from retrieval.text import segment
    from tests.search_helpers import session, turn

    chat = session(Owner.default())
    turn(chat, "Where did you spend your holiday?")
    answer = turn(chat, "Kyoto, for two weeks.")
    call_command("migrate", "retrieval", "0004", verbosity=0)
    call_command("migrate", "retrieval", verbosity=0)
    doc = SearchDoc.objects.get(kind="turn", object_id=answer.pk)
    with connection.cursor() as cur:
        cur.execute("SELECT tokens, context FROM search_fts WHERE rowid = %s", [doc.pk])
        row = cur.fetchone()
    assert row == (segment("Kyoto, for two weeks."), segment("Where did you spend your holiday?"))


def test_events_from_before_changes_existed_gain_the_changes_undo_reads(db):
    import importlib

    from django.apps import apps

    from curator.models import EventType, FactStatus, MemoryEvent, Owner
    from curator.undo import undo_event
    from tests.search_helpers import fact

    migration = importlib.import_module("curator.migrations.0006_events_carry_changes")
    owner = Owner.default()
    old = fact(owner, "喜欢喝咖啡")
    new = fact(owner, "喜欢喝茶")
    FactModel = type(old)
    FactModel.objects.filter(pk=old.pk).update(status=FactStatus.SUPERSEDED)
    before = {"id": old.pk, "content": old.content, "status": "active"}
    after = {"id": new.pk, "content": new.content, "status": "active"}
    event = MemoryEvent.objects.create(
        owner=owner,
        event_type=EventType.SUPERSEDE,
        actor="agent",
        fact=new,
        payload={"before": before, "after": after},
    )
    migration.add_changes(apps, None)
    event.refresh_from_db()
    assert event.payload["changes"] == [
        {
            "kind": "fact",
            "id": old.pk,
            "before": {"status": "active"},
            "after": {"status": "superseded"},
        }
    ]
    undo_event(event.pk)
    assert FactModel.objects.get(pk=old.pk).status == FactStatus.ACTIVE


@pytest.mark.django_db(transaction=True)
def test_the_blocked_log_keeps_its_agents_when_it_gains_a_foreign_key():
    from curator.models import GuardHit, Owner
    from memsite.core.tokens import create_token

    owner = Owner.default()
    token, _ = create_token("laptop")
    call_command("migrate", "curator", "0011", verbosity=0)
    with connection.cursor() as cur:
        for agent in (token.pk, token.pk + 1000, None):  # an agent, a deleted one, none
            cur.execute(
                "INSERT INTO curator_guardhit (owner_id, rule_name, action, source, actor, "
                "agent_token_id, excerpt, created_at) "
                "VALUES (%s, 'secrets', 'blocked', 'api', 'agent', %s, '', '2026-11-01')",
                [owner.pk, agent],
            )
    call_command("migrate", "curator", verbosity=0)
    agents = list(GuardHit.objects.order_by("pk").values_list("agent_id", flat=True))
    assert agents == [token.pk, None, None]


@pytest.mark.django_db(transaction=True)
def test_untouched_personal_data_detectors_are_switched_to_review_on_upgrade():
    from curator.models import GuardRule, Owner

    owner = Owner.default()
    call_command("migrate", "curator", "0012", verbosity=0)
    rows = [  # detector, enabled, seconds between created and updated (a change by the person)
        ("email", 0, 0),
        ("phone", 0, 0),
        ("resident_id", 1, 60),  # switched on by the person: keeps blocking
        ("bank_card", 0, 600),  # switched off again by the person: stays off
        ("api_key", 1, 0),
    ]
    with connection.cursor() as cur:
        for detector, enabled, later in rows:
            cur.execute(
                "INSERT INTO curator_guardrule (owner_id, name, detector, words, pattern, "
                "fact_types, scopes, agents, enabled, redact_turns, created_at, updated_at) "
                "VALUES (%s, %s, %s, '[]', '', '[]', '[]', '[]', %s, 0, "
                "'2026-11-01 10:00:00', datetime('2026-11-01 10:00:00', %s))",
                [owner.pk, detector, detector, enabled, f"+{later} seconds"],
            )
    call_command("migrate", "curator", verbosity=0)
    state = {r.detector: (r.enabled, r.action) for r in GuardRule.objects.all()}
    assert state["email"] == (True, "review") and state["phone"] == (True, "review")
    assert state["resident_id"] == (True, "block")
    assert state["bank_card"] == (False, "block")
    assert state["api_key"] == (True, "block")
