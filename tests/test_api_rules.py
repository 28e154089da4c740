"""GET/POST/PATCH/DELETE /api/v1/rules and POST /rules/test."""

import pytest

from curator.models import GuardRule
from memsite.core.tokens import create_token
from tests.api_helpers import assert_error

pytestmark = pytest.mark.django_db


def test_the_list_starts_with_the_detectors_secrets_blocking_personal_data_to_review(api):
    items = api.get("/rules").json()["items"]
    detectors = {i["detector"]: i for i in items if i["detector"]}
    assert set(detectors) == {
        "api_key", "password", "email", "phone", "resident_id", "bank_card", "iban", "address"
    }  # fmt: skip
    assert detectors["api_key"]["enabled"] and detectors["api_key"]["redact_turns"]
    assert detectors["password"]["category"] == "secret"
    assert detectors["api_key"]["action"] == "block"
    assert detectors["email"]["enabled"] and detectors["email"]["category"] == "personal"
    assert detectors["email"]["action"] == "review" and not detectors["email"]["redact_turns"]


def test_it_creates_a_rule_and_memories_it_matches_are_blocked(api):
    created = api.post("/rules", {"name": "ex", "words": ["my ex", "前任"]})
    assert created.status_code == 201
    body = created.json()
    assert body["words"] == ["my ex", "前任"] and body["enabled"] and not body["redact_turns"]
    outcome = api.post("/memories", {"content": "和前任的事别再提"}).json()
    assert outcome == {**outcome, "outcome": "blocked", "rule": "ex"}


def test_patch_changes_a_rule_and_switches_a_detector(api):
    rule = api.post("/rules", {"name": "ex", "words": ["前任"]}).json()
    changed = api.patch(f"/rules/{rule['id']}", {"words": ["前男友"], "redact_turns": True})
    assert changed.status_code == 200 and changed.json()["words"] == ["前男友"]
    email = GuardRule.objects.get(detector="email")
    assert api.post("/memories", {"content": "mail han@example.com"}).json()["outcome"] == "pending"
    assert api.patch(f"/rules/{email.pk}", {"action": "block"}).json()["action"] == "block"
    assert api.post("/memories", {"content": "mail li@example.com"}).json()["outcome"] == "blocked"
    assert_error(api.patch(f"/rules/{email.pk}", {"action": "hide"}), 422)


def test_a_detectors_pattern_cannot_be_changed_nor_deleted(api):
    api.get("/rules")
    key = GuardRule.objects.get(detector="api_key")
    body = assert_error(api.patch(f"/rules/{key.pk}", {"words": ["x"]}), 422, "invalid_rule")
    assert "words" in body["fields"]
    assert_error(api.delete(f"/rules/{key.pk}"), 409, "builtin_rule")


def test_delete_removes_a_rule(api):
    rule = api.post("/rules", {"name": "ex", "words": ["前任"]}).json()
    assert api.delete(f"/rules/{rule['id']}").status_code == 204
    assert_error(api.get(f"/rules/{rule['id']}"), 404, "not_found")
    assert api.post("/memories", {"content": "前任的事"}).json()["outcome"] == "written"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": "r"}, "words"),
        ({"name": "r", "pattern": "([a-"}, "pattern"),
        ({"name": "r", "words": ["a"], "agents": [12345]}, "agents"),
    ],
)
def test_bad_rules_are_refused_with_the_field(api, body, field):
    response = assert_error(api.post("/rules", body), 422, "invalid_rule")
    assert field in response["fields"]


def test_a_second_rule_with_the_same_name_is_refused(api):
    api.post("/rules", {"name": "ex", "words": ["a"]})
    body = assert_error(api.post("/rules", {"name": "ex", "words": ["b"]}), 422, "invalid_rule")
    assert "name" in body["fields"]


def test_unknown_fact_types_are_refused_by_the_schema(api):
    assert_error(api.post("/rules", {"name": "r", "fact_types": ["mood"]}), 422, "invalid")


def test_a_rule_can_be_limited_to_agents_by_token_id(api):
    token, _raw = create_token("other agent")
    rule = api.post("/rules", {"name": "r", "words": ["茶"], "agents": [token.pk]}).json()
    assert rule["agents"] == [token.pk]
    # the test agent is not the limited one: its memory is written
    assert api.post("/memories", {"content": "喜欢喝茶"}).json()["outcome"] == "written"


def test_a_rule_can_be_tried_on_sample_text_before_saving(api):
    tried = api.post("/rules/test", {"text": "health 和 健康", "words": ["health", "健康"]})
    assert tried.json() == {"matches": 2, "masked": "████ 和 ████"}
    tried = api.post("/rules/test", {"text": "密码是 abc12345", "detector": "password"})
    assert tried.json() == {"matches": 1, "masked": "密码是 ████"}
    assert not GuardRule.objects.filter(detector="").exists()


def test_a_read_token_cannot_change_rules(read_api):
    assert_error(read_api.post("/rules", {"name": "r", "words": ["a"]}), 403, "read_only_token")
    assert read_api.get("/rules").status_code == 200


def test_confirming_a_pending_item_a_rule_matches_answers_blocked(api):
    item = api.post("/memories", {"content": "最近常去医院", "confidence": 0.7}).json()["pending"]
    api.post("/rules", {"name": "医疗", "words": ["医院"]})
    body = api.post(f"/pending/{item['id']}/confirm").json()
    assert body["outcome"] == "blocked" and body["rule"] == "医疗" and body["fact"] is None


def test_an_edit_a_rule_matches_is_refused_naming_the_rule(api):
    fact = api.post("/memories", {"content": "喜欢喝茶"}).json()["fact"]
    api.post("/rules", {"name": "医疗", "words": ["医院"]})
    body = assert_error(
        api.patch(f"/memories/{fact['id']}", {"content": "喜欢在医院旁边喝茶"}), 422, "blocked"
    )
    assert "医疗" in body["detail"] and body["fields"] == {"content": body["detail"]}
