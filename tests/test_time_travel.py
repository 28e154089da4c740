"""Time travel: what the assistant knew at a moment, rebuilt from the event log."""

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from curator import timetravel
from curator import writepath as wp
from curator.models import ConversationTurn, Fact, FactStatus, MemoryEvent, Owner, Session
from retrieval.context import assemble
from retrieval.models import RecallLog
from retrieval.search import search
from tests.api_helpers import assert_error
from tests.search_helpers import episode, turn

DAY1 = timezone.make_aware(datetime(2026, 3, 1, 9, 0))
DAY2 = DAY1 + timedelta(days=1)
DAY3 = DAY1 + timedelta(days=2)
DAY4 = DAY1 + timedelta(days=3)


def backdate(fact_id: int, when: datetime) -> None:
    """The fact and the events that wrote it happened at `when` (the write path uses now)."""
    Fact.objects.filter(pk=fact_id).update(created_at=when)
    MemoryEvent.objects.filter(fact_id=fact_id).update(created_at=when)


def propose(content: str, when: datetime, **kw) -> Fact:
    kw = {
        "subject": "user",
        "predicate": "lives_in",
        "confidence": 0.95,
        "priority": "permanent",
        **kw,
    }
    result = wp.propose(wp.Candidate(content=content, **kw), actor="agent")
    backdate(result.fact.pk, when)
    return result.fact


@pytest.fixture
def moved(db, django_capture_on_commit_callbacks):
    """Lives in Berlin from day 1; moved to Munich on day 3 (a supersede)."""
    with django_capture_on_commit_callbacks(execute=True):  # indexing runs after commit
        berlin = propose("The user lives in Berlin", DAY1)
        munich = propose("The user moved to Munich", DAY3)
    berlin.refresh_from_db()
    assert berlin.status == FactStatus.SUPERSEDED and munich.supersedes_id == berlin.pk
    return berlin, munich


def test_the_state_at_a_moment_takes_later_changes_back(moved):
    berlin, munich = moved
    then = timetravel.states_at(DAY2)
    assert then[berlin.pk]["status"] == FactStatus.ACTIVE
    assert munich.pk not in then  # written afterwards
    assert set(timetravel.active_at(DAY4)) == {munich.pk}


def test_each_version_knows_when_it_was_active(moved):
    berlin, munich = moved
    lives = timetravel.lifetimes([berlin, munich])
    [first] = lives[berlin.pk].intervals
    assert (first.start, first.end, first.ended_by) == (DAY1, DAY3, "superseded")
    [second] = lives[munich.pk].intervals
    assert second.start == DAY3 and second.end is None
    assert lives[berlin.pk].active_at(DAY2) and not lives[munich.pk].active_at(DAY2)


def test_an_in_place_edit_is_read_back_as_the_old_text(db):
    fact = propose("Drinks oolong tea", DAY1, subject="", predicate="")
    edit_at = DAY3
    wp.edit_fact(fact.pk, {"content": "Drinks green tea"}, actor="person")
    MemoryEvent.objects.filter(fact=fact, event_type="update").update(created_at=edit_at)
    assert timetravel.states_at(DAY2)[fact.pk]["content"] == "Drinks oolong tea"
    assert timetravel.states_at(DAY4)[fact.pk]["content"] == "Drinks green tea"
    [interval] = timetravel.lifetime(Fact.objects.get(pk=fact.pk)).intervals
    assert interval.end is None  # an edit does not end the version


def test_a_fact_stops_being_active_at_its_expiry_before_the_job_marks_it(db):
    fact = propose(
        "Has a dentist appointment", DAY1, subject="", predicate="", priority=None, duration="24h"
    )
    Fact.objects.filter(pk=fact.pk).update(expires_at=DAY2)
    [interval] = timetravel.lifetime(Fact.objects.get(pk=fact.pk)).intervals
    assert (interval.end, interval.ended_by) == (DAY2, "expired")
    assert fact.pk in timetravel.active_at(DAY1 + timedelta(hours=1))
    assert fact.pk not in timetravel.active_at(DAY2 + timedelta(hours=1))


