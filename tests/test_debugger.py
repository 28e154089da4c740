"""The retrieval debugger page: search with breakdowns, sliders, why-not, dictionary, checks."""

import re

import pytest
from django.urls import reverse

from curator.models import Owner
from retrieval import userdict
from retrieval.embedders import LocalEmbedder
from retrieval.models import EmbeddingSpace, RegressionCheck, ReindexRun
from tests.search_helpers import fact

URL = "/debugger/"


@pytest.fixture
def owner(db):
    return Owner.default()


@pytest.fixture
def hangzhou(owner):
    return fact(owner, "用户住在杭州，周末喜欢爬山")


@pytest.fixture
def own_dictionary(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    yield tmp_path
    userdict.ensure_loaded()


def test_it_needs_a_login(client, db):
    assert client.get(URL).status_code == 302


def test_the_empty_page_invites_a_query(client_in):
    page = client_in.get(URL).content.decode()
    assert 'id="debugger-form"' in page and "Type a query" in page and "coming" not in page.lower()


def test_results_show_breakdown_bars_badges_highlights_and_timings(client_in, hangzhou):
    page = client_in.get(URL, {"q": "杭州"}).content.decode()
    assert f"fact #{hangzhou.id}" in page
    assert "<mark>杭州</mark>" in page
    assert 'class="badge found-kw"' in page and 'class="badge found-vec"' in page
    assert 'class="bar"' in page and "width: " in page
    assert "segmentation" in page and "ms</span>" in page
    assert "Context preview" in page


def test_the_context_preview_shows_the_gate_and_what_it_cut(client_in, hangzhou):
    page = client_in.get(URL, {"q": "帮我写一个排序函数"}).content.decode()
    assert "reaches their kind's gate join the evidence (facts 0.5, episodes 0.6," in page
    assert f'data-gated="fact:{hangzhou.id}"' in page and "under its gate" in page


def test_each_result_shows_its_absolute_score_against_the_gate(client_in, owner, hangzhou):
    """Min-max rescaling makes the best of ten unrelated results read 1.00: the table also
    shows the absolute score the recall gate compares, and marks those below it."""
    for n in range(6):
        fact(owner, f"Kubernetes cluster number {n} runs on three nodes")
    page = client_in.get(URL, {"q": "帮我写一个排序函数", "limit": "10"}).content.decode()
    rows = re.findall(r'<tr class="(under|over)-gate" data-gate-score="([0-9.]+)"', page)
    assert rows, page
    for side, score in rows:
        assert (float(score) < 0.5) == (side == "under")
    under = sum(1 for side, _ in rows if side == "under")
    assert under >= 1  # the Hangzhou fact has nothing to do with sorting
    assert f"{len(rows)} results, {under} of them below the recall gate (0.50)." in page
    assert page.count("below the gate</span>") == under
    cut = re.search(
        r"(\d+) results? under (?:its|their) gates? left out; (?:the best |listed: )(\d+)", page
    )
    listed = page.count("data-gated=")
    assert cut and int(cut.group(2)) == listed and int(cut.group(1)) >= listed


def test_the_context_preview_lists_each_evidence_item_with_its_kind_and_gate(client_in, owner):
    tea = fact(owner, "用户喜欢乌龙茶，不喜欢咖啡")
    fact(owner, "用户的项目 orchard 用 Django 写成")
    page = client_in.get(URL, {"q": "下午想喝点茶，乌龙茶怎么泡好喝"}).content.decode()
    item = page.split(f'data-evidence="fact:{tea.id}"')[1].split("</li>")[0]
    assert ">fact</span>" in item and "gate score" in item and "≥ 0.5" in item
    triggered = client_in.get(URL, {"q": "还记得我喜欢喝什么茶吗"}).content.decode()
    item = triggered.split(f'data-evidence="fact:{tea.id}"')[1].split("</li>")[0]
    assert "no gate" in item


def test_a_turn_found_through_the_turn_before_it_says_so(client_in, owner):
    from tests.search_helpers import session, turn

    chat = session(owner)
    turn(chat, "你上周去哪里度假了？")
    answer = turn(chat, "去了京都，住了两个星期。", role="assistant")
    page = client_in.get(URL, {"q": "度假", "mode": "keyword"}).content.decode()
    assert f"turn #{answer.id}" in page
    assert "Matched in the turn before it: <mark>度假</mark>" in page


def test_sliders_rerank_through_htmx_with_the_weights_in_the_url(client_in, hangzhou):
    response = client_in.get(
        URL,
        {"q": "杭州", "preset": "custom", "w_keyword": "90", "w_semantic": "10"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="debugger-results",
    )
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body and "debugger-form" not in body
    assert "custom" in body and f"fact #{hangzhou.id}" in body


def test_a_shared_url_restores_the_sliders(client_in, hangzhou):
    page = client_in.get(
        URL, {"q": "杭州", "preset": "custom", "w_keyword": "70", "w_semantic": "30"}
    )
    html = page.content.decode()
    assert 'name="w_keyword" min="0" max="100" step="1" value="70"' in html
    assert '<option value="custom" selected>' in html


def test_a_preset_sets_the_sliders(client_in):
    html = client_in.get(URL, {"q": "x", "preset": "semibot"}).content.decode()
    assert 'name="w_importance" min="0" max="100" step="1" value="25"' in html


def test_bad_input_is_explained_in_place(client_in):
    response = client_in.get(URL, {"q": "x", "time_from": "2026-05-02", "time_to": "2026-05-01"})
    assert (
        response.status_code == 200 and "The end is before the start." in response.content.decode()
    )


def test_why_not_by_id_and_by_words(client_in, owner, hangzhou):
    other = fact(owner, "prefers oolong tea")
    page = client_in.get(URL, {"q": "杭州", "why": str(other.id)}).content.decode()
    assert 'id="why"' in page and "Recalled at rank 2 of 2 candidates." in page
    page = client_in.get(URL, {"q": "杭州", "why": "oolong"}).content.decode()
    assert f"why={other.id}" in page


def test_adding_and_removing_a_dictionary_word(client_in, own_dictionary):
    response = client_in.post(
        reverse("debugger_dictionary"), {"word": "小橙子", "next": "/debugger/?q=x"}
    )
    assert response.status_code == 302 and response["Location"] == "/debugger/?q=x"
    assert userdict.words() == ["小橙子"]
    client_in.post(reverse("debugger_dictionary"), {"word": "小橙子", "action": "remove"})
    assert userdict.words() == []


def test_a_bad_word_is_refused_with_a_message(client_in, own_dictionary):
    response = client_in.post(reverse("debugger_dictionary"), {"word": "two words"}, follow=True)
    assert "no spaces" in response.content.decode() and userdict.words() == []


def test_an_unsafe_next_url_is_ignored(client_in, own_dictionary):
    response = client_in.post(
        reverse("debugger_dictionary"), {"word": "词", "next": "https://evil.example/"}
    )
    assert response["Location"] == "/debugger/"


def test_saving_and_running_regression_checks(client_in, owner, hangzhou):
    other = fact(owner, "prefers oolong tea")
    client_in.post(
        reverse("debugger_save_check"),
        {
            "query": "杭州",
            "must_include": f"{hangzhou.id}",
            "must_exclude": f"{other.id}",
            "within": "1",
            "params": '{"preset": "shiyi"}',
        },
    )
    check = RegressionCheck.objects.get()
    assert check.last_passed is True and check.last_result["facts"][0]["rank"] == 1
    check.must_include = [other.id]
    check.save()
    response = client_in.post(reverse("debugger_run_checks"), follow=True)
    check.refresh_from_db()
    assert check.last_passed is False and "0 of 1 checks passed" in response.content.decode()
    assert "fail" in client_in.get(URL).content.decode()
    client_in.post(reverse("debugger_delete_check", args=[check.pk]))
    assert not RegressionCheck.objects.exists()


def test_a_check_needs_facts_to_expect(client_in):
    response = client_in.post(
        reverse("debugger_save_check"), {"query": "杭州", "within": "5"}, follow=True
    )
    assert "was not saved" in response.content.decode() and not RegressionCheck.objects.exists()


def test_a_model_change_shows_a_banner_with_a_one_click_reindex(client_in, hangzhou):
    EmbeddingSpace.objects.update(model_name="text-embedding-3-small")
    page = client_in.get(URL).content.decode()
    assert "Search runs on keywords only" in page and reverse("debugger_reindex") in page
    assert reverse("debugger_reindex") in client_in.get("/").content.decode()  # home banner
    response = client_in.post(reverse("debugger_reindex"))
    assert response.status_code == 302
    run = ReindexRun.objects.get()
    assert run.state == "done" and run.done == 1
    assert EmbeddingSpace.objects.get().model_name == LocalEmbedder().name


@pytest.mark.parametrize(
    "name",
    ["debugger_dictionary", "debugger_save_check", "debugger_run_checks", "debugger_reindex"],
)
def test_changes_reject_get(client_in, name):
    assert client_in.get(reverse(name)).status_code == 405


def test_terms_left_out_of_a_large_collections_query_are_shown(client_in, owner, settings):
    from retrieval import backends

    settings.SEARCH_PRUNE_MIN_DOCS = 3
    backends._counts.clear()
    backends._df_cache.clear()
    for i in range(3):
        fact(owner, f"喜欢 第{i}条")
    page = client_in.get(URL, {"q": "喜欢滨江"}).content.decode()
    assert "Left out of the keyword query" in page and '<span class="seg stop">喜欢</span>' in page
    settings.SEARCH_PRUNE_MIN_DOCS = 50_000
    backends._counts.clear()
    assert (
        "Left out of the keyword query"
        not in client_in.get(URL, {"q": "喜欢滨江"}).content.decode()
    )


def test_a_date_that_cannot_be_a_filter_is_shown_as_ignored(client_in, hangzhou):
    response = client_in.get(URL, {"q": "杭州 9999-12-31"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "ignored as a time filter" in page and "<mark>9999-12-31</mark>" in page


def test_a_date_range_up_to_the_last_day_of_the_calendar_still_searches(client_in, hangzhou):
    response = client_in.get(URL, {"q": "杭州", "time_from": "0001-01-01", "time_to": "9999-12-31"})
    assert response.status_code == 200


def test_the_presets_read_in_plain_words_in_both_languages(client_in):
    html = client_in.get(URL).content.decode()
    assert '<option value="shiyi" >Meaning first, recent memories favoured</option>' in html
    assert ">shiyi<" not in html and ">openakita<" not in html
    client_in.cookies["django_language"] = "zh-hans"
    html = client_in.get(URL).content.decode()
    assert ">semibot<" not in html and 'value="semibot"' in html
    assert "Meaning and importance" not in html  # translated


def test_each_result_shows_the_signals_that_moved_it_in_both_languages(owner, client_in):
    from datetime import timedelta

    from django.utils import timezone

    from tests.search_helpers import session, turn

    s = session(owner)
    trip = turn(s, "Caroline and I drove to the coast", when=timezone.now() - timedelta(days=2))
    page = client_in.get(URL, {"q": "Where did Caroline drive yesterday?"}).content.decode()
    assert f"turn #{trip.id}" in page
    assert 'data-signal="name"' in page and "Shares a name with the question: Caroline" in page
    assert 'data-signal="time"' not in page  # the trip was the day before yesterday
    page = client_in.get(URL, {"q": "Where did Caroline drive 2 days ago?"}).content.decode()
    assert 'data-signal="time"' in page and "In the time range searched first: 2 days ago" in page


def test_the_signals_read_in_chinese(owner, chinese_client):
    from tests.search_helpers import fact

    fact(owner, "张伟在杭州开了一家咖啡店")
    page = chinese_client.get(URL, {"q": "张伟的咖啡店在哪"}).content.decode()
    assert 'data-signal="name"' in page and "与问题提到同一个名字：张伟" in page


def _coffee_facts(owner):
    from tests.search_helpers import fact

    for text in ["张伟在杭州开了一家咖啡店", "杭州的西湖很美", "周末去杭州看朋友", "我喜欢喝咖啡"]:
        fact(owner, text)


def test_the_channel_shares_of_the_question_show_on_the_page(owner, client_in):
    _coffee_facts(owner)
    page = client_in.get(URL, {"q": "张伟的咖啡店在杭州哪里"}).content.decode()
    assert 'data-signal="shares"' in page and "Channel shares for this question" in page
    assert "a Chinese question starts from 0.55 : 0.30" in page


def _named_person(owner):
    owner.display_name = "张伟"
    owner.save()
    _coffee_facts(owner)


def test_a_question_naming_the_person_shows_it_was_searched_as_they_would_ask(owner, client_in):
    _named_person(owner)
    page = client_in.get(URL, {"q": "张伟的咖啡店在杭州哪里"}).content.decode()
    assert 'data-signal="as-the-person"' in page and "我的咖啡店在杭州哪里" in page
    assert "searched as you would ask it" in page
    other = client_in.get(URL, {"q": "西湖在哪里"}).content.decode()
    assert 'data-signal="as-the-person"' not in other


def test_the_question_asked_as_the_person_reads_in_chinese(owner, chinese_client):
    _named_person(owner)
    page = chinese_client.get(URL, {"q": "张伟的咖啡店在杭州哪里"}).content.decode()
    assert "按你自己的问法" in page and "我的咖啡店在杭州哪里" in page


def test_the_channel_shares_read_in_chinese(owner, chinese_client):
    _coffee_facts(owner)
    page = chinese_client.get(URL, {"q": "张伟的咖啡店在杭州哪里"}).content.decode()
    assert 'data-signal="shares"' in page and "本次提问的两路权重" in page


def _two_people(owner):
    from tests.search_helpers import session, turn

    s = session(owner)
    for n in range(6):
        turn(s, f"Melanie: Caroline, I like painting, I like sunsets, I like it {n} times")
    return turn(s, "Caroline: I like hiking in the mountains")


def test_a_question_part_and_a_speaker_show_on_the_page(owner, client_in):
    hiking = _two_people(owner)
    page = client_in.get(URL, {"q": "What do Melanie and Caroline both like?"}).content.decode()
    assert f"turn #{hiking.id}" in page
    assert "Evidence for question part 2 of 2: caroline like" in page
    assert "Said by a person the question names: Caroline" in page


def test_a_question_part_and_a_speaker_read_in_chinese(owner, chinese_client):
    _two_people(owner)
    question = "What do Melanie and Caroline both like?"
    page = chinese_client.get(URL, {"q": question}).content.decode()
    assert "问题第 2 部分（共 2 部分）的证据：caroline like" in page
    assert "由问题提到的人亲口说的：Caroline" in page
