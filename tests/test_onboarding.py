"""The onboarding functions (used by the wizard and, later, the API): draft, validation,
an all-or-nothing confirm through the write path, replay, reset."""

import os

import pytest

from curator import cards, onboarding
from curator.models import (
    Actor,
    CardRevision,
    Fact,
    FactStatus,
    MemoryEvent,
    Owner,
    Priority,
    Source,
)

pytestmark = pytest.mark.django_db

ANSWERS = {
    "assistant_name": "十一",
    "positioning": "务实的工程搭档",
    "tone": "直接、温和",
    "boundaries": "删除文件前先问我\n代我发消息前先问我",
    "taboos": "不编造结果",
    "priorities": "",
    "address": "小李",
    "background": "杭州的后端工程师",
    "tech": "Python\n- Django",
    "collaboration": "",
    "notes": "",
}


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    return settings.MEMORY_DIR


@pytest.fixture
def owner():
    return Owner.default()


def test_status_lists_every_question_as_plain_data(owner):
    data = onboarding.status(owner)
    assert data["identity_confirmed"] is False and data["step"] == 1
    assert [s["key"] for s in data["steps"]] == ["assistant", "person", "summary"]
    keys = [q["key"] for q in data["questions"]]
    assert keys[:2] == ["assistant_name", "positioning"] and "address" in keys
    name = data["questions"][0]
    assert name["required"] and name["default"] == "Shiyi" and name["example"]
    assert all(isinstance(q["label"], str) for q in data["questions"])


def test_the_address_defaults_to_the_display_name(owner):
    owner.display_name = "李雷"
    owner.save()
    assert onboarding.answers(owner)["address"] == "李雷"


def test_validation_reports_each_problem_in_place():
    cleaned, errors = onboarding.validate({"assistant_name": "  ", "positioning": "x" * 1001}, 1)
    assert set(errors) == {"assistant_name", "positioning"}
    assert "1000" in errors["positioning"]
    cleaned, errors = onboarding.validate({"assistant_name": " 十\n一 ", "positioning": "ok"}, 1)
    assert not errors and cleaned["assistant_name"] == "十 一"


def test_the_draft_keeps_what_was_typed_even_when_invalid(owner):
    onboarding.save_draft(owner, {"assistant_name": "", "tone": "calm"}, 1)
    onboarding.save_draft(owner, {"address": "Li"}, 2)
    owner.refresh_from_db()
    assert onboarding.answers(owner)["tone"] == "calm"
    assert onboarding.answers(owner)["assistant_name"] == ""
    assert onboarding.current_step(owner) == 2 and onboarding.reached_step(owner) == 2


def test_the_cards_are_markdown_built_from_the_answers():
    cleaned, _errors = onboarding.validate(ANSWERS)
    persona = onboarding.persona_card(cleaned)
    assert persona.startswith("# 十一\n\n务实的工程搭档\n")
    assert "- 删除文件前先问我\n- 代我发消息前先问我" in persona
    assert "Priority behaviours" not in persona  # empty answers leave no empty heading
    user = onboarding.user_card(cleaned)
    assert "- **Address as**: 小李" in user and "- Python\n- Django" in user


def test_submit_writes_cards_facts_and_owner_together(owner, memory_dir):
    result = onboarding.submit(ANSWERS, owner=owner)
    assert result.ok and not result.errors
    owner.refresh_from_db()
    assert owner.identity_confirmed and owner.display_name == "小李"
    assert (memory_dir / "system" / "ShiYi.md").read_text().startswith("# 十一")
    assert "小李" in (memory_dir / "shared" / "User.md").read_text()
    facts = Fact.objects.filter(owner=owner, source=Source.ONBOARDING)
    assert facts.count() == len(result.facts) == 8
    assert all(f.verified and f.priority == Priority.PERMANENT for f in facts)
    assert all(f.expires_at is None and f.status == FactStatus.ACTIVE for f in facts)
    name = facts.get(subject="assistant", predicate="name")
    assert name.scope == "system" and name.type == "identity" and "十一" in name.content
    assert facts.get(subject="user", predicate="tech_preferences").type == "preference"
    revisions = CardRevision.objects.filter(card__in=["persona", "user"])
    assert {r.author for r in revisions} == {"onboarding"} and revisions.count() == 2


def test_the_persons_answers_keep_their_punctuation(owner):
    onboarding.submit({**ANSWERS, "tech": "Python。"}, owner=owner)
    tech = Fact.objects.get(subject="user", predicate="tech_preferences")
    assert tech.content.endswith("Python。")  # not "Python." : what the summary showed


def test_submit_refuses_invalid_answers_and_says_which_step(owner):
    result = onboarding.submit({**ANSWERS, "address": ""}, owner=owner)
    assert not result.ok and result.code == "invalid" and result.step == 2
    assert not Fact.objects.exists() and cards.read("user") == ""


