"""Context assembly: cards + recent turns + evidence within the budget (seed 000 section 5)."""

from pathlib import Path

import pytest

from curator.models import Owner
from retrieval.context import Budgets, assemble
from tests.search_helpers import days_ago, fact, session, turn


@pytest.fixture
def owner(db):
    return Owner.default()


@pytest.fixture
def cards(settings):
    """Persona and user cards where the cards feature keeps them."""
    root = Path(settings.MEMORY_DIR)
    (root / "system").mkdir(parents=True, exist_ok=True)
    (root / "shared").mkdir(parents=True, exist_ok=True)
    (root / "system" / "ShiYi.md").write_text("# 十一\n- 语气：简洁、直接\n", encoding="utf-8")
    (root / "shared" / "User.md").write_text("# 李雷\n- 后端工程师，住在杭州\n", encoding="utf-8")
    yield root
    for rel in ("system/ShiYi.md", "shared/User.md"):
        (root / rel).unlink(missing_ok=True)


def section(result, name):
    return next(s for s in result.sections if s.name == name)


def test_a_triggered_message_gets_cards_turns_and_evidence(owner, cards):
    memory = fact(owner, "用户上次面试的公司是网易")
    s = session(owner)
    turn(s, "我们来准备下周的面试吧")
    turn(s, "好的，先回顾一下", role="assistant")
    result = assemble("你还记得我上次面试的公司吗", owner=owner, session_id=s, record=False)
    assert result.triggered and [t.text for t in result.detection.triggers] == ["还记得", "上次"]
    assert [i["id"] for i in section(result, "cards").items] == ["persona", "user"]
    assert [i["turn_index"] for i in section(result, "turns").items] == [0, 1]  # oldest first
    assert section(result, "evidence").items[0] == {
        **section(result, "evidence").items[0],
        "kind": "fact",
        "id": memory.id,
    }
    text = result.text
    assert (
        text.index("## Who we are")
        < text.index("## Recent conversation")
        < text.index("## Relevant memories")
    )
    assert "网易" in text and "语气" in text and "user: 我们来准备下周的面试吧" in text


def test_without_a_trigger_an_unrelated_memory_stays_under_the_gate(owner, cards):
    tea = fact(owner, "用户喜欢乌龙茶")
    result = assemble("帮我写一个排序函数", owner=owner, record=False)
    assert not result.triggered and section(result, "evidence").items == []
    assert result.recall.mode == "gated"
    assert result.recall.kinds == ("fact", "episode", "turn", "attachment")
    assert [c["id"] for c in result.recall.cut] == [tea.id]  # searched, cut by the gate
    always = assemble("帮我写一个排序函数", owner=owner, evidence_mode="always", record=False)
    assert [i["id"] for i in section(always, "evidence").items] == [tea.id]


def test_without_a_trigger_a_related_memory_joins_the_evidence(owner, cards):
    tea = fact(owner, "用户喜欢乌龙茶，不喜欢咖啡")
    fact(owner, "用户的项目 orchard 用 Django 写成")
    result = assemble("下午想喝点茶，乌龙茶怎么泡好喝", owner=owner, record=False)
    assert not result.triggered and result.recall.mode == "gated"
    assert [i["id"] for i in section(result, "evidence").items] == [tea.id]
    assert "乌龙茶" in result.text.split("## Relevant memories")[1]


def test_never_turns_recall_off(owner, cards):
    fact(owner, "用户喜欢乌龙茶")
    result = assemble("还记得我喜欢喝什么茶吗", owner=owner, evidence_mode="never", record=False)
    assert result.search is None and section(result, "evidence").items == []
    assert result.recall.mode == "off"


def test_only_the_injected_evidence_counts_as_recalled(owner, cards):
    tea = fact(owner, "用户喜欢乌龙茶")
    other = fact(owner, "用户的项目 orchard 用 Django 写成")
    assemble("乌龙茶怎么泡", owner=owner)
    tea.refresh_from_db()
    other.refresh_from_db()
    assert tea.access_count == 1 and other.access_count == 0


def test_evidence_is_three_to_five_items_within_its_budget(owner, cards):
    for n in range(8):
        fact(owner, f"orchard 的第 {n} 条经验：" + "部署之前先跑迁移。" * 20)
    result = assemble("还记得 orchard 的经验吗", owner=owner, record=False)
    ev = section(result, "evidence")
    assert 3 <= len(ev.items) <= 5 and ev.tokens <= ev.budget


def test_a_time_expression_filters_the_evidence_turns(owner):
    s = session(owner)
    old = turn(s, "orchard 部署失败", when=days_ago(9))
    turn(s, "orchard 部署成功", when=days_ago(1))
    result = assemble("昨天 orchard 怎么样了", owner=owner, record=False)
    assert result.detection.times[0].text == "昨天"
    ids = [i["id"] for i in section(result, "evidence").items if i["kind"] == "turn"]
    assert old.id not in ids and ids


def test_over_budget_cuts_evidence_then_old_turns_never_cards(owner, cards):
    for n in range(5):
        fact(owner, f"orchard 记忆 {n} " + "细节" * 60)
    s = session(owner)
    for n in range(12):
        turn(s, f"第 {n} 轮：" + "讨论 orchard " * 30)
    budgets = Budgets(max_tokens=900, cards=600, turns=2000, evidence=900, reserve=300)
    result = assemble("还记得 orchard 吗", owner=owner, session_id=s, budgets=budgets, record=False)
    assert section(result, "evidence").items == [] and section(result, "evidence").dropped
    turns = section(result, "turns")
    assert turns.dropped and turns.items[-1]["turn_index"] == 11  # the newest stayed
    assert len(section(result, "cards").items) == 2
    assert sum(s.tokens for s in result.sections) <= budgets.max_tokens - budgets.reserve


def test_the_result_serialises_for_the_api(owner, cards):
    body = assemble("hello", owner=owner, record=False).to_dict()
    assert set(body) >= {"text", "sections", "budget", "triggered", "tokens"}
    assert body["budget"]["max_tokens"] == 4000
    assert [s["name"] for s in body["sections"]] == ["cards", "turns", "evidence"]
    assert all(set(s) >= {"name", "tokens", "items", "budget"} for s in body["sections"])
