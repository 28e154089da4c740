"""What a question says beyond its words (issue 31): memory keys, the turn before, a time it is
bound to, a question about the present, names, and questions naming two things."""

from datetime import UTC, datetime

import pytest

from curator.models import Fact, FactStatus, Owner
from retrieval import decompose, signals
from retrieval.search import search
from tests.search_helpers import fact, session, turn

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


@pytest.fixture
def owner(db):
    return Owner.default()


def at(year: int, month: int, day: int = 15) -> datetime:
    return datetime(year, month, day, 10, tzinfo=UTC)


def keys(result) -> list[tuple[str, int]]:
    return [(item.kind, item.id) for item in result.items]


# Reading the question ------------------------------------------------------------------


def test_it_reads_names_times_the_present_and_two_parts():
    asked = signals.analyse("张伟去年夏天去了杭州吗", NOW)
    assert set(asked.names) == {"张伟", "杭州"}
    assert (asked.time.start, asked.time.end) == (
        at(2025, 6, 1).replace(hour=0),
        at(2025, 9, 1).replace(hour=0),
    )
    assert signals.analyse("我现在住哪", NOW).latest
    assert not signals.analyse("我以前住哪", NOW).latest
    assert signals.analyse("where did I live before I moved", NOW).anchor_side == "before"
    parts = signals.analyse("我表姐和我上司谁年纪大", NOW).parts
    assert len(parts) == 2 and "表姐" in parts[0] and "上司" in parts[1]
    assert "上司" not in parts[0] and "表姐" not in parts[1]
    assert signals.analyse("What did Caroline paint?", NOW).names == ("Caroline",)


def test_me_and_a_companion_is_not_two_things_to_search_apart():
    # "放假我和好姐妹去哪玩" asks where I go with my friend: searching "放假" on its own and
    # keeping its best in the top 5 put an unrelated holiday turn there.
    assert signals.analyse("放假我和好姐妹打算去哪玩？", NOW).parts == ()
    assert signals.analyse("我跟老公上次去哪吃的饭", NOW).parts == ()
    assert signals.analyse("放假我和好姐妹都去哪个城市玩了", NOW).parts == ()
    assert signals.analyse("我的表姐和我上司谁年纪大", NOW).parts == (
        "表姐 年纪 大",
        "上司 年纪 大",
    )


# Memory keys and the turn before --------------------------------------------------------


def test_a_turn_is_found_through_the_memory_extracted_from_it(owner):
    s = session(owner)
    turn(s, "How was the weekend?", when=at(2026, 3, 1))
    answer = turn(s, "Oh it was lovely, she said yes!", when=at(2026, 3, 1))
    turn(s, "My girlfriend loves the proposal scene in that film", when=at(2026, 3, 2))
    memory = fact(owner, "The user's girlfriend accepted the marriage proposal", source_turn=answer)
    result = search(
        "did my girlfriend accept the proposal", owner=owner, kinds=["turn"], now=NOW, record=False
    )
    assert keys(result)[0] == ("turn", answer.id)
    assert result.items[0].signals["memory"]["id"] == memory.id
    assert all(item.kind == "turn" for item in result.items)  # the fact was only a key
    plain = search(
        "did my girlfriend accept the proposal",
        owner=owner,
        kinds=["turn"],
        now=NOW,
        record=False,
        use_signals=False,
    )
    assert ("turn", answer.id) not in keys(plain)[:1]


def test_an_answer_is_found_by_meaning_through_the_question_before_it(owner):
    s = session(owner)
    turn(s, "What's the dish you love to cook most?", when=at(2026, 3, 1))
    answer = turn(s, "Definitely the one gran taught me, every single Sunday.", when=at(2026, 3, 1))
    turn(s, "The train to Leeds was late again", when=at(2026, 3, 2))
    turn(s, "My sister bakes bread on weekends", when=at(2026, 3, 3))
    result = search(
        "favourite meal to prepare", owner=owner, mode="semantic", now=NOW, record=False
    )
    found = {(i.kind, i.id): i for i in result.items}
    assert found[("turn", answer.id)].signals["previous"]["kind"] == "turn"