def test_a_failure_mid_write_leaves_old_files_and_no_facts(owner, memory_dir, monkeypatch):
    cards.save("persona", "# old persona\n", "person")
    cards.save("user", "# old user\n", "person")
    real = os.replace
    calls = []

    def second_rename_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", second_rename_fails)
    with pytest.raises(OSError):
        onboarding.submit(ANSWERS, owner=owner)
    monkeypatch.setattr(os, "replace", real)
    assert cards.read("persona") == "# old persona\n" and cards.read("user") == "# old user\n"
    assert not Fact.objects.filter(source=Source.ONBOARDING).exists()
    assert not MemoryEvent.objects.exists()
    assert CardRevision.objects.filter(author="onboarding").count() == 0
    owner.refresh_from_db()
    assert not owner.identity_confirmed
    assert sorted(os.listdir(memory_dir / "shared")) == ["User.md"]


def test_a_failure_in_the_write_path_leaves_nothing_behind(owner, monkeypatch):
    from curator import writepath

    real = writepath.propose
    count = []

    def third_fails(*args, **kwargs):
        count.append(1)
        if len(count) == 3:
            raise RuntimeError("database went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(writepath, "propose", third_fails)
    with pytest.raises(RuntimeError):
        onboarding.submit(ANSWERS, owner=owner)
    assert not Fact.objects.exists() and cards.read("persona") == ""
    owner.refresh_from_db()
    assert not owner.identity_confirmed


def test_a_refused_candidate_is_an_error_not_a_half_write(owner, monkeypatch):
    from curator import writepath

    def refuses(*args, **kwargs):
        raise writepath.InvalidCandidate("too long", field="content")

    monkeypatch.setattr(writepath, "propose", refuses)
    result = onboarding.submit(ANSWERS, owner=owner)
    assert not result.ok and "too long" in result.errors["__all__"]
    assert cards.read("persona") == ""


def test_the_same_operation_id_twice_is_a_replay(owner):
    first = onboarding.submit(ANSWERS, owner=owner, operation_id="chat-42", actor=Actor.AGENT)
    again = onboarding.submit(ANSWERS, owner=owner, operation_id="chat-42", actor=Actor.AGENT)
    assert first.ok and again.ok and again.replayed
    assert Fact.objects.count() == 8
    assert MemoryEvent.objects.filter(operation_id__startswith="chat-42:").count() == 8


def test_a_second_submit_is_refused_once_confirmed(owner):
    assert onboarding.submit(ANSWERS, owner=owner).ok
    again = onboarding.submit({**ANSWERS, "tone": "formal"}, owner=owner)
    assert not again.ok and again.code == "already_confirmed"


def test_an_agent_can_run_the_same_questions(owner):
    """The API path: read the questions, answer them, submit; the same result as the wizard."""
    data = onboarding.status(owner)
    answers = {q["key"]: q["default"] for q in data["questions"]}
    answers.update(positioning="a helper", address="Li")
    result = onboarding.submit(answers, owner=owner, actor=Actor.AGENT, operation_id="op-1")
    assert result.ok and result.to_dict()["facts"]
    assert onboarding.status(owner)["identity_confirmed"] is True
    assert MemoryEvent.objects.filter(operation_id="op-1:address", actor="agent").exists()


def test_reset_reopens_the_wizard_prefilled_and_changes_nothing_else(owner):
    onboarding.submit(ANSWERS, owner=owner)
    before = cards.read("persona")
    effects = onboarding.reset_effects(owner)
    assert effects["confirmed"] and effects["facts"] == 8 and effects["prefilled"]
    onboarding.reset(owner)
    owner.refresh_from_db()
    assert not owner.identity_confirmed and onboarding.current_step(owner) == 1
    assert onboarding.answers(owner)["tone"] == "直接、温和"
    assert cards.read("persona") == before and Fact.objects.active().count() == 8


def test_confirming_again_supersedes_changed_answers_and_keeps_the_rest(owner):
    onboarding.submit(ANSWERS, owner=owner)
    onboarding.reset(owner)
    owner.refresh_from_db()
    result = onboarding.submit({**ANSWERS, "tone": "正式"}, owner=owner)
    assert result.ok
    tone = Fact.objects.get(subject="assistant", predicate="tone", status=FactStatus.ACTIVE)
    assert "正式" in tone.content and tone.supersedes is not None
    assert Fact.objects.active().count() == 8
    assert "正式" in cards.read("persona")
    assert CardRevision.objects.filter(card="persona").count() == 2


def test_status_after_confirming_shows_the_confirmed_answers(owner):
    onboarding.submit(ANSWERS, owner=owner)
    owner.refresh_from_db()
    data = onboarding.status(owner)
    assert data["identity_confirmed"] and data["answers"]["address"] == "小李"
    tech = Fact.objects.get(subject="user", predicate="tech_preferences")
    assert tech.content.endswith(": Python; Django")
