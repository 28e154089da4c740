"""The search service: filters, breakdowns, presets, access counters and the recall log."""

import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from curator.models import Fact, FactStatus, Owner
from retrieval.models import EmbeddingSpace, RecallHit, RecallLog
from retrieval.search import SearchError, load_rows, recalls_of, search
from tests.search_helpers import days_ago, episode, fact, session, turn


@pytest.fixture
def owner(db):
    return Owner.default()


def ids(result, kind="fact"):
    return [i.id for i in result.items if i.kind == kind]


def test_it_finds_by_keywords_and_by_meaning(owner):
    hangzhou = fact(owner, "用户住在杭州，周末喜欢爬山")
    editor = fact(owner, "The user edits code in Neovim")
    assert ids(search("杭州", owner=owner, record=False))[0] == hangzhou.id
    assert ids(search("which text editor do they use?", owner=owner, record=False))[0] == editor.id


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_knn_runs_beside_the_keyword_search():
    owner = Owner.default()
    editor = fact(owner, "The user edits code in Neovim")
    fact(owner, "用户住在杭州")
    result = search("which text editor do they use?", owner=owner, record=False)
    assert ids(result)[0] == editor.id and result.items[0].found_by in ("vector", "both")
    assert {"embedding", "knn", "fts"} <= set(result.timings_ms)


@pytest.mark.django_db(transaction=True)
def test_a_hybrid_search_ranks_the_same_inside_a_transaction_as_outside():
    """Outside a transaction KNN ranks the shared vector file's codes and rescoring reads the
    exact vectors, FTS runs beside the embedding; inside one, sqlite-vec and FTS5 answer in
    the request's thread. Both rank the same items with the same scores (to float32
    rounding): the fast path changes how candidates are found, never which win."""
    from django.db import transaction

    owner = Owner.default()
    sess = session(owner)
    for n, text in enumerate(
        [
            "用户住在杭州，周末喜欢爬山",
            "杭州的天气很热",
            "The user edits code in Neovim",
            "Neovim 的插件在杭州写的",
            "用户喜欢喝乌龙茶",
            "They moved to Hangzhou last spring",
            "用户的猫叫橘子",
            "周末去西湖散步",
            "The cat is called Orange",
            "用户在学日语",
        ]
    ):
        fact(owner, text, importance=n / 10)
    fact(owner, "用户以前住在上海", status=FactStatus.ARCHIVED)
    turn(sess, "我们周末去杭州爬山吧")
    turn(sess, "Sounds good, which mountain?")
    now = timezone.now()  # freshness is measured from it
    for query in ("杭州", "what editor do they use", "周末 爬山", "猫的名字", "tea"):
        with transaction.atomic():
            inside = search(query, owner=owner, record=False, now=now)
        beside = search(query, owner=owner, record=False, now=now)
        assert "knn" in beside.timings_ms and beside.channels == inside.channels
        assert [(s.key, s.found_by) for s in beside.ranked] == [
            (s.key, s.found_by) for s in inside.ranked
        ]
        for a, b in zip(beside.ranked, inside.ranked, strict=True):
            # sqlite-vec's cosine and numpy's differ in the last float32 bits; min-max
            # normalisation over a narrow range makes that 1e-6 of a score
            assert a.score == pytest.approx(b.score, abs=1e-5)
            sem_a, sem_b = a.breakdown["semantic"].raw, b.breakdown["semantic"].raw
            assert (sem_a is None) == (sem_b is None)
            assert sem_a is None or sem_a == pytest.approx(sem_b, abs=1e-6)


def test_every_result_explains_its_score(owner):
    fact(owner, "用户住在杭州")
    result = search("杭州", owner=owner, record=False)
    body = result.to_dict()
    top = body["results"][0]
    assert set(top) >= {"kind", "id", "content", "score", "rank", "found_by", "breakdown", "ranks"}
    assert top["found_by"] == "both" and top["ranks"] == {"keyword": 1, "vector": 1}
    assert set(top["breakdown"]) == {"semantic", "keyword", "freshness", "importance", "access"}
    parts = top["breakdown"]["semantic"]
    assert set(parts) == {"raw", "normalized", "weight", "contribution"}
    assert top["score"] == pytest.approx(
        sum(p["contribution"] for p in top["breakdown"].values()), abs=1e-5
    )
    assert body["degraded"] is False and body["degraded_reason"] is None
    assert {"segmentation", "fts", "embedding", "knn", "scoring", "total"} <= set(
        body["timings_ms"]
    )


