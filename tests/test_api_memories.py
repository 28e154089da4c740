"""/memories: propose through the write path (idempotent), list with filters, read, edit with
optimistic concurrency, archive, history."""

import json
import threading

import pytest
from django.db import connection

from curator.models import Fact, FactStatus, MemoryEvent, Owner, PendingItem
from memsite.core.tokens import create_token
from tests.api_helpers import Api, assert_error

CITY = {
    "content": "住在杭州",
    "subject": "user",
    "predicate": "lives_in",
    "type": "fact",
    "confidence": 0.95,
    "tags": ["home"],
}


def propose(api, **changes):
    return api.post("/memories", {**CITY, **changes})


def test_a_confident_memory_is_written(api):
    response = propose(api)
    assert response.status_code == 201
    body = response.json()
    assert body["outcome"] == "written" and body["replayed"] is False
    fact = Fact.objects.get(pk=body["fact"]["id"])
    assert fact.content == "住在杭州" and fact.source == "api"
    assert MemoryEvent.objects.filter(fact=fact, actor="agent").exists()


def test_a_less_confident_memory_waits_for_the_person(api):
    body = propose(api, confidence=0.7).json()
    assert body["outcome"] == "pending" and body["fact"] is None
    assert PendingItem.objects.get(pk=body["pending"]["id"]).reason == "low_confidence"


def test_an_unsure_memory_is_dropped(api):
    body = propose(api, confidence=0.3).json()
    assert body["outcome"] == "dropped" and not Fact.objects.exists()


def test_a_repeat_is_boosted_and_a_new_value_supersedes(api):
    first = propose(api).json()["fact"]
    assert propose(api).json()["outcome"] == "boosted"
    moved = propose(api, content="住在上海").json()
    assert moved["outcome"] == "superseded"
    old = Fact.objects.get(pk=first["id"])
    assert old.status == FactStatus.SUPERSEDED
    assert api.get(f"/memories/{old.pk}").json()["superseded_by_id"] == moved["fact"]["id"]


def test_the_same_operation_id_replays_the_first_outcome(api):
    first = propose(api, operation_id="op-1")
    again = propose(api, operation_id="op-1")
    assert first.status_code == 201 and again.status_code == 200
    assert again.json()["replayed"] is True
    assert again.json()["fact"]["id"] == first.json()["fact"]["id"]
    assert Fact.objects.count() == 1