def test_an_archived_and_restored_fact_has_two_intervals(db):
    fact = propose("Plays the piano", DAY1, subject="", predicate="")
    wp.archive_fact(fact.pk, actor="person")
    MemoryEvent.objects.filter(fact=fact, event_type="archive").update(created_at=DAY2)
    wp.restore_fact(fact.pk, actor="person")
    MemoryEvent.objects.filter(fact=fact, event_type="update").update(created_at=DAY3)
    life = timetravel.lifetime(Fact.objects.get(pk=fact.pk))
    assert [(i.start, i.end, i.ended_by) for i in life.intervals] == [
        (DAY1, DAY2, "archived"),
        (DAY3, None, ""),
    ]
    assert not life.active_at(DAY2 + timedelta(hours=1))


# -- search and context ------------------------------------------------------------------


def test_search_as_of_returns_the_version_active_then(moved):
    berlin, munich = moved
    then = search("where does the user live Berlin Munich", as_of=DAY2, record=False)
    assert [i.id for i in then.items if i.kind == "fact"] == [berlin.pk]
    assert then.items[0].content == "The user lives in Berlin"
    now = search("where does the user live Berlin Munich", record=False)
    assert [i.id for i in now.items if i.kind == "fact"] == [munich.pk]


def test_search_as_of_leaves_out_turns_and_episodes_recorded_later(db):
    owner = Owner.default()
    chat = Session.objects.create(owner=owner, external_id="s-then")
    early = turn(chat, "we talked about the orchard release", when=DAY1)
    turn(chat, "the orchard release slipped again", when=DAY3)
    episode(owner, "orchard release retrospective", when=DAY3)
    found = search("orchard release", as_of=DAY2, record=False)
    assert [(i.kind, i.id) for i in found.items] == [("turn", early.pk)]


def test_a_search_as_of_is_not_logged_as_a_recall(moved):
    search("Berlin", as_of=DAY2)
    assert not RecallLog.objects.exists()


def test_context_as_of_holds_the_old_version(moved):
    result = assemble("Do you remember where I live?", as_of=DAY2, evidence_mode="always")
    assert "The user lives in Berlin" in result.text
    assert "Munich" not in result.text


def test_context_as_of_shows_the_session_turns_before_then(db):
    owner = Owner.default()
    chat = Session.objects.create(owner=owner, external_id="chat-7")
    for n, when in enumerate((DAY1, DAY3)):
        ConversationTurn.objects.create(
            session=chat, turn_index=n, role="user", content=f"turn {n}", timestamp=when
        )
    result = assemble("hello", session_id="chat-7", as_of=DAY2, record=False)
    turns = next(s for s in result.sections if s.name == "turns")
    assert [i["turn_index"] for i in turns.items] == [0]


# -- the API -----------------------------------------------------------------------------


def test_api_lists_the_memories_active_on_day_2(api, moved):
    berlin, munich = moved
    response = api.get("/memories", {"as_of": DAY2.isoformat()})
    assert response.status_code == 200, response.content
    body = response.json()
    assert [item["id"] for item in body["items"]] == [berlin.pk]
    assert body["items"][0]["status"] == "active"  # as it was then (superseded today)
    assert body["count"] == 1
    today = api.get("/memories").json()
    assert [item["id"] for item in today["items"]] == [munich.pk]


