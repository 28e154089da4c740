"""With an LLM configured the LLM path extracts; recorded answers replayed by the fake server
score it on the held-out split like the offline extractors, and when the LLM keeps failing
the learned model takes the turn.

lifecycle/extraction/data/llm_answers.jsonl holds {"text", "reply"}: the reply the model gave
for that held-out statement (`python bench/extraction.py --record-llm` records them from the
configured LLM; the file in the repository is a hand-written stand-in in the same format
until a recording is committed, its lines say so)."""

import json

import pytest

from curator.models import Fact, PendingItem, Source
from lifecycle.extraction import extract, model
from lifecycle.extraction.training import labelled
from tests.extraction_eval import DATA, statement_level
from tests.lifecycle_helpers import session, turn

pytestmark = pytest.mark.django_db
NO_RULE = "上周末和大学室友去爬了黄山，风景特别美，下山时还遇到了一场大雨。"


@pytest.fixture
def llm(fake_openai, settings):
    settings.LLM_MODEL, settings.LLM_API_KEY = "fake-chat", "test"
    settings.LLM_BASE_URL = fake_openai.base_url
    return fake_openai


def recorded() -> dict[str, str]:
    lines = (DATA / "llm_answers.jsonl").read_text(encoding="utf-8").splitlines()
    return {row["text"]: row["reply"] for row in map(json.loads, filter(None, lines))}


def replay(answers: dict[str, str]):
    """The recorded reply for the statement the prompt ends with."""

    def reply(body: dict) -> str:
        said = body["messages"][-1]["content"].rsplit("The person's latest message:\n", 1)[-1]
        return answers[said.strip()]

    return reply


def test_replayed_llm_answers_score_the_held_out_split(llm):
    answers = recorded()
    expected = {c["text"]: bool(c["expect"]) for lang in ("zh", "en")
                for c in labelled(lang, "heldout")}  # fmt: skip
    assert set(answers) <= set(expected)  # recorded for held-out statements only
    want, gave = [], []
    for n, text in enumerate(answers):
        llm.chat_replies = [replay(answers)]
        results = extract.extract_turn(turn(session(f"s{n}"), text), force_llm=True)
        assert all((r.fact or r.pending) is None or _source(r) == Source.LLM for r in results)
        want.append(expected[text])
        gave.append(any(r.fact is not None or r.pending is not None for r in results))
    precision, recall = statement_level(want, gave)
    assert len(llm.requests) == len(answers)  # every statement went to the LLM
    assert precision >= 0.90 and recall >= 0.85, (precision, recall)


def _source(result) -> str:
    return result.fact.source if result.fact else result.pending.candidate["source"]


def test_when_the_llm_keeps_failing_the_learned_model_takes_the_turn(llm, settings):
    model.forget()
    said = turn(session(), NO_RULE)
    for _attempt in range(settings.EXTRACT_MAX_ATTEMPTS):
        llm.fail_next(500, times=3)  # the client's own retries fail too
        with pytest.raises(extract.ExtractionDeferred):
            extract.extract_turn(said, force_llm=True)
        said.refresh_from_db()
        if said.extracted:
            break
    said.refresh_from_db()
    assert said.extracted  # the last failure made a dead letter and the offline path ran
    contents = [f.content for f in Fact.objects.filter(source=Source.LEARNED)] + [
        p.candidate["content"] for p in PendingItem.objects.all()
    ]
    assert any(c.startswith("用户上周末和大学室友去爬了黄山") for c in contents), contents