@pytest.mark.parametrize(
    "change", [{"content": "something else entirely"}, {"confidence": 0.9}, {"tags": []}]
)
def test_an_operation_id_reused_with_other_content_is_a_409(api, change):
    first = propose(api, operation_id="op-1")
    body = assert_error(propose(api, operation_id="op-1", **change), 409, "operation_conflict")
    assert "op-1" in body["detail"] and set(body["fields"]) == {"operation_id"}
    assert Fact.objects.count() == 1
    assert MemoryEvent.objects.get(operation_id="op-1").fact_id == first.json()["fact"]["id"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_with_one_operation_id_write_once(fresh_limits):
    _, raw = create_token("racer")
    barrier, results = threading.Barrier(5), []

    def run():
        from django.test import Client

        barrier.wait()
        try:
            results.append(propose(Api(Client(), raw), operation_id="op-race").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200, 200, 200, 200, 201]
    assert Fact.objects.count() == 1


@pytest.mark.parametrize(
    "change, field",
    [
        ({"content": ""}, "content"),
        ({"content": "x" * 2001}, "content"),
        ({"confidence": 1.5}, "confidence"),
        ({"type": "gossip"}, "type"),
        ({"scope": "everyone"}, "scope"),
        ({"priority": "forever"}, "priority"),
        ({"tags": "not-a-list"}, "tags"),
    ],
)
def test_invalid_memories_are_422_naming_the_field(api, change, field):
    body = assert_error(propose(api, **change), 422)
    assert field in body["fields"]
    assert not Fact.objects.exists()


def test_priority_and_duration_together_are_refused(api):
    assert_error(propose(api, priority="permanent", duration="7d"), 422, "invalid")


def test_a_source_turn_that_does_not_exist_is_a_422(api):
    body = assert_error(propose(api, source_turn_id=999), 422)
    assert "source_turn_id" in body["fields"] or "source_turn" in str(body["fields"])


def test_it_lists_with_filters_and_pagination(api):
    propose(api)
    propose(api, content="喜欢喝乌龙茶", predicate="likes_drink", type="preference", tags=["tea"])
    propose(api, content="用 vim 写代码", predicate="editor", scope="project", tags=[])
    assert api.get("/memories").json()["count"] == 3
    assert [f["content"] for f in api.get("/memories", {"tag": "tea"}).json()["items"]] == [
        "喜欢喝乌龙茶"
    ]
    assert api.get("/memories", {"type": "preference"}).json()["count"] == 1
    assert api.get("/memories", {"scope": "project"}).json()["count"] == 1
    assert api.get("/memories", {"q": "乌龙"}).json()["count"] == 1
    page = api.get("/memories", {"limit": 2, "offset": 2}).json()
    assert page["count"] == 3 and len(page["items"]) == 1
    assert_error(api.get("/memories", {"limit": 201}), 422, "invalid")
    assert_error(api.get("/memories", {"offset": -1}), 422, "invalid")
    assert_error(api.get("/memories", {"status": "weird"}), 422, "invalid")


def test_it_lists_by_status_and_update_time(api):
    fact_id = propose(api).json()["fact"]["id"]
    stamp = api.get(f"/memories/{fact_id}").json()["updated_at"]
    api.delete(f"/memories/{fact_id}")
    assert api.get("/memories").json()["count"] == 0
    assert api.get("/memories", {"status": "archived"}).json()["count"] == 1
    assert api.get("/memories", {"status": "all", "updated_after": stamp}).json()["count"] == 1


def test_reading_an_unknown_memory_is_a_404(api):
    assert_error(api.get("/memories/12345"), 404, "not_found")
    assert_error(api.patch("/memories/12345", {"content": "x"}), 404, "not_found")
    assert_error(api.delete("/memories/12345"), 404, "not_found")
    assert_error(api.get("/memories/12345/history"), 404, "not_found")


def test_it_edits_with_optimistic_concurrency(api):
    fact = propose(api).json()["fact"]
    response = api.patch(
        f"/memories/{fact['id']}",
        {"content": "住在杭州西湖区", "expected_updated_at": fact["updated_at"]},
    )
    assert response.status_code == 200 and response.json()["content"] == "住在杭州西湖区"
    stale = api.patch(
        f"/memories/{fact['id']}",
        {"content": "住在宁波", "expected_updated_at": fact["updated_at"]},
    )
    assert_error(stale, 409, "stale_edit")
    assert Fact.objects.get(pk=fact["id"]).content == "住在杭州西湖区"


def test_an_edit_without_expected_updated_at_applies(api):
    fact = propose(api).json()["fact"]
    body = api.patch(f"/memories/{fact['id']}", {"tags": ["home", "city"]}).json()
    assert body["tags"] == ["home", "city"]


def test_an_invalid_edit_is_a_422(api):
    fact = propose(api).json()["fact"]
    assert_error(api.patch(f"/memories/{fact['id']}", {"content": None}), 422)
    assert_error(api.patch(f"/memories/{fact['id']}", {"confidence": 2}), 422)


def test_archiving_answers_204_and_is_idempotent(api):
    fact_id = propose(api).json()["fact"]["id"]
    assert api.delete(f"/memories/{fact_id}").status_code == 204
    assert api.delete(f"/memories/{fact_id}").status_code == 204
    assert Fact.objects.get(pk=fact_id).status == FactStatus.ARCHIVED


def test_a_superseded_memory_cannot_be_archived(api):
    old = propose(api).json()["fact"]["id"]
    propose(api, content="住在上海")
    assert_error(api.delete(f"/memories/{old}"), 409, "not_allowed")


def test_history_shows_the_chain_and_events(api):
    old = propose(api).json()["fact"]["id"]
    new = propose(api, content="住在上海").json()["fact"]["id"]
    body = api.get(f"/memories/{new}/history").json()
    assert [f["id"] for f in body["chain"]] == [old, new]
    assert {e["event_type"] for e in body["events"]} >= {"write", "supersede"}
    assert {e["fact_id"] for e in body["events"]} <= {old, new}


def test_a_read_only_token_cannot_change_memories(api, read_api):
    fact_id = propose(api).json()["fact"]["id"]
    assert read_api.get(f"/memories/{fact_id}").status_code == 200
    assert_error(read_api.post("/memories", CITY), 403, "read_only_token")
    assert_error(read_api.patch(f"/memories/{fact_id}", {"content": "x"}), 403)
    assert_error(read_api.delete(f"/memories/{fact_id}"), 403)


def test_memories_belong_to_the_default_owner(api):
    other = Owner.objects.create(key="someone-else")
    hidden = Fact.objects.create(owner=other, content="not yours")
    assert_error(api.get(f"/memories/{hidden.pk}"), 404)
    assert api.get("/memories", {"status": "all"}).json()["count"] == 0


def test_the_list_reads_the_newest_changes_in_index_order_instead_of_sorting_them(db):
    from memsite.api.memories import MemoryFilters, find_facts
    from memsite.web.facts import fact_list

    for query in (find_facts(MemoryFilters()), fact_list(Owner.default(), {}, "active")):
        plan = query[:50].explain()
        assert "fact_newest_first" in plan and "TEMP B-TREE" not in plan, plan


# --- strict bodies (issue 18, item 10) ----------------------------------------------------


@pytest.mark.parametrize("body", [[None, None], [], "text", 3, None])
def test_a_patch_body_that_is_not_an_object_is_a_422(api, body):
    fact_id = propose(api).json()["fact"]["id"]
    before = api.get(f"/memories/{fact_id}").json()
    answer = assert_error(api.patch(f"/memories/{fact_id}", json.dumps(body)), 422, "invalid")
    assert set(answer["fields"]) == {"body"}
    assert api.get(f"/memories/{fact_id}").json() == before


def test_an_empty_patch_object_still_changes_nothing(api):
    fact_id = propose(api).json()["fact"]["id"]
    assert api.patch(f"/memories/{fact_id}", {}).status_code == 200


def test_confirm_edits_that_are_not_an_object_are_a_422(api):
    item = propose(api, confidence=0.7).json()["pending"]["id"]
    body = assert_error(api.post(f"/pending/{item}/confirm", {"edits": [None]}), 422, "invalid")
    assert set(body["fields"]) == {"edits"}
    assert PendingItem.objects.get(pk=item).status == "pending"
