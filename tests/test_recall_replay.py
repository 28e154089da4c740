"""Recall replay: what a logged search returned then, what it returns now, and why it changed."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator import writepath as wp
from curator.models import Fact, Owner
from retrieval import recalls
from retrieval.indexing import index_items
from retrieval.models import RecallLog
from retrieval.search import search
from tests.api_helpers import assert_error


def indexed(content: str, **kw) -> Fact:
    kw = {"confidence": 0.95, "priority": "permanent", **kw}
    fact = wp.propose(wp.Candidate(content=content, **kw), actor="agent").fact
    index_items("fact", [fact])
    return fact


@pytest.fixture
def coffee(db):
    return indexed("The user drinks oat milk latte every morning")


@pytest.fixture
def recalled(api, coffee):
    """An agent searched through the API: one recall log entry."""
    response = api.post("/search", {"query": "what does the user drink in the morning"})
    assert response.status_code == 200
    return RecallLog.objects.get()


def test_an_api_search_is_logged_with_its_request_and_token(recalled):
    assert recalled.params["limit"] == 10 and recalled.agent_id
    assert recalled.results[0]["kind"] == "fact"


def test_a_replay_after_an_edit_shows_the_edit(api, recalled, coffee):
    wp.edit_fact(
        coffee.pk, {"content": "The user drinks black coffee every morning"}, actor="person"
    )
    response = api.post(f"/recalls/{recalled.pk}/replay")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["then"][0]["content"] == "The user drinks oat milk latte every morning"
    [changed] = body["diff"]["changed"]
    assert changed["fact_id"] == coffee.pk
    [edit] = changed["events"]
    assert edit["event_type"] == "update" and edit["actor"] == "person"
    assert edit["before"]["content"] == "The user drinks oat milk latte every morning"
    assert edit["after"]["content"] == "The user drinks black coffee every morning"


def test_a_replay_after_a_supersede_names_the_new_version(api, db):
    old = indexed("The user works at Initech", subject="user", predicate="employer")
    api.post("/search", {"query": "where does the user work Initech"})
    log = RecallLog.objects.get()
    new = indexed("The user works at Globex since May", subject="user", predicate="employer")
    result = recalls.replay(log)
    [gone] = result.removed
    assert (gone.item.id, gone.why, gone.successor) == (old.pk, "superseded", new.pk)
    assert [i.id for i in result.added] == [new.pk]
    assert {c.fact_id for c in result.changed} == {old.pk, new.pk}


def test_a_replay_of_an_unchanged_memory_is_the_same(recalled):
    result = recalls.replay(recalled)
    assert result.same and result.unchanged == 1
    assert RecallLog.objects.count() == 1  # replaying is not recalling


def test_a_replay_notices_a_result_that_moved(api, db):
    first = indexed("orchard release notes for the orchard team")
    api.post("/search", {"query": "orchard release"})
    log = RecallLog.objects.get()
    second = indexed("orchard release orchard release checklist orchard release")
    result = recalls.replay(log)
    assert [i.id for i in result.added] == [second.pk]
    assert [(m.item.id, m.then_rank, m.item.rank) for m in result.moved] == [(first.pk, 1, 2)]


def test_recalls_are_listed_by_fact_token_and_time(api, read_api, recalled, coffee):
    other = indexed("The user has a cat named Miso")
    read_api.post("/search", {"query": "cat named Miso"})
    miso = api.get("/recalls", {"fact": other.pk}).json()  # it did not exist at the first
    assert miso["count"] == 1 and miso["items"][0]["query"] == "cat named Miso"
    assert miso["items"][0]["token"] != recalled.agent_id
    assert api.get("/recalls", {"fact": coffee.pk}).json()["count"] == 2
    mine = api.get("/recalls", {"token": recalled.agent_id}).json()["items"]
    assert [r["id"] for r in mine] == [recalled.pk]
    later = (timezone.now() + timedelta(minutes=5)).isoformat()
    assert api.get("/recalls", {"since": later}).json()["count"] == 0
    assert api.get("/recalls", {"until": later}).json()["count"] == 2


def test_one_recall_shows_what_it_returned_then(api, recalled, coffee):
    wp.edit_fact(coffee.pk, {"content": "The user drinks tea"}, actor="person")
    body = api.get(f"/recalls/{recalled.pk}").json()
    assert body["results"][0]["content"] == "The user drinks oat milk latte every morning"
    assert body["query"] == "what does the user drink in the morning"


def test_a_read_only_token_may_replay(read_api, recalled):
    assert read_api.post(f"/recalls/{recalled.pk}/replay").status_code == 200


def test_unknown_recalls_are_404(api, db):
    assert_error(api.get("/recalls/999"), 404, "not_found")
    assert_error(api.post("/recalls/999/replay"), 404, "not_found")
    assert_error(api.get("/recalls", {"since": "last week"}), 422, "invalid")


def test_a_context_recall_is_replayed_with_its_evidence_search(api, coffee):
    api.post("/context", {"query": "Do you remember what I drink in the morning?"})
    log = RecallLog.objects.get()
    assert log.params["via"] == "context"
    assert recalls.replay(log).same


def test_an_entry_from_before_requests_were_kept_still_replays(db, coffee):
    search("morning drink", owner=Owner.default())
    log = RecallLog.objects.get()
    RecallLog.objects.filter(pk=log.pk).update(params={})
    log.refresh_from_db()
    assert recalls.replay(log).same


# -- pages -------------------------------------------------------------------------------


def test_a_facts_page_links_to_its_recalls(client_in, recalled, coffee):
    html = client_in.get(f"/facts/{coffee.pk}/").content.decode()
    assert f'href="/recalls/?fact={coffee.pk}"' in html and "recalled 1 time in the log" in html
    assert f'href="/recalls/{recalled.pk}/"' in html
    listing = client_in.get("/recalls/", {"fact": coffee.pk}).content.decode()
    assert f'href="/recalls/{recalled.pk}/"' in listing and "test agent" in listing


def test_the_recall_page_shows_then_now_and_the_edit(client_in, recalled, coffee):
    wp.edit_fact(
        coffee.pk, {"content": "The user drinks black coffee every morning"}, actor="person"
    )
    html = client_in.get(f"/recalls/{recalled.pk}/").content.decode()
    then = html.split('class="card replay-then"')[1].split("</section>")[0]
    now = html.split('class="card replay-now"')[1].split("</section>")[0]
    assert "oat milk latte" in then and "black coffee" in now
    changes = html.split('class="card replay-changes"')[1]
    assert f"event-{coffee.events.get(event_type='update').pk}" in changes
    assert "1 fact changed since" in html


def test_the_debugger_opens_recent_recalls_for_replay(client_in, recalled):
    html = client_in.get("/debugger/").content.decode()
    assert f'href="/recalls/{recalled.pk}/"' in html


def test_the_recall_pages_speak_chinese(chinese_client, recalled):
    assert "召回记录" in chinese_client.get("/recalls/").content.decode()
    html = chinese_client.get(f"/recalls/{recalled.pk}/").content.decode()
    assert "当时" in html and "当前" in html


def test_the_recall_list_explains_bad_filters(client_in, db):
    html = client_in.get("/recalls/", {"since": "2026-03-05", "until": "2026-03-01"}).content
    assert "The end is before the start." in html.decode()
    assert client_in.get("/recalls/12345/").status_code == 404


def test_a_query_quoting_a_secret_is_logged_masked(api, coffee):
    key = "sk-proj-" + "Zx9Q" * 12
    response = api.post("/search", {"query": f"drink, my key is {key}"})
    assert response.status_code == 200
    logged = RecallLog.objects.get().query
    assert key not in logged and "drink, my key is" in logged