def test_a_reply_to_a_statement_does_not_take_the_statements_meaning(owner):
    """The assistant's "好的，我记下了。" after what the person said is not evidence of it: it
    must not take a place from the person's other turn about the same friend."""
    s = session(owner)
    said = turn(s, "我朋友小林在广告公司画图，这周又加班到半夜", when=at(2026, 3, 1))
    reply = turn(s, "好的，我记下了。", when=at(2026, 3, 1), role="assistant")
    other = session(owner, "s2")
    again = turn(other, "小林周末约我去看设计展", when=at(2026, 3, 8))
    turn(other, "听起来不错！", when=at(2026, 3, 8), role="assistant")
    for n, text in enumerate(("今天地铁好挤", "晚上吃什么好呢", "外面下雨了", "刚下班到家")):
        turn(session(owner, f"noise{n}"), text, when=at(2026, 4, n + 1))
    result = search("我那个做设计的朋友叫什么", owner=owner, limit=3, now=NOW, record=False)
    top = keys(result)
    assert ("turn", said.id) in top and ("turn", again.id) in top
    assert ("turn", reply.id) not in top
    assert all("previous" not in i.signals for i in result.items)


def test_it_tells_a_turn_that_asks_from_one_that_states():
    assert signals.asks("What's the dish you love to cook most?")
    assert signals.asks("你去过杭州吗")
    assert signals.asks("你最近怎么样呢？")
    assert not signals.asks("我去过杭州。")
    assert not signals.asks("好的，我记下了。")


# Time -----------------------------------------------------------------------------------


def test_a_time_bound_question_ranks_the_in_range_turn_first(owner):
    s = session(owner)
    summer = turn(s, "我们去海边玩了，在青岛住了三天", when=at(2025, 7, 20))
    spring = turn(s, "我们去海边玩了，在三亚住了五天，海边真好", when=at(2026, 4, 2))
    result = search("去年夏天我们去的海边是哪里", owner=owner, now=NOW, record=False)
    assert keys(result)[0] == ("turn", summer.id)
    assert result.signals["searched_first"]["text"] == "去年夏天"
    assert result.items[0].signals["time"]["text"] == "去年夏天"
    assert "time" not in {(i.kind, i.id): i for i in result.items}[("turn", spring.id)].signals
    assert result.to_dict()["signals"]["time"]["text"] == "去年夏天"


def test_last_spring_searches_that_season_even_beyond_the_top_k(owner):
    s = session(owner)
    for n in range(12):
        turn(
            s,
            f"Went hiking in the hills again, trail number {n}, hiking is the best",
            when=at(2026, 9, 1 + n),
        )
    spring = turn(s, "A short hike by the river", when=at(2026, 4, 10))
    result = search("where did I go hiking last spring", owner=owner, now=NOW, k=5, record=False)
    assert keys(result)[0] == ("turn", spring.id)


def test_before_an_event_searches_the_time_before_it(owner):
    s = session(owner)
    leeds = turn(s, "I live in a small flat in Leeds", when=at(2024, 1))
    turn(s, "We finally moved to Berlin last week!", when=at(2025, 3))
    turn(s, "I live in a lovely flat in Berlin, near the park", when=at(2025, 6))
    result = search("where did I live before I moved", owner=owner, now=NOW, record=False)
    assert keys(result)[0] == ("turn", leeds.id)
    assert result.signals["searched_first"]["text"] == "before moved"


def test_an_event_the_memory_never_names_bounds_no_time(owner):
    # Nothing says 登山 (only 爬山): the turn matching one character of it is no anchor,
    # and the range after it would leave out the turn the question is about.
    hike = turn(session(owner), "周六去青城山爬山，下山的时候膝盖疼得不行", when=at(2025, 4))
    turn(session(owner, "s2"), "朵朵今天在幼儿园画了一座山", when=at(2025, 9))
    turn(session(owner, "s3"), "膝盖好多了，可以跑步了", when=at(2025, 10))
    result = search("我上次登山之后哪儿疼", owner=owner, now=NOW, record=False)
    assert result.signals["searched_first"] is None
    assert ("turn", hike.id) in keys(result)[:2]


def test_a_question_about_now_prefers_the_newest_of_a_supersede_chain(owner):
    old = fact(owner, "用户住在上海，住在浦东的老房子里", subject="用户", predicate="住在")
    new = fact(owner, "用户住在北京", subject="用户", predicate="住在", supersedes=old)
    Fact.objects.filter(pk=old.pk).update(status=FactStatus.SUPERSEDED, updated_at=at(2024, 1))
    Fact.objects.filter(pk=new.pk).update(updated_at=at(2026, 10))
    result = search("我现在住在哪里", owner=owner, now=NOW, include_inactive=True, record=False)
    assert keys(result)[0] == ("fact", new.id)
    assert "latest" in result.items[0].signals


# Names and parts ------------------------------------------------------------------------


def test_an_item_sharing_a_name_with_the_question_ranks_first(owner):
    fact(
        owner, "Melanie painted a sunset over the lake last weekend, painting sunsets is her hobby"
    )
    caroline = fact(owner, "Caroline painted a lake at dawn")
    result = search("What did Caroline paint?", owner=owner, now=NOW, record=False)
    assert keys(result)[0] == ("fact", caroline.id)
    assert result.items[0].signals["name"]["names"] == ["Caroline"]


