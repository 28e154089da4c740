"""/pending: the inline confirmation of seed 000 section 7 (confirm / ignore / later)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator.models import Fact, PendingItem, PendingStatus
from tests.api_helpers import assert_error

UNSURE = {"content": "喜欢爬山", "subject": "user", "predicate": "hobby", "confidence": 0.7}


@pytest.fixture
def item_id(api):
    return api.post("/memories", UNSURE).json()["pending"]["id"]


def test_it_lists_pending_items(api, item_id):
    body = api.get("/pending").json()
    assert body["count"] == 1
    item = body["items"][0]
    assert item["id"] == item_id and item["content"] == "喜欢爬山"
    assert item["status"] == "pending" and item["reason"] == "low_confidence"


def test_the_default_list_holds_due_snoozed_items_only(api, item_id):
    api.post(f"/pending/{item_id}/later", {"hours": 2})
    assert api.get("/pending").json()["count"] == 0
    assert api.get("/pending", {"status": "snoozed"}).json()["count"] == 1
    PendingItem.objects.update(cooldown_until=timezone.now() - timedelta(minutes=1))
    assert api.get("/pending").json()["count"] == 1
    assert_error(api.get("/pending", {"status": "maybe"}), 422)
    assert_error(api.get("/pending", {"limit": 0}), 422)


def test_confirm_writes_a_verified_fact(api, item_id):
    response = api.post(f"/pending/{item_id}/confirm")
    assert response.status_code == 200
    body = response.json()
    assert body["outcome"] == "written" and body["pending"]["status"] == "confirmed"
    fact = Fact.objects.get(pk=body["fact"]["id"])
    assert fact.verified and fact.content == "喜欢爬山"


def test_confirm_applies_edits(api, item_id):
    body = api.post(f"/pending/{item_id}/confirm", {"edits": {"content": "喜欢周末爬山"}}).json()
    assert body["fact"]["content"] == "喜欢周末爬山"


def test_confirming_twice_is_a_409(api, item_id):
    api.post(f"/pending/{item_id}/confirm")
    assert_error(api.post(f"/pending/{item_id}/confirm"), 409, "already_resolved")
    assert Fact.objects.count() == 1


def test_ignore_rejects_the_item(api, item_id):
    body = api.post(f"/pending/{item_id}/ignore").json()
    assert body["pending"]["status"] == "rejected" and body["fact"] is None
    # the person is never asked twice about the same thing
    assert api.post("/memories", UNSURE).json()["outcome"] == "dropped"


def test_later_takes_hours_or_until(api, item_id):
    body = api.post(f"/pending/{item_id}/later", {"hours": 3}).json()
    until = PendingItem.objects.get().cooldown_until
    assert body["pending"]["status"] == "snoozed"
    assert timedelta(hours=2.9) < until - timezone.now() < timedelta(hours=3.1)
    PendingItem.objects.update(status=PendingStatus.PENDING)
    when = (timezone.now() + timedelta(days=2)).isoformat()
    api.post(f"/pending/{item_id}/later", {"until": when})
    assert PendingItem.objects.get().cooldown_until.isoformat() == when


def test_later_without_a_time_means_a_day(api, item_id):
    api.post(f"/pending/{item_id}/later")
    until = PendingItem.objects.get().cooldown_until
    assert timedelta(hours=23.9) < until - timezone.now() < timedelta(hours=24.1)


def test_later_refuses_the_past_and_both_times(api, item_id):
    past = (timezone.now() - timedelta(hours=1)).isoformat()
    assert (
        "until"
        in assert_error(api.post(f"/pending/{item_id}/later", {"until": past}), 422)["fields"]
    )
    assert_error(api.post(f"/pending/{item_id}/later", {"hours": 1, "until": past}), 422)
    assert_error(api.post(f"/pending/{item_id}/later", {"hours": -1}), 422)


def test_unknown_items_are_404(api):
    for action in ("confirm", "ignore", "later"):
        assert_error(api.post(f"/pending/999/{action}"), 404, "not_found")


def test_a_read_only_token_cannot_answer(read_api, api, item_id):
    assert read_api.get("/pending").status_code == 200
    assert_error(read_api.post(f"/pending/{item_id}/confirm"), 403, "read_only_token")
