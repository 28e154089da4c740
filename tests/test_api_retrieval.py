"""POST /search and POST /context through the API (read scope, validation, breakdowns)."""

import pytest

from tests.api_helpers import assert_error

FACTS = [
    ("住在杭州西湖区", "lives_in"),
    ("喜欢喝乌龙茶", "likes_drink"),
    ("在 orchard 项目里负责后端", "works_on"),
]


@pytest.fixture
def memory(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for content, predicate in FACTS:
            api.post("/memories", {"content": content, "subject": "user", "predicate": predicate})
        api.post(
            "/turns",
            {"session_id": "s1", "turn_index": 0, "role": "user", "content": "今天又喝了乌龙茶"},
        )
    return api


def test_search_finds_a_memory_with_its_breakdown(memory):
    response = memory.post("/search", {"query": "乌龙茶", "explain": True})
    assert response.status_code == 200
    body = response.json()
    assert body["degraded"] is False and "timings_ms" in body
    top = body["results"][0]
    assert "乌龙茶" in top["content"] and top["rank"] == 1
    assert top["found_by"] and top["breakdown"]
    for part in top["breakdown"].values():
        assert {"raw", "normalized", "weight", "contribution"} <= set(part)


def test_search_without_explain_leaves_the_breakdown_out(memory):
    top = memory.post("/search", {"query": "乌龙茶"}).json()["results"][0]
    assert "breakdown" not in top or top["breakdown"] is None


def test_search_filters_by_kind_and_session(memory):
    kinds = {
        r["kind"]
        for r in memory.post("/search", {"query": "乌龙茶", "kinds": ["turn"]}).json()["results"]
    }
    assert kinds == {"turn"}
    other = memory.post("/search", {"query": "乌龙茶", "kinds": ["turn"], "session_id": "nope"})
    assert other.json()["results"] == []


def test_search_keyword_mode_and_limit(memory):
    body = memory.post(
        "/search", {"query": "杭州 乌龙茶 orchard", "mode": "keyword", "limit": 1}
    ).json()
    assert len(body["results"]) == 1


def test_a_read_only_token_may_search(read_api, memory):
    assert read_api.post("/search", {"query": "杭州"}).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "x", "limit": 51},
        {"query": "x", "mode": "psychic"},
        {"query": "x", "kinds": ["dream"]},
        {"query": "x", "preset": "nope"},
        {"query": "x", "time_from": "soon"},
    ],
)
def test_invalid_searches_are_422(api, body):
    assert_error(api.post("/search", body), 422)


def test_bad_weights_are_422(api):
    assert_error(api.post("/search", {"query": "x", "weights": {"luck": 1}}), 422, "invalid_search")
    assert_error(api.post("/search", {"query": "x", "weights": {"keyword": 0}}), 422)


def test_context_assembles_cards_turns_and_evidence(memory):
    response = memory.post(
        "/context",
        {
            "query": "还记得我喜欢喝什么茶吗",
            "session_id": "s1",
            "evidence": "always",
            "explain": True,
        },
    )
    assert response.status_code == 200
    body = response.json()
    names = [s["name"] for s in body["sections"]]
    assert names == ["cards", "turns", "evidence"]
    assert body["budget"]["max_tokens"] == 4000 and body["tokens"] <= 4000
    evidence = next(s for s in body["sections"] if s["name"] == "evidence")
    assert evidence["items"] and all("breakdown" in i for i in evidence["items"])
    assert "乌龙茶" in body["text"]


def test_context_respects_a_smaller_budget(memory):
    body = memory.post("/context", {"query": "杭州", "max_tokens": 300}).json()
    assert body["budget"]["max_tokens"] == 300


def test_context_without_a_trigger_leaves_unrelated_memories_out(memory):
    body = memory.post("/context", {"query": "你好", "evidence": "auto"}).json()
    assert body["triggered"] is False
    evidence = next(s for s in body["sections"] if s["name"] == "evidence")
    assert evidence["items"] == []
    assert body["recall"]["mode"] == "gated" and body["recall"]["cut_by_gate"] >= 1
    assert "cut" not in body["recall"]  # the items themselves only with explain