def test_api_context_as_of_day_2_holds_the_first_version(api, moved):
    response = api.post(
        "/context",
        {"query": "Do you remember where I live?", "as_of": DAY2.isoformat(), "evidence": "always"},
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert "The user lives in Berlin" in body["text"]
    assert "The user moved to Munich" not in body["text"]
    assert body["as_of"].startswith("2026-03-02")


def test_api_search_as_of_day_2(api, moved):
    berlin, _ = moved
    response = api.post("/search", {"query": "user lives Berlin Munich", "as_of": "2026-03-02"})
    assert response.status_code == 200, response.content
    assert [r["id"] for r in response.json()["results"] if r["kind"] == "fact"] == [berlin.pk]


@pytest.mark.parametrize("value", ["yesterday", "20260302", "9999-12-31T23:59:59-14:00"])
def test_api_refuses_an_as_of_that_is_not_a_usable_moment(api, value):
    assert_error(api.get("/memories", {"as_of": value}), 422, "invalid")
    assert_error(api.post("/search", {"query": "x", "as_of": value}), 422, "invalid")
    assert_error(api.post("/context", {"query": "x", "as_of": value}), 422, "invalid")


def test_api_refuses_as_of_with_updated_after(api):
    body = assert_error(
        api.get("/memories", {"as_of": "2026-03-02", "updated_after": "2026-03-01"}), 422
    )
    assert "updated_after" in body["fields"]


# -- pages -------------------------------------------------------------------------------


def test_the_facts_page_lists_what_was_active_then(client_in, moved):
    berlin, munich = moved
    page = client_in.get("/facts/", {"as_of": "2026-03-02T12:00"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "The user lives in Berlin" in html and "The user moved to Munich" not in html
    assert f"/facts/{berlin.pk}/?as_of=2026-03-02T12:00" in html
    assert 'id="facts-bulk"' not in html  # the past is read-only
    today = client_in.get("/facts/").content.decode()
    assert "The user moved to Munich" in today and "The user lives in Berlin" not in today


def test_the_facts_page_explains_a_moment_it_cannot_use(client_in, db):
    page = client_in.get("/facts/", {"as_of": "0001-01-01T00:00"})
    assert page.status_code == 200
    assert "between the years 1900 and 9000" in page.content.decode()


def test_a_facts_history_marks_the_version_active_at_a_chosen_date(client_in, moved):
    berlin, munich = moved
    html = client_in.get(f"/facts/{munich.pk}/", {"as_of": "2026-03-02T12:00"}).content.decode()
    marked = html.split('id="version-')[1:]
    assert [chunk.split('"')[0] for chunk in marked] == [str(berlin.pk), str(munich.pk)]
    assert "active-then" in html.split(f'id="version-{berlin.pk}"')[0].rsplit("<li", 1)[1]
    assert "active at 2026-03-02 12:00" in html
    assert "active 2026-03-01 09:00 – 2026-03-03 09:00 (superseded)" in html
    before = client_in.get(f"/facts/{munich.pk}/", {"as_of": "2026-02-01T00:00"})
    assert "No version of this fact was active at 2026-02-01 00:00" in before.content.decode()


def test_the_history_speaks_chinese(chinese_client, moved):
    _, munich = moved
    html = chinese_client.get(
        f"/facts/{munich.pk}/", {"as_of": "2026-03-02T12:00"}
    ).content.decode()
    assert "哪个版本" in html and "已被取代" in html


def test_the_debugger_searches_as_of_a_date(client_in, moved):
    page = client_in.get(
        "/debugger/", {"q": "where does the user live", "as_of": "2026-03-02T12:00"}
    )
    html = page.content.decode()
    assert "Searching the memory as it stood at 2026-03-02 12:00" in html
    results = html.split('class="table results"')[1].split("</table>")[0]
    assert "Berlin" in results and "Munich" not in results


def test_why_not_as_of_a_date_speaks_of_that_date(moved):
    from retrieval.explain import why_not

    berlin, munich = moved
    later = why_not("where does the user live", "fact", munich.pk, as_of=DAY2)
    assert later.gate == "not_yet" and "written after 2026-03-02 09:00" in later.message
    then = why_not("where does the user live", "fact", berlin.pk, as_of=DAY2)
    assert then.gate == "recalled"  # superseded today, the answer then
    gone = why_not("where does the user live", "fact", berlin.pk, as_of=DAY4)
    assert gone.gate == "inactive_then" and "superseded" in gone.message