def test_inactive_and_expired_facts_stay_out_unless_asked(owner):
    old = fact(owner, "住在北京 (old)", status=FactStatus.SUPERSEDED)
    archived = fact(owner, "住在北京 archived", status=FactStatus.ARCHIVED)
    expired = fact(owner, "住在北京 expired", expires_at=days_ago(1))
    live = fact(owner, "住在北京 now")
    assert ids(search("北京", owner=owner, record=False)) == [live.id]
    everything = ids(search("北京", owner=owner, include_inactive=True, record=False))
    assert set(everything) == {old.id, archived.id, expired.id, live.id}


def test_a_status_changed_behind_the_indexs_back_is_still_respected(owner):
    item = fact(owner, "住在北京")
    Fact.objects.filter(pk=item.pk).update(status=FactStatus.ARCHIVED)  # no reindex
    assert ids(search("北京", owner=owner, record=False)) == []


def test_other_owners_memories_never_come_back(owner):
    other = Owner.objects.create(key="someone-else")
    fact(other, "杭州的秘密")
    assert search("杭州", owner=owner, record=False).items == []


def test_kinds_filter(owner):
    fact(owner, "orchard 内存泄漏")
    episode(owner, "排查 orchard 内存泄漏")
    result = search("orchard", owner=owner, kinds=["episode"], record=False)
    assert {i.kind for i in result.items} == {"episode"}


def test_a_time_range_filters_turns_and_episodes_but_not_facts(owner):
    s = session(owner)
    old_turn = turn(s, "orchard 部署失败了", when=days_ago(10))
    new_turn = turn(s, "orchard 部署成功", when=days_ago(1))
    knowledge = fact(owner, "orchard 用 Celery")
    result = search(
        "orchard", owner=owner, time_from=days_ago(2), time_to=timezone.now(), record=False
    )
    assert new_turn.id in ids(result, "turn") and old_turn.id not in ids(result, "turn")
    assert knowledge.id in ids(result)


def test_a_session_filter_keeps_that_sessions_turns(owner):
    mine, other = session(owner, "a"), session(owner, "b")
    t1 = turn(mine, "讨论 orchard")
    t2 = turn(other, "讨论 orchard 的另一件事")
    result = search("orchard", owner=owner, session_id=mine.pk, record=False)
    assert t1.id in ids(result, "turn") and t2.id not in ids(result, "turn")


def test_recalling_counts_access_and_writes_the_recall_log(owner):
    item = fact(owner, "用户住在杭州")
    search("杭州", owner=owner, caller="api")
    item.refresh_from_db()
    assert item.access_count == 1 and item.last_accessed_at is not None
    log = RecallLog.objects.get()
    assert (log.query, log.caller, log.results[0]["id"]) == ("杭州", "api", item.id)
    assert (log.mode, log.preset, log.degraded) == ("hybrid", settings.SEARCH_PRESET, False)
    assert log.weights["semantic"] > 0 and log.took_ms > 0
    assert abs(log.created_at - item.last_accessed_at) < timedelta(seconds=1)
    [hit] = recalls_of("fact", item.id)
    assert (hit.log_id, hit.kind, hit.rank) == (log.pk, "fact", 1) and hit.score > 0


@pytest.mark.django_db(transaction=True)
def test_the_recall_is_written_after_the_answer_by_a_background_thread(settings):
    from retrieval.search import flush_recalls

    settings.SEARCH_RECORD_IN_BACKGROUND = True
    item = fact(Owner.default(), "用户住在杭州")
    search("杭州", owner=Owner.default(), caller="api")
    flush_recalls()
    item.refresh_from_db()
    assert item.access_count == 1
    assert RecallLog.objects.get().results[0]["id"] == item.id


@pytest.mark.django_db(transaction=True)
def test_recalls_made_while_the_writer_is_busy_are_each_written_once(settings):
    """Under load the writer takes every recall waiting in one transaction."""
    import threading

    from retrieval import search as searching

    settings.SEARCH_RECORD_IN_BACKGROUND = True
    item = fact(Owner.default(), "用户住在杭州")
    release = threading.Event()
    searching._RECALL_WRITER.submit(release.wait, 30)  # the writer is busy
    for _ in range(3):
        search("杭州", owner=Owner.default(), caller="api")
    assert len(searching._pending_recalls) == 3 and not RecallLog.objects.exists()
    release.set()
    searching.flush_recalls()
    item.refresh_from_db()
    assert item.access_count == 3 and RecallLog.objects.count() == 3
    assert RecallHit.objects.filter(object_id=item.id).count() == 3


def test_looking_in_the_debugger_is_not_recalling(owner):
    item = fact(owner, "用户住在杭州")
    search("杭州", owner=owner, record=False)
    item.refresh_from_db()
    assert (
        item.access_count == 0 and not RecallLog.objects.exists() and not RecallHit.objects.exists()
    )