def test_a_question_naming_two_things_finds_evidence_for_each(owner):
    cousin = fact(owner, "我表姐今年三十五岁")
    boss = fact(owner, "我上司今年四十二岁")
    for text in ("我上司喜欢喝咖啡", "我上司下周出差去上海", "我上司开一辆宝马", "我上司姓王",
                 "我上司的女儿在读大学", "我上司年纪大了，记性不好"):  # fmt: skip
        fact(owner, text)
    result = search("我表姐和我上司谁年纪大", owner=owner, now=NOW, limit=5, record=False)
    top = keys(result)
    assert ("fact", cousin.id) in top and ("fact", boss.id) in top
    assert {i.signals.get("part", {}).get("text") for i in result.items} >= set(
        result.signals["parts"]
    )


@pytest.mark.parametrize("embedding", ["slow", "fast"])
def test_the_parts_are_searched_while_the_query_is_embedded_with_the_same_answer(
    owner, monkeypatch, embedding
):
    """Each part's keyword search runs in the wait for the query's embedding when there is
    one (else after KNN): the evidence for each part, and the ranking, are the same."""
    import time

    from retrieval import search as searching

    cousin = fact(owner, "我表姐今年三十五岁")
    boss = fact(owner, "我上司今年四十二岁")
    for text in ("我上司喜欢喝咖啡", "我上司下周出差去上海", "我上司开一辆宝马", "我上司姓王",
                 "我上司的女儿在读大学", "我上司年纪大了，记性不好"):  # fmt: skip
        fact(owner, text)
    question = "我表姐和我上司谁年纪大"
    before = search(question, owner=owner, now=NOW, limit=5, record=False)
    searched_in_wait = []
    real_embed, real_parts = searching._embed_and_knn, searching._part_keys

    real_rows = searching.load_rows

    def embed(*args):
        time.sleep(0.3 if embedding == "slow" else 0)
        return real_embed(*args)

    def rows(found):  # the keyword candidates' rows, read in the wait before the parts
        time.sleep(0.3 if embedding == "fast" else 0)  # the embedding is done by then
        return real_rows(found)

    def parts(found, f):
        searched_in_wait.append(not searching_done[0])
        return real_parts(found, f)

    searching_done = [False]
    real_finish = searching._finish_vector

    def finish(*args):
        searching_done[0] = True
        return real_finish(*args)

    monkeypatch.setattr(searching, "_embed_and_knn", embed)
    monkeypatch.setattr(searching, "_part_keys", parts)
    monkeypatch.setattr(searching, "_finish_vector", finish)
    monkeypatch.setattr(searching, "load_rows", rows)
    result = search(question, owner=owner, now=NOW, limit=5, record=False)
    assert searched_in_wait == [embedding == "slow"]
    assert keys(result) == keys(before) and {("fact", cousin.id), ("fact", boss.id)} <= set(
        keys(result)
    )
    assert [i.signals for i in result.items] == [i.signals for i in before.items]


def test_a_question_about_two_people_returns_a_turn_about_each_in_the_top_five(owner):
    s = session(owner)
    for n in range(6):  # Melanie talking to Caroline: every word of the question, six times
        turn(s, f"Melanie: Caroline, I like painting, I like sunsets, I like it {n} times")
    hiking = turn(s, "Caroline: I like hiking in the mountains")
    result = search("What do Melanie and Caroline both like?", owner=owner, limit=5, record=False)
    assert result.signals["parts"] == ["melanie like", "caroline like"]
    assert ("turn", hiking.id) in keys(result)
    placed = next(i for i in result.items if i.id == hiking.id)
    assert placed.signals["part"] == {"text": "caroline like", "n": 2, "of": 2}


def test_a_question_is_split_only_when_it_asks_about_both_things():
    assert signals.analyse("What did Nate cook and eat last week?", NOW).parts == ()
    assert signals.analyse("When did Nate and Joanna both move?", NOW).parts == ()
    assert signals.analyse("我还是觉得有点害怕", NOW).parts == ()  # 还是: "still"
    parts = signals.analyse("Lisa: 我觉得篮球和足球都不错", NOW).parts
    assert parts == ("篮球 觉得 不错", "足球 觉得 不错")


def test_the_parts_rankings_are_woven_into_the_top_k():
    main = ["a", "b", "c", "d", "e", "f"]
    order, placed = decompose.interleave(main, [["f", "e"], ["c"]], limit=5)
    assert order == ["a", "f", "c", "b", "e", "d"]
    assert placed == {"f": 1, "c": 2, "e": 1}


