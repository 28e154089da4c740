"""Fresh within seconds: what is written or confirmed through the API or the pages is in the
/context evidence as soon as the queue is idle, and in the cards after the coalesced refresh.
The queue's tasks really run: indexing inline, the card refresh from the schedule."""

import pytest

from curator.models import PendingItem
from tests.queue_helpers import run_scheduled

CASES = {
    "en": (
        "I live in Munich",
        "Which city do I live in?",
        "recommend a restaurant for dinner tonight",
        "Munich",
    ),
    "zh": ("我住在杭州", "我住在哪个城市？", "今晚去哪吃饭", "杭州"),
}


BACKGROUND = ["likes oolong tea", "works on the orchard project", "养了一只叫年糕的猫"]


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"


@pytest.fixture(autouse=True)
def background(api, django_capture_on_commit_callbacks):
    """A few memories already there, as in any install that is in use."""
    with django_capture_on_commit_callbacks(execute=True):
        for content in BACKGROUND:
            api.post("/memories", {"content": content, "type": "experience"})


def evidence(api, query: str) -> str:
    body = api.post("/context", {"query": query}).json()
    return next(s for s in body["sections"] if s["name"] == "evidence"), body["text"]


def assert_fresh(api, question: str, unrelated: str, word: str) -> None:
    section, text = evidence(api, question)
    assert section["items"] and word in text.split("## Relevant memories")[1]
    assert word not in api.get("/profile").json()["user_card"]  # the refresh still waits
    run_scheduled()  # the consumer's scheduler: the coalesced card refresh
    assert api.get("/health").json()["queue"]["pending"] == 0
    assert word in api.get("/profile").json()["user_card"]
    _section, text = evidence(api, unrelated)
    assert word in text.split("## Relevant memories")[0]  # from the user card, no evidence


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_memory_proposed_through_the_api_reaches_the_context_and_the_card(
    lang, api, live_queue, django_capture_on_commit_callbacks
):
    content, question, unrelated, word = CASES[lang]
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/memories", {"content": content, "confidence": 0.95})
    assert response.status_code == 201 and response.json()["outcome"] == "written"
    assert_fresh(api, question, unrelated, word)


def test_a_memory_confirmed_through_the_api_reaches_the_context_and_the_card(
    api, live_queue, django_capture_on_commit_callbacks
):
    content, question, unrelated, word = CASES["en"]
    with django_capture_on_commit_callbacks(execute=True):
        item = api.post("/memories", {"content": content, "confidence": 0.7}).json()["pending"]
    assert not evidence(api, question)[0]["items"]  # waiting for the person: not a memory yet
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/pending/{item['id']}/confirm").status_code == 200
    assert_fresh(api, question, unrelated, word)


def test_a_memory_confirmed_on_the_review_page_reaches_the_context_and_the_card(
    api, client_in, live_queue, django_capture_on_commit_callbacks
):
    content, question, unrelated, word = CASES["zh"]
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/memories", {"content": content, "confidence": 0.7})
    item = PendingItem.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        assert client_in.post(f"/review/{item.pk}/confirm/").status_code == 302
    assert_fresh(api, question, unrelated, word)