def test_presets_and_custom_weights(owner):
    fact(owner, "用户住在杭州", importance=0.9)
    assert search("杭州", owner=owner, preset="semibot", record=False).preset == "semibot"
    custom = search(
        "杭州",
        owner=owner,
        weights={"keyword": 3, "importance": 1, "half_life_days": 7},
        record=False,
    )
    assert custom.preset == "custom" and custom.weights["keyword"] == pytest.approx(0.75)
    assert custom.params["half_life_days"] == 7


@pytest.mark.parametrize(
    "kwargs",
    [
        {"preset": "nope"},
        {"weights": {"semantic": 0}},
        {"weights": {"bogus": 1}},
        {"weights": {"keyword": -1}},
        {"mode": "fast"},
        {"kinds": ["fact", "planet"]},
    ],
)
def test_bad_requests_are_errors_not_degradations(owner, kwargs):
    with pytest.raises(SearchError):
        search("x", owner=owner, record=False, **kwargs)


def test_keyword_mode_is_not_a_degradation(owner):
    fact(owner, "用户住在杭州")
    result = search("杭州", owner=owner, mode="keyword", record=False)
    assert not result.degraded and result.channels["vector"]["state"] == "off"
    assert result.items[0].found_by == "keyword" and result.weights["semantic"] == 0


def test_equal_scores_rank_the_newer_item_first(owner):
    older = fact(owner, "同样的内容", index=True)
    newer = fact(owner, "同样的内容", index=True)
    Fact.objects.filter(pk=older.pk).update(updated_at=days_ago(3))
    result = search("同样的内容", owner=owner, weights={"keyword": 1}, mode="keyword", record=False)
    assert ids(result)[:2] == [newer.id, older.id]


def test_the_approximate_vector_step_agrees_on_small_sets(owner, settings, monkeypatch):
    monkeypatch.setattr("retrieval.indexing.CENTER_MIN", 3)
    for text in [
        "用户住在杭州",
        "The user edits code in Neovim",
        "喜欢乌龙茶",
        "runs every morning",
    ]:
        fact(owner, text)
    assert EmbeddingSpace.objects.get().center  # the mean vector the sign bits are taken from
    exact = ids(search("which editor?", owner=owner, mode="semantic", record=False))
    settings.SEARCH_EXACT_MAX = 0
    from retrieval import backends

    backends._counts.clear()
    approx = ids(search("which editor?", owner=owner, mode="semantic", record=False))
    assert approx[0] == exact[0] and set(approx) == set(exact)


def test_the_limit_is_capped(owner):
    for n in range(3):
        fact(owner, f"杭州 {n}")
    assert search("杭州", owner=owner, limit=999, record=False).limit == 50


def test_an_answer_is_found_by_the_words_of_the_turn_it_answers(owner):
    chat = session(owner)
    turn(chat, "你上周去哪里度假了？")
    answer = turn(chat, "去了京都，住了两个星期。", role="assistant")
    result = search("度假", owner=owner, mode="keyword", record=False)
    assert answer.id in ids(result, "turn")
    own_words = search("京都", owner=owner, mode="keyword", record=False)
    assert ids(own_words, "turn")[0] == answer.id  # its own words still weigh more


def test_a_turn_that_arrives_late_becomes_the_context_of_the_one_after_it(owner):
    from retrieval.indexing import reindex_one

    def found():
        return ids(search("holiday", owner=owner, mode="keyword", record=False), "turn")

    chat = session(owner)
    answer = turn(chat, "Kyoto, for two weeks.", index_no=1)
    assert answer.id not in found()
    question = turn(chat, "Where did you spend your holiday?", index_no=0)
    reindex_one("turn", question.id)  # what the queue runs for a newly recorded turn
    assert answer.id in found()


def test_the_nightly_job_drops_recalls_older_than_the_log_keeps(owner, settings):
    from lifecycle import schedule, tasks

    settings.RECALL_LOG_DAYS = 30
    fact(owner, "住在北京")
    search("北京", owner=owner)
    search("北京", owner=owner)
    RecallLog.objects.filter(pk=RecallLog.objects.first().pk).update(created_at=days_ago(31))
    tasks.prune_search_logs()
    assert RecallLog.objects.count() == 1 and RecallHit.objects.count() == 1
    assert "prune_search_logs" in [p.task for p in schedule.periodic()]