def test_context_recalls_a_related_memory_without_a_trigger_word(memory):
    body = memory.post("/context", {"query": "下午泡一壶乌龙茶", "explain": True}).json()
    evidence = next(s for s in body["sections"] if s["name"] == "evidence")
    assert body["triggered"] is False and "乌龙茶" in body["text"]
    assert evidence["items"][0]["gate_score"] >= evidence["items"][0]["gate"]
    assert evidence["items"][0]["gate"] == body["recall"]["gates"][evidence["items"][0]["kind"]]
    assert {"kind", "id", "gate_score", "gate", "content"} <= set(body["recall"]["cut"][0])
    assert all(c["gate_score"] < c["gate"] for c in body["recall"]["cut"])


def test_context_evidence_never_turns_recall_off(memory):
    body = memory.post("/context", {"query": "下午泡一壶乌龙茶", "evidence": "never"}).json()
    assert body["recall"]["mode"] == "off" and "乌龙茶" not in body["text"]


def test_a_read_only_token_may_ask_for_context(read_api, memory):
    assert read_api.post("/context", {"query": "你好"}).status_code == 200


@pytest.mark.parametrize(
    "body",
    [{}, {"query": "x", "max_tokens": 10}, {"query": "x", "evidence": "sometimes"}, {"query": 5}],
)
def test_invalid_context_requests_are_422(api, body):
    assert_error(api.post("/context", body), 422)


def test_a_session_named_by_digits_is_the_agents_own_not_a_database_id(api):
    # Session "chat-1" gets database id 1; an agent's own session "1" must not see its turns.
    api.post(
        "/turns", {"session_id": "chat-1", "turn_index": 0, "role": "user", "content": "秘密计划"}
    )
    api.post("/turns", {"session_id": "1", "turn_index": 0, "role": "user", "content": "你好"})
    text = api.post("/context", {"query": "继续", "session_id": "1"}).json()["text"]
    assert "你好" in text and "秘密计划" not in text


# --- strict types (issue 18, item 10) -----------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"explain": 0},
        {"explain": 1},
        {"explain": "true"},
        {"include_inactive": "yes"},
        {"time_to": 0.5},
        {"time_from": 1700000000},
    ],
)
def test_search_refuses_loosely_typed_fields(api, change):
    body = assert_error(api.post("/search", {"query": "tea", **change}), 422, "invalid")
    assert set(body["fields"]) == set(change)


def test_context_refuses_a_number_for_explain(api):
    body = assert_error(api.post("/context", {"query": "tea", "explain": 0}), 422, "invalid")
    assert set(body["fields"]) == {"explain"}


def test_search_still_takes_real_booleans_and_iso_times(api):
    response = api.post(
        "/search",
        {
            "query": "tea",
            "explain": True,
            "include_inactive": False,
            "time_from": "2026-03-01T09:30:00+08:00",
            "time_to": "2026-03-02",
        },
    )
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    "body",
    [
        {"query": "乌龙茶"},
        {"query": "乌龙茶 杭州", "explain": True},
        {"query": "乌龙茶", "as_of": "2999-01-01T08:00:00+08:00", "explain": True},
    ],
)
def test_a_search_answers_exactly_what_its_schema_makes_of_the_result(memory, monkeypatch, body):
    """The response is built as a SearchOut without validating the result again: the same
    JSON, field for field, as validating the search's own dict gives."""
    import json

    from memsite.api import ExactEncoder
    from memsite.api import retrieval as api_retrieval

    found = []
    real = api_retrieval.searching.search

    def keep(request):
        found.append(real(request))
        return found[-1]

    monkeypatch.setattr(api_retrieval.searching, "search", keep)
    response = memory.post("/search", body)
    assert response.status_code == 200
    validated = api_retrieval.SearchOut.model_validate(found[0].to_dict(body.get("explain", False)))
    expected = json.loads(json.dumps(validated.model_dump(), cls=ExactEncoder))
    assert response.json() == expected and expected["results"]
    assert all(hit["time"] for hit in expected["results"])
