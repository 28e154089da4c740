"""GET /profile (compiled cards for the system prompt) and GET/POST /onboarding."""

from curator import cards
from curator.models import Owner
from tests.api_helpers import assert_error

ANSWERS = {"assistant_name": "十一", "positioning": "私人助理", "address": "李雷"}


def test_profile_answers_from_the_owner_and_the_cards(api):
    owner = Owner.default()
    owner.display_name, owner.identity_confirmed = "李雷", True
    owner.save()
    cards.atomic_write(cards.card_path("user"), "# User\n\n- 住在杭州\n")
    body = api.get("/profile").json()
    assert body["identity_confirmed"] is True and body["display_name"] == "李雷"
    assert "住在杭州" in body["user_card"]
    assert body["tokens"] <= body["budget"]


def test_onboarding_status_lists_the_questions(read_api):
    body = read_api.get("/onboarding").json()
    assert body["identity_confirmed"] is False
    keys = {q["key"] for q in body["questions"]}
    assert {"assistant_name", "address"} <= keys


def test_onboarding_submit_names_missing_answers(api):
    body = assert_error(api.post("/onboarding", {"answers": {"assistant_name": "十一"}}), 422)
    assert {"positioning", "address"} <= set(body["fields"])
    assert not Owner.default().identity_confirmed


def test_onboarding_submit_confirms_once(api):
    response = api.post("/onboarding", {"answers": ANSWERS, "operation_id": "onb-1"})
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] and body["status"]["identity_confirmed"] and body["facts"]
    replay = api.post("/onboarding", {"answers": ANSWERS, "operation_id": "onb-1"}).json()
    assert replay["replayed"] is True
    assert_error(api.post("/onboarding", {"answers": ANSWERS}), 409, "already_confirmed")


def test_a_read_only_token_cannot_submit_the_onboarding(read_api):
    assert_error(read_api.post("/onboarding", {"answers": ANSWERS}), 403, "read_only_token")


def test_onboarding_answers_changed_under_the_same_operation_id_are_a_409(api):
    first = api.post("/onboarding", {"answers": ANSWERS, "operation_id": "onb-1"})
    assert first.status_code == 200
    changed = {**ANSWERS, "address": "老板"}
    body = assert_error(
        api.post("/onboarding", {"answers": changed, "operation_id": "onb-1"}),
        409,
        "operation_conflict",
    )
    assert "onb-1" in body["detail"]
    assert Owner.default().display_name != "老板"
