"""Odd dates in the API (issue 18, item 3): naive times are read in the configured time zone,
values past what Python can represent are refused (422, the field named) or, for range bounds,
clamped; numbers are not dates. Nothing here may answer 500."""

from datetime import UTC, datetime

import pytest
from django.test import override_settings

from curator.models import ConversationTurn, Fact
from tests.api_helpers import assert_error

LATE = "9999-12-31T23:59:59-14:00"  # 10000-01-01 in UTC
EARLY = "0001-01-01T00:00:00+14:00"  # year 0 in UTC


def turn(api, index, content, session="s1", **extra):
    body = {"session_id": session, "turn_index": index, "role": "user", "content": content}
    response = api.post("/turns", {**body, **extra})
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.fixture
def tea(api, django_capture_on_commit_callbacks):
    """One turn about tea, indexed, said at 2020-06-01 12:00 UTC."""
    with django_capture_on_commit_callbacks(execute=True):
        turn(api, 0, "green tea in the garden", timestamp="2020-06-01T12:00:00+00:00")
    return api


def search_ids(api, **filters) -> list[int]:
    response = api.post("/search", {"query": "green tea", "kinds": ["turn"], **filters})
    assert response.status_code == 200, response.content
    return [hit["id"] for hit in response.json()["results"]]


def test_search_reads_a_naive_time_from_in_the_configured_time_zone(tea):
    # 2020-06-01T19:00 in Shanghai is 11:00 UTC: the turn (12:00 UTC) is after it ...
    with override_settings(TIME_ZONE="Asia/Shanghai"):
        assert search_ids(tea, time_from="2020-06-01T19:00:00")
        # ... and 21:00 Shanghai (13:00 UTC) is after the turn.
        assert search_ids(tea, time_from="2020-06-01T21:00:00") == []


def test_search_takes_a_naive_date_only_time_to(tea):
    assert search_ids(tea, time_to="2999-01-01")
    assert search_ids(tea, time_to="2020-01-01") == []


def test_a_search_bound_past_the_calendar_is_clamped(tea):
    assert search_ids(tea, time_to=LATE)  # no upper bound
    assert search_ids(tea, time_from=EARLY)  # no lower bound
    assert search_ids(tea, time_from=LATE) == []  # nothing after the end of time
    assert search_ids(tea, time_to=EARLY) == []


def test_trace_and_episode_bounds_past_the_calendar_are_clamped(tea):
    for path in ("/traces", "/episodes"):
        for params in ({"time_from": EARLY}, {"time_to": LATE}, {"time_to": "2020-01-01"}):
            response = tea.get(path, params)
            assert response.status_code == 200, (path, params, response.content)
    assert len(tea.get("/traces", {"time_to": LATE}).json()["items"]) == 1
    assert tea.get("/traces", {"time_from": LATE}).json()["items"] == []


def test_traces_read_a_naive_bound_in_the_configured_time_zone(tea):
    with override_settings(TIME_ZONE="America/New_York"):
        # 2020-06-01T07:00 in New York (summer, -4 h) is 11:00 UTC; the turn is 12:00 UTC.
        assert len(tea.get("/traces", {"time_from": "2020-06-01T07:00:00"}).json()["items"]) == 1
        assert tea.get("/traces", {"time_from": "2020-06-01T09:00:00"}).json()["items"] == []


def test_memories_updated_after_an_odd_date_answers(api):
    api.post("/memories", {"content": "likes oolong", "confidence": 0.95})
    assert api.get("/memories", {"updated_after": EARLY}).json()["count"] == 1
    assert api.get("/memories", {"updated_after": LATE}).json()["count"] == 0
    assert api.get("/memories", {"updated_after": "2020-01-01T00:00:00"}).json()["count"] == 1


@pytest.mark.parametrize("moment", [LATE, EARLY, "9999-12-31T12:00:00+00:00"])
def test_a_turn_timestamp_past_the_calendar_is_a_422_naming_it(api, moment):
    body = assert_error(
        api.post(
            "/turns",
            {
                "session_id": "s",
                "turn_index": 0,
                "role": "user",
                "content": "x",
                "timestamp": moment,
            },
        ),
        422,
        "invalid",
    )
    assert set(body["fields"]) == {"timestamp"}
    assert not ConversationTurn.objects.exists()


@override_settings(TIME_ZONE="Asia/Shanghai")
def test_a_naive_turn_timestamp_is_read_in_the_configured_time_zone(api):
    turn_id = turn(api, 0, "hello", timestamp="2026-03-01T09:30:00")
    stored = ConversationTurn.objects.get(pk=turn_id).timestamp
    assert stored == datetime(2026, 3, 1, 1, 30, tzinfo=UTC)


@pytest.mark.parametrize("moment", [LATE, EARLY])
def test_a_patched_expiry_past_the_calendar_is_a_422_naming_it(api, moment):
    fact_id = api.post("/memories", {"content": "likes oolong", "confidence": 0.95}).json()
    fact_id = fact_id["fact"]["id"]
    before = Fact.objects.get(pk=fact_id).expires_at
    body = assert_error(api.patch(f"/memories/{fact_id}", {"expires_at": moment}), 422)
    assert set(body["fields"]) == {"expires_at"}
    assert Fact.objects.get(pk=fact_id).expires_at == before


@override_settings(TIME_ZONE="Asia/Shanghai")
def test_a_naive_expiry_is_read_in_the_configured_time_zone(api):
    fact_id = api.post("/memories", {"content": "likes oolong", "confidence": 0.95}).json()
    fact_id = fact_id["fact"]["id"]
    response = api.patch(f"/memories/{fact_id}", {"expires_at": "2030-01-01T08:00:00"})
    assert response.status_code == 200, response.content
    assert Fact.objects.get(pk=fact_id).expires_at == datetime(2030, 1, 1, 0, 0, tzinfo=UTC)


def test_a_snooze_until_past_the_calendar_is_a_422(api):
    item = api.post("/memories", {"content": "maybe likes jazz", "confidence": 0.7}).json()
    body = assert_error(api.post(f"/pending/{item['pending']['id']}/later", {"until": LATE}), 422)
    assert set(body["fields"]) == {"until"}


@pytest.mark.parametrize("value", [0.5, 1700000000, True, "1700000000", "20260301", "soon"])
def test_a_number_is_not_a_date(api, value):
    body = assert_error(api.post("/search", {"query": "tea", "time_to": value}), 422, "invalid")
    assert set(body["fields"]) == {"time_to"}
    assert_error(api.get("/traces", {"time_from": value}), 422)


def test_context_ignores_a_date_it_cannot_filter_on_and_says_so(api):
    for message in ("what happened on 9999-12-31?", "9999年12月31日聊了什么", "in December 9999"):
        response = api.post("/context", {"query": message, "evidence": "always"})
        assert response.status_code == 200, (message, response.content)
        body = response.json()
        assert body["time_filter"] is None, message
        assert body["ignored_times"], message


def test_context_still_filters_on_a_usable_date_beside_an_ignored_one(api):
    body = api.post("/context", {"query": "2026-03-01 and 9999-12-31?"}).json()
    assert body["time_filter"]["text"] == "2026-03-01"
    assert body["ignored_times"] == ["9999-12-31"]