def test_a_turn_said_by_the_person_named_ranks_above_one_addressing_them(owner):
    s = session(owner)
    told = turn(s, "Nate: Joanna made a cake, wow")
    said = turn(s, "Joanna: I made a cake, yes")
    for text in ("Nate: the weather is nice today", "Nate: my turtles are fine", "Joanna: hi"):
        turn(s, text)
    result = search("What has Joanna made?", owner=owner, record=False)
    assert keys(result).index(("turn", said.id)) < keys(result).index(("turn", told.id))
    assert result.items[0].signals["name"]["speaker"] is True
    assert "name" not in next(i for i in result.items if i.id == told.id).signals


def test_the_api_explains_the_signals_of_the_question_and_of_each_result(owner, api):
    s = session(owner)
    summer = turn(s, "我们去海边玩了，在青岛住了三天", when=at(2025, 7, 20))
    turn(s, "周末在家看书", when=at(2026, 11, 1))
    response = api.post("/search", {"query": "去年夏天我们去的海边", "explain": True})
    body = response.json()
    assert response.status_code == 200
    assert body["signals"]["time"]["text"] == "去年夏天"
    top = body["results"][0]
    assert (top["kind"], top["id"]) == ("turn", summer.id) and top["signals"]["time"][
        "text"
    ] == "去年夏天"


def test_a_transcript_as_the_query_is_searched_by_meaning_through_the_persons_lines(owner):
    from tests.search_helpers import episode

    show = episode(owner, "用户在元旦晚会上表演了魔术节目", when=at(2026, 1, 1))
    episode(owner, "用户周末和朋友去香山爬山，看了红叶", when=at(2026, 10, 1))
    transcript = (
        "Bart: 元旦晚会我要上台表演，有点紧张\n"
        "Assistant: 别紧张！就像你上次去香山爬山看红叶一样，一步一步来\n"
        "Assistant: 爬山的时候你也很勇敢，看红叶那天你也很开心"
    )
    assert signals.analyse(transcript, NOW).person == "Bart: 元旦晚会我要上台表演，有点紧张"
    result = search(transcript, owner=owner, mode="semantic", now=NOW, record=False)
    assert keys(result)[0] == ("episode", show.id)


def test_each_channels_best_hit_stays_in_the_top_five():
    from retrieval.scoring import Scored
    from retrieval.search import _channel_bests_kept

    def scored(n, keyword=None, vector=None):
        return Scored("fact", n, 1 - n / 100, n, "both", {"keyword": keyword, "vector": vector})

    # The fusion ranked the vector channel's best 9th and the keyword channel's best 7th.
    ranked = [scored(n, keyword=n + 1, vector=n + 2) for n in range(1, 7)]
    ranked += [scored(7, keyword=1), scored(8), scored(9, vector=1)]
    kept = _channel_bests_kept(ranked, 5)
    assert [s.object_id for s in kept[:5]] == [1, 2, 3, 7, 9]
    assert [s.rank for s in kept] == list(range(1, 10))
    assert _channel_bests_kept(kept, 5) == kept  # nothing to move: the order stays


def test_a_question_in_chinese_is_told_apart_from_one_in_english():
    assert signals.is_chinese("奶奶给过我什么首饰？")
    assert signals.is_chinese("Lisa: 我在动物园看到了金丝猴")
    assert not signals.is_chinese("What did Caroline paint last May?")
    assert not signals.is_chinese("")


def test_the_default_sets_the_channel_shares_per_question_a_callers_weights_stay(owner):
    for text in ["我在杭州开了一家咖啡店", "杭州的西湖很美", "周末去杭州看朋友", "我喜欢喝咖啡"]:
        fact(owner, text)
    result = search("我在杭州开的咖啡店", owner=owner, now=NOW, record=False)
    shares = result.signals["shares"]
    assert shares["chinese"] and shares["semantic"] + shares["keyword"] == pytest.approx(0.85)
    assert result.weights["semantic"] == pytest.approx(shares["semantic"], abs=1e-4)
    # /context's recall gates keep the weights they were chosen with.
    assert result.base_weights == pytest.approx(
        {"semantic": 0.40, "keyword": 0.45, "freshness": 0.15, "importance": 0.0, "access": 0.0}
    )
    given = {"semantic": 0.4, "keyword": 0.45, "freshness": 0.15}
    fixed = search("我在杭州开的咖啡店", owner=owner, now=NOW, record=False, weights=given)
    assert fixed.signals["shares"] is None and fixed.weights["keyword"] == pytest.approx(0.45)
    seed = search("我在杭州开的咖啡店", owner=owner, now=NOW, record=False, preset="shiyi")
    assert seed.signals["shares"] is None