def test_candidate_rows_carry_the_fields_scoring_and_gates_read(owner):
    older = days_ago(3)
    f = fact(owner, "用户住在杭州", importance=0.7, expires_at=days_ago(-5))
    t = turn(session(owner, "s9", title="周末"), "去西湖", when=older)
    e = episode(owner, "爬山", when=older)
    rows = load_rows([("fact", f.pk), ("turn", t.pk), ("episode", e.pk), ("fact", 10**9)])
    assert set(rows) == {("fact", f.pk), ("turn", t.pk), ("episode", e.pk)}  # a gone id: absent
    row = rows[("fact", f.pk)]
    assert (row.content, row.importance, row.status) == ("用户住在杭州", 0.7, "active")
    assert row.expires_at == f.expires_at and row.created_at == f.created_at  # aware, equal
    turn_row = rows[("turn", t.pk)]
    assert turn_row.timestamp == older and turn_row.session.owner_id == owner.pk
    assert (turn_row.session.title, turn_row.session.external_id) == ("周末", "s9")
    assert rows[("episode", e.pk)].started_at == older


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("read", ["while embedding", "after knn"])
def test_a_keyword_only_result_shows_its_exact_similarity(monkeypatch, read):
    """Its vector is read while the query is embedded when that takes long enough, else after
    KNN: the semantic value in its breakdown is the same exact cosine either way."""
    from retrieval import backends
    from retrieval import search as searching
    from retrieval.embedders import get_embedder, query_cache
    from retrieval.models import SearchDoc

    owner = Owner.default()
    for text in ("用户住在杭州", "杭州的天气很热", "Neovim 的插件在杭州写的"):
        fact(owner, text)
    slow = searching._embed_and_knn

    def slow_embedding(*args):
        time.sleep(0.05)  # the request thread finishes FTS first
        return slow(*args)

    monkeypatch.setattr(searching, "_embed_and_knn", slow_embedding)
    nearest = backends.vector_hits_for  # one vector hit: two facts are found by keyword only
    monkeypatch.setattr(backends, "vector_hits_for", lambda *a, **kw: nearest(*a, **kw)[:1])
    reads, stored = [], searching._stored_vectors
    failed = read == "after knn"  # a failed read: the vectors are read after KNN instead
    monkeypatch.setattr(
        searching,
        "_stored_vectors",
        lambda ids: reads.append(ids) or (None if failed else stored(ids)),
    )
    query_cache.clear()
    result = search("杭州", owner=owner, record=False)
    keyword_only = [s for s in result.ranked if s.found_by == "keyword"]
    assert len(keyword_only) == 2 and len(reads) == 1
    for found in keyword_only:
        doc = SearchDoc.objects.get(kind="fact", object_id=found.object_id).id
        exact = float(backends.float_vectors([doc])[doc] @ get_embedder().query("杭州"))
        assert found.breakdown["semantic"].raw == pytest.approx(exact, abs=1e-6)


def test_the_results_breakdowns_are_the_full_scoring_of_their_candidates(owner):
    """Candidates are ranked without breakdowns; those of the results are built afterwards
    and say exactly what scoring each candidate in full says."""
    from retrieval import scoring

    sess = session(owner)
    for n, text in enumerate(
        ["用户住在杭州，周末喜欢爬山", "杭州的天气很热", "The user edits code in Neovim",
         "Neovim 的插件在杭州写的", "用户喜欢喝乌龙茶", "They moved to Hangzhou last spring"]
    ):  # fmt: skip
        fact(owner, text, importance=n / 10)
    turn(sess, "我们周末去杭州爬山吧")
    episode(owner, "周末去杭州爬山", when=days_ago(90))
    for preset in ("curator", "openakita"):
        result = search("杭州 爬山", owner=owner, record=False, preset=preset)
        weights = scoring.Weights(**result.weights)
        params = scoring.Params(**result.params)
        ranges = scoring.Ranges.of(result.scoring_input)
        full = {c.key: scoring.score_one(c, weights, params, ranges) for c in result.scoring_input}
        assert len(result.items) >= 5
        for item in result.items:
            expected = full[(item.kind, item.id)]
            assert item.breakdown == expected.to_dict()["breakdown"]
            if not item.signals:
                assert item.score == pytest.approx(expected.score, abs=1e-12)


def test_a_result_explains_itself_the_same_whenever_it_is_read(owner):
    """The breakdown and the matched words are built when first read (the API asks for them
    only with explain): a plain answer leaves them out, an explained one has them in full."""
    hiking = fact(owner, "用户住在杭州，周末喜欢爬山")
    fact(owner, "用户喜欢喝乌龙茶")
    result = search("杭州 爬山", owner=owner, record=False)
    plain = result.to_dict(explain=False)["results"][0]
    assert plain["id"] == hiking.id and "breakdown" not in plain and "matched" not in plain
    explained = result.to_dict(explain=True)["results"][0]
    top = result.items[0]
    assert {"杭州", "爬山"} <= set(explained["matched"]) and explained["matched"] == top.matched
    assert explained["breakdown"] == result.ranked[0].breakdown_dict() == top.breakdown
    assert explained["breakdown"]["keyword"]["raw"] > 0
