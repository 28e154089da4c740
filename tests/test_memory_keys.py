"""Memory keys (issue 31, item 2): a turn is found through what extraction made of it, and a
question that names the person is asked of their own turns as they would ask it."""

from datetime import UTC, datetime

import pytest

from curator.models import Owner
from retrieval import signals
from retrieval.search import search
from tests.search_helpers import fact, session, turn

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


@pytest.fixture
def owner(db):
    return Owner.default()


def keys(result) -> list[tuple[str, int]]:
    return [(item.kind, item.id) for item in result.items]


def by_keywords_alone(query: str, owner) -> list[tuple[str, int]]:
    """What the turn's own keyword row finds (no facts searched as keys, no signals)."""
    result = search(
        query, owner=owner, kinds=["turn"], mode="keyword", now=NOW, record=False,
        use_signals=False,
    )  # fmt: skip
    return keys(result)


def test_a_short_answer_turn_is_found_through_the_memory_extracted_from_it(owner):
    s = session(owner)
    turn(s, "Guess what happened this spring", role="assistant")
    answer = turn(s, "Yes, finally, in March!")
    turn(s, "The weather is lovely today")
    assert ("turn", answer.id) not in by_keywords_alone("Lisbon", owner)
    # Extraction writes the memory after the turn was indexed: it keys the turn from then on.
    memory = fact(owner, "The user moved to Lisbon (March: 2026-03-01)", source_turn=answer)
    assert by_keywords_alone("Lisbon", owner) == [("turn", answer.id)]
    assert by_keywords_alone("2026-03-01", owner) == [("turn", answer.id)]
    memory.delete()
    assert by_keywords_alone("Lisbon", owner) == []


def test_a_changed_memory_keys_its_turn_with_its_new_words(owner):
    s = session(owner)
    answer = turn(s, "Yes, we did it last weekend")
    memory = fact(owner, "The user went hiking in the Alps", source_turn=answer)
    memory.content = "The user went climbing in the Dolomites"
    memory.save()
    from retrieval.indexing import index_items

    index_items("fact", [memory])
    assert by_keywords_alone("Dolomites", owner) == [("turn", answer.id)]
    assert by_keywords_alone("Alps", owner) == []


def test_the_persons_own_turns_are_keyed_by_their_name(owner):
    Owner.objects.filter(pk=owner.pk).update(display_name="Evan")
    s = session(owner)
    theirs = turn(s, "We took the Prius to the mountains")
    other = turn(s, "Sounds like a great trip with the Prius", role="assistant")
    found = by_keywords_alone("Evan Prius", owner)
    assert found[0] == ("turn", theirs.id) and ("turn", other.id) in found


def test_it_asks_the_vectors_as_the_person_when_a_question_names_them():
    assert signals.as_the_person("What kind of car does Evan drive?", "Evan") == (
        "What kind of car does I drive?"
    )
    assert signals.as_the_person("Where is evan's sister?", "Evan") == "Where is my sister?"
    assert signals.as_the_person("张伟的表姐住哪", "张伟") == "我的表姐住哪"
    assert signals.as_the_person("张伟去过杭州吗", "张伟") == "我去过杭州吗"
    assert signals.as_the_person("What does Evangeline do?", "Evan") == ""  # not a whole word
    assert signals.as_the_person("What car does Evan drive?", "") == ""  # no name set up


def test_a_question_naming_the_person_finds_what_they_said_in_the_first_person(owner):
    Owner.objects.filter(pk=owner.pk).update(display_name="Evan")
    s = session(owner)
    turn(s, "Hey Evan, what's up? Tell me everything, Evan!", role="assistant")
    turn(s, "Evan, you always know how to cheer me up.", role="assistant")
    turn(s, "Good morning Evan! How was your weekend?", role="assistant")
    turn(s, "We watched a movie with the kids and had pizza.")
    theirs = turn(s, "I drive a Prius now, my old car broke down last month.")
    turn(s, "That's great, Evan. Pizza nights are the best.", role="assistant")
    question = "What kind of car does Evan drive?"
    result = search(
        question, owner=Owner.default(), kinds=["turn"], mode="semantic", now=NOW, record=False
    )
    assert keys(result)[0] == ("turn", theirs.id)
    assert result.signals["as_the_person"] == "What kind of car does I drive?"
    assert result.items[0].signals["name"]["names"] == ["Evan"]  # they said it
    addressed = [item for item in result.items if item.id != theirs.id and "Evan" in item.content]
    assert addressed and all("name" not in item.signals for item in addressed)
    plain = search(
        question, owner=Owner.default(), kinds=["turn"], mode="semantic", now=NOW, record=False,
        use_signals=False,
    )  # fmt: skip
    assert keys(plain)[0] != ("turn", theirs.id)  # the name in the question finds "Hey Evan"
