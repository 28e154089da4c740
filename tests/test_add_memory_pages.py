"""The person's own memories from the pages: Add a memory (Facts, the navigation) and Delete
for good from a fact's page, with its confirmation and undo window. Without JavaScript."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator import writepath as wp
from curator.models import EventType, Fact, FactStatus, MemoryEvent
from curator.undo import undo_event

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return response.content.decode()


def test_facts_and_the_navigation_lead_to_the_form(client_in):
    assert 'href="/facts/new/"' in text(client_in.get("/facts/"))
    assert 'href="/facts/new/"' in text(client_in.get("/"))
    page = text(client_in.get("/facts/new/"))
    assert 'name="content"' in page and "Save the memory" in page


def test_a_memory_added_by_the_person_is_written_verified_with_an_undo(client_in):
    response = client_in.post(
        "/facts/new/",
        {"content": "我住在杭州", "type": "fact", "scope": "user", "tags": "home, 城市"},
    )
    fact = Fact.objects.get()
    assert response.status_code == 302
    assert response["Location"].startswith(f"/facts/{fact.pk}/?done=")
    assert fact.verified and fact.source == "manual" and fact.status == FactStatus.ACTIVE
    assert fact.tags == ["home", "城市"]
    event = MemoryEvent.objects.get(fact=fact, event_type=EventType.WRITE)
    assert event.actor == "person"
    page = text(client_in.get(response["Location"]))
    assert "我住在杭州" in page and "Undo" in page


def test_the_person_may_write_their_own_phone_number(client_in):
    client_in.post("/facts/new/", {"content": "我的手机号是13812345678", "type": "fact",
                                   "scope": "user"})  # fmt: skip
    assert Fact.objects.get().content == "我的手机号是13812345678"


def test_a_secret_is_refused_on_the_form_with_the_rule(client_in):
    key = "sk-proj-pLIix6MEOLeMa61EqJomTEI1JEzO3joOj37HyVaQXekW9Lct"
    response = client_in.post(
        "/facts/new/", {"content": f"my key is {key}", "type": "fact", "scope": "user"}
    )
    assert response.status_code == 400
    assert "API keys and access tokens" in text(response)
    assert not Fact.objects.exists()


def test_an_empty_memory_is_refused_with_a_readable_message(client_in):
    response = client_in.post("/facts/new/", {"content": "", "type": "fact", "scope": "user"})
    assert response.status_code == 400 and "This field is required" in text(response)


def test_the_form_reads_in_chinese(client_in):
    client_in.cookies["django_language"] = "zh-hans"
    page = text(client_in.get("/facts/new/", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "添加记忆" in page and "保存这条记忆" in page


def _fact(content="my bank pin hint is the cat") -> Fact:
    return wp.propose(wp.Candidate(content=content), actor="person").fact


def test_delete_for_good_asks_first_then_deletes_with_an_undo(client_in):
    fact = _fact()
    assert f'href="/facts/{fact.pk}/delete-for-good/"' in text(client_in.get(f"/facts/{fact.pk}/"))
    page = text(client_in.get(f"/facts/{fact.pk}/delete-for-good/"))
    assert "Delete fact" in page and "10 minutes" in page
    fact.refresh_from_db()
    assert fact.status == FactStatus.ACTIVE  # asking changed nothing
    response = client_in.post(f"/facts/{fact.pk}/delete-for-good/")
    fact.refresh_from_db()
    assert fact.status == FactStatus.ARCHIVED
    banner = text(client_in.get(response["Location"]))
    assert "goes for good" in banner and "Undo" in banner


def test_it_is_purged_once_the_window_is_over_text_in_the_log_included():
    fact = _fact()
    wp.delete_for_good(fact.pk, after=timedelta(minutes=10))
    assert wp.purge_due() == []  # still inside the window
    later = timezone.now() + timedelta(minutes=11)
    assert wp.purge_due(later) == [fact.pk]
    assert not Fact.objects.filter(pk=fact.pk).exists()
    logged = " ".join(str(e.payload) for e in MemoryEvent.objects.all())
    assert "pin hint is the cat" not in logged


def test_undoing_it_within_the_window_keeps_the_fact():
    fact = _fact()
    event = wp.delete_for_good(fact.pk, after=timedelta(minutes=10))
    undo_event(event.pk)
    assert wp.purge_due(timezone.now() + timedelta(days=1)) == []
    fact.refresh_from_db()
    assert fact.status == FactStatus.ACTIVE


def test_an_archived_fact_can_be_deleted_for_good_and_undone_too():
    fact = _fact()
    wp.archive_fact(fact.pk, actor="person")
    event = wp.delete_for_good(fact.pk, after=timedelta(minutes=10))
    undo_event(event.pk)  # cancels the purge
    assert wp.purge_due(timezone.now() + timedelta(days=1)) == []
    assert Fact.objects.get(pk=fact.pk).status == FactStatus.ARCHIVED
    wp.delete_for_good(fact.pk, after=timedelta(minutes=10))
    assert wp.purge_due(timezone.now() + timedelta(days=1)) == [fact.pk]


def test_a_restored_fact_is_not_purged():
    fact = _fact()
    wp.delete_for_good(fact.pk, after=timedelta(minutes=10))
    wp.restore_fact(fact.pk, actor="person")
    assert wp.purge_due(timezone.now() + timedelta(days=1)) == []


def test_the_confirmation_reads_in_chinese(client_in):
    fact = _fact()
    client_in.cookies["django_language"] = "zh-hans"
    page = text(client_in.get(f"/facts/{fact.pk}/delete-for-good/", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "彻底删除" in page and "撤销" in page
