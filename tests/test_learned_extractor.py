"""The learned extractor: its weights load and are checked, it decides on Chinese and English
turns with the bundled e5 vectors, what it accepts is said of the person with dates, and a
damaged file leaves the rules alone and says so in /health."""

import shutil
from datetime import datetime

import numpy as np
import pytest

from curator.models import Fact, PendingItem, Source
from lifecycle.extraction import model
from lifecycle.extraction.extract import extract_turn
from lifecycle.extraction.rulebase import unfilled
from retrieval.embedders import LocalEmbedder
from tests.lifecycle_helpers import session, turn

NOW = datetime(2026, 11, 24, 10, 0)
# Said about the person, found by no rule (the rules' event patterns were removed: the model
# covers them), and something else said to the assistant.
ZH_EVENT = "上周末和大学室友去爬了黄山，风景特别美。"
EN_EVENT = "Last week I went to a pottery class with my sister and made two bowls."
SMALL_TALK = ["你好呀", "哈哈，好的谢谢", "How are you doing today?", "Thanks, that helps!",
              "嗯 好的，我知道了。", "对了，你会说日语吗？"]  # fmt: skip


@pytest.fixture
def fresh_model():
    model.forget()
    yield
    model.forget()


def decide(texts):
    vectors = LocalEmbedder().passages(texts)
    return model.load().decide(np.asarray(vectors), texts)


def test_the_shipped_weights_load_and_match_their_manifest(fresh_model):
    assert model.problem() is None
    loaded = model.load()
    assert 0 < loaded.accept <= loaded.write < 1
    assert "fact" in loaded.types and "preference" in loaded.types


def test_it_keeps_statements_about_the_person_in_chinese_and_english(fresh_model):
    said = [ZH_EVENT, "我女儿今年九月上小学了。", EN_EVENT, "I've been vegetarian for years."]
    kept = decide(said)
    assert all(d.confidence >= 0.6 for d in kept), kept


# What the rules left to the model (their health, skill, commute, sleep and how-taken
# families were removed) and the families real speech brought that no rule reads: likes
# with a degree word, ages as 都…了, what an event was about, a view of a place, fillers.
LEFT_TO_THE_MODEL = [
    "我有轻微的近视。", "我会说三种语言。", "I take the train to work.", "I go to bed around 11.",
    "我特喜欢吃酸菜鱼。", "我都快五十的人了。", "周末的家长开放日主要是听两节课，然后和老师面谈。",
    "我常去的那家理发店手艺挺好，价格也公道，就是离地铁有点远。", "嗯 我电话是13812345678",
]  # fmt: skip


def test_it_keeps_what_the_rules_leave_to_it(fresh_model):
    kept = decide(LEFT_TO_THE_MODEL)
    assert all(d.confidence >= 0.6 for d in kept), list(zip(LEFT_TO_THE_MODEL, kept, strict=True))


def test_a_filler_before_a_statement_is_not_part_of_the_memory():
    assert unfilled("嗯 我电话是13812345678") == "我电话是13812345678"
    assert unfilled("对了，我下周去成都") == "我下周去成都"
    assert unfilled("就是我周末一般都去游泳") == "我周末一般都去游泳"
    assert unfilled("e我在北京工作") == "我在北京工作"
    assert unfilled("um, I live in Leeds") == "I live in Leeds"
    assert unfilled("就是这样") == "就是这样" and unfilled("so much fun") == "so much fun"
    assert (
        model.memory_text("啊 我上个月刚搬到杭州", NOW)
        == "用户上个月刚搬到杭州（上个月：2026-10）。"
    )


def test_it_leaves_greetings_and_questions_alone(fresh_model):
    assert all(d.confidence == 0 for d in decide(SMALL_TALK)), decide(SMALL_TALK)


def test_what_it_keeps_is_said_of_the_user_with_the_date_resolved():
    said = model.memory_text("我上个月和老婆去了杭州。", NOW)
    assert said == "用户上个月和老婆去了杭州（上个月：2026-10）。"
    assert model.memory_text(EN_EVENT, NOW) == (
        "Last week the user went to a pottery class with their sister and made two bowls "
        "(Last week: 2026-11-16)."
    )
    assert model.memory_text("I love hiking with my dog!", NOW) == (
        "The user loves hiking with their dog."
    )


