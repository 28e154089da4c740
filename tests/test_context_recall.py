"""The default /context finds what the person said (issue 30): recorded through the API as an
agent records it, the session ended, the jobs run (the tests' Huey runs the real tasks
inline), then a later question from a new conversation. What was said reaches the evidence
(the turn itself, or a memory extraction made from it, counted once); a greeting adds none."""

import pytest

from curator.models import Owner
from retrieval.context import assemble
from tests.search_helpers import fact, session, turn

# An earlier conversation: the person has talked about other things before (BM25 weighs a
# word by how rare it is among what was said, as in any install in use).
BEFORE = [
    ("user", "Can you help me write a cover letter for a data analyst job?"),
    ("assistant", "Sure, tell me about your experience with SQL and dashboards."),
    ("user", "I used Python and Tableau at my last company for three years."),
    ("assistant", "Great, I'll draft something that highlights the Tableau work."),
    ("user", "My cat Miso knocked my coffee over the keyboard this morning."),
    ("assistant", "Oh no, I hope the keyboard survived!"),
    ("user", "I started running again, 5 km three times a week."),
    ("assistant", "That's a good routine. Do you run in the morning?"),
    ("user", "Mostly after work, along the river."),
    ("assistant", "Sounds lovely. Remember to stretch afterwards."),
    ("user", "What's a good vegetarian recipe for a weeknight?"),
    ("assistant", "A chickpea curry with spinach takes about thirty minutes."),
    ("user", "My landlord finally fixed the heating in the flat."),
    ("assistant", "Good to hear, winter is coming."),
    ("user", "I'm reading a novel by Haruki Murakami at the moment."),
    ("assistant", "Which one? Kafka on the Shore is a favourite of many."),
]
SAID = [
    ("user", "My sister Anna is getting married in Lisbon next June, I'm her witness."),
    ("assistant", "How lovely! Do you need help planning the trip?"),
    ("user", "Yes please, I'll need a flight from Berlin and a hotel near the Alfama."),
    ("assistant", "Noted. I'll look for flights closer to the date."),
]


def _say_and_end(api, django_capture_on_commit_callbacks, session_id: str, said) -> list[int]:
    ids = []
    for index, (role, content) in enumerate(said):
        with django_capture_on_commit_callbacks(execute=True):
            body = {"session_id": session_id, "turn_index": index, "role": role}
            response = api.post("/turns", {**body, "content": content})
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/sessions/{session_id}/end").status_code == 202
    return ids


def _evidence(body: dict) -> list[dict]:
    return next(s for s in body["sections"] if s["name"] == "evidence")["items"]


def _holds(items: list[dict], turn_id: int) -> bool:
    """The turn, or a memory made from it (which carries the turn as its provenance)."""
    return any(
        (i["kind"] == "turn" and i["id"] == turn_id) or i.get("source_turn") == turn_id
        for i in items
    )


def test_what_was_said_in_an_ended_session_reaches_a_later_question_in_a_new_one(
    api, django_capture_on_commit_callbacks
):
    _say_and_end(api, django_capture_on_commit_callbacks, "earlier", BEFORE)
    ids = _say_and_end(api, django_capture_on_commit_callbacks, "trip-1", SAID)
    response = api.post(
        "/context", {"query": "Where is Anna's wedding going to be?", "session_id": "chat-2"}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert not body["triggered"] and body["recall"]["mode"] == "gated"
    assert _holds(_evidence(body), ids[0]), body["sections"]
    assert "Lisbon" in body["text"].split("## Relevant memories")[1]


def test_a_greeting_adds_no_evidence(api, django_capture_on_commit_callbacks):
    _say_and_end(api, django_capture_on_commit_callbacks, "earlier", BEFORE)
    _say_and_end(api, django_capture_on_commit_callbacks, "trip-1", SAID)
    for greeting in ("Hi!", "Good morning!", "你好！", "谢谢你"):
        response = api.post("/context", {"query": greeting, "session_id": "chat-2"})
        assert response.status_code == 200, response.content
        assert _evidence(response.json()) == [], greeting


@pytest.fixture
def owner(db):
    return Owner.default()


def test_a_turn_and_the_fact_made_from_it_count_once_as_the_fact_with_the_words_said(owner):
    said = turn(session(owner), "I'm allergic to peanuts, so no satay for me.")
    made = fact(owner, "The user is allergic to peanuts", source_turn=said)
    result = assemble("peanut allergy", owner=owner, evidence_mode="always", record=False)
    items = next(s for s in result.sections if s.name == "evidence").items
    assert [(i["kind"], i["id"]) for i in items if i["kind"] in ("fact", "turn")] == [
        ("fact", made.id)
    ]
    assert items[0]["source_turn"] == said.id
    line = next(x for x in result.text.splitlines() if "allergic to peanuts" in x)
    assert "no satay for me" in line  # what was said follows what extraction kept


def test_the_gate_of_raw_turns_is_their_own(owner, settings):
    said = turn(session(owner), "We adopted a grey cat called Miso last spring.")
    settings.CONTEXT_RECALL_GATES = {**settings.CONTEXT_RECALL_GATES, "turn": 1.01}
    shut = assemble("what is our cat called?", owner=owner, record=False)
    assert shut.recall.gate_of("turn") == 1.01
    assert ("turn", said.id) in {(c["kind"], c["id"]) for c in shut.recall.cut}
    settings.CONTEXT_RECALL_GATES = {**settings.CONTEXT_RECALL_GATES, "turn": 0.0}
    open_ = assemble("what is our cat called?", owner=owner, record=False)
    items = next(s for s in open_.sections if s.name == "evidence").items
    assert ("turn", said.id) in {(i["kind"], i["id"]) for i in items}
    assert all(i["gate"] == 0.0 for i in items if i["kind"] == "turn")