def test_questions_and_small_talk_leave_no_memory_text():
    assert model.memory_text("你去过黄山吗？", NOW) == ""
    assert model.memory_text("Hey Mel! Wow", NOW) == ""
    assert model.memory_text("Hi! Did you go? I went last Sunday.", NOW) == (
        "The user went last Sunday (last Sunday: 2026-11-22)."
    )


@pytest.mark.django_db
def test_a_turn_no_rule_catches_becomes_a_memory_of_the_learned_extractor(fresh_model):
    results = extract_turn(turn(session(), ZH_EVENT))
    (result,) = results
    made = result.fact or result.pending
    content = made.content if result.fact else made.candidate["content"]
    assert content.startswith("用户上周末和大学室友去爬了黄山")
    source = made.source if result.fact else made.candidate["source"]
    assert source == Source.LEARNED


@pytest.mark.django_db
def test_greetings_give_no_memory(fresh_model):
    for n, text in enumerate(SMALL_TALK):
        assert extract_turn(turn(session(f"s{n}"), text)) == []
    assert not Fact.objects.exists() and not PendingItem.objects.exists()


@pytest.fixture
def damaged(tmp_path, monkeypatch):
    copy = tmp_path / "model.npz"
    shutil.copy(model.WEIGHTS, copy)
    shutil.copy(model.WEIGHTS.with_suffix(".json"), copy.with_suffix(".json"))
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))
    monkeypatch.setattr(model, "WEIGHTS", copy)
    model.forget()
    yield copy
    model.forget()


@pytest.mark.django_db
def test_a_damaged_weights_file_leaves_the_rules_and_health_says_so(damaged, client, caplog):
    assert model.load() is None and model.load() is None
    warnings = [r for r in caplog.records if "learned extractor unavailable" in r.getMessage()]
    assert len(warnings) == 1  # said once, not for every turn
    body = client.get("/api/v1/health").json()
    assert body["status"] == "degraded" and body["extractor"] == "rules"
    assert "extractor:" in body["degraded_reason"] and "damaged" in body["degraded_reason"]
    assert extract_turn(turn(session(), ZH_EVENT)) == []  # the model's turn: nothing
    (written,) = extract_turn(turn(session("s2"), "我叫李雷。"))  # the rules still work
    assert written.fact.content == "用户的名字是李雷"


@pytest.mark.django_db
def test_a_missing_weights_file_is_reported_too(tmp_path, monkeypatch, fresh_model):
    monkeypatch.setattr(model, "WEIGHTS", tmp_path / "model.npz")
    assert model.load() is None and "cannot read" in model.problem()


RACE = "我上周参加了公司的马拉松比赛，跑完了半程。"  # no rule catches it; the model is sure


def test_a_turn_said_through_the_api_is_recalled_in_a_later_session(
    api, django_capture_on_commit_callbacks, fresh_model
):
    with django_capture_on_commit_callbacks(execute=True):  # the consumer's tasks run
        said = {"session_id": "race", "turn_index": 0, "role": "user", "content": RACE,
                "timestamp": "2026-11-24T10:00:00+08:00"}  # fmt: skip
        assert api.post("/turns", said).status_code == 201
        assert api.post("/sessions/race/end").status_code == 202
    (memory,) = Fact.objects.filter(source=Source.LEARNED)
    assert memory.content == "用户上周参加了公司的马拉松比赛，跑完了半程（上周：2026-11-16）。"
    assert memory.source_turn_id is not None
    with django_capture_on_commit_callbacks(execute=True):
        asked = {"query": "还记得我上周参加了什么比赛吗？", "session_id": "a-new-one"}
        context = api.post("/context", asked).json()
    assert "马拉松" in context["text"]


HEDGED = "上周末好像和大学室友去爬了黄山，风景特别美。"


def test_a_less_certain_statement_waits_for_review(
    api, django_capture_on_commit_callbacks, fresh_model
):
    with django_capture_on_commit_callbacks(execute=True):
        said = {"session_id": "hike", "turn_index": 0, "role": "user", "content": HEDGED,
                "timestamp": "2026-11-24T10:00:00+08:00"}  # fmt: skip
        assert api.post("/turns", said).status_code == 201
        assert api.post("/sessions/hike/end").status_code == 202
    (item,) = PendingItem.objects.all()
    assert item.candidate["source"] == Source.LEARNED and 0.6 <= item.confidence < 0.85
    assert (
        item.candidate["content"]
        == "用户上周末好像和大学室友去爬了黄山，风景特别美（上周：2026-11-16）。"
    )
