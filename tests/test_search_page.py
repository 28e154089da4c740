"""The global search: the header's box on every page leads to one results page listing facts,
episodes, conversation turns and pages that match, in Chinese and English, without JS."""

import pytest

from curator import conversations
from curator import writepath as wp
from curator.models import Episode, Owner, Session

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return response.content.decode()


@pytest.fixture
def hangzhou():
    fact = wp.propose(wp.Candidate(content="用户住在杭州"), actor="person").fact
    other = wp.propose(wp.Candidate(content="The user drinks tea"), actor="person").fact
    conversations.record_turn(
        session_id="s1", role="user", content="周末想去杭州西湖走走", turn_index=0
    )
    session = Session.objects.get(external_id="s1")
    episode = Episode.objects.create(
        owner=Owner.default(),
        session=session,
        summary="计划周末去杭州西湖",
        started_at=session.started_at,
        ended_at=session.started_at,
    )
    return fact, other, episode


def test_it_finds_facts_episodes_and_turns_for_a_chinese_word(client_in, hangzhou):
    fact, other, episode = hangzhou
    page = text(client_in.get("/search/", {"q": "杭州"}))
    facts = page.split('id="search-facts"', 1)[1].split("</section>", 1)[0]
    assert f'href="/facts/{fact.pk}/"' in facts and f"/facts/{other.pk}/" not in facts
    episodes = page.split('id="search-episodes"', 1)[1].split("</section>", 1)[0]
    assert f'href="/episodes/{episode.pk}/"' in episodes
    turns = page.split('id="search-turns"', 1)[1].split("</section>", 1)[0]
    assert "西湖走走" in turns
    assert 'href="/traces/?q=%E6%9D%AD%E5%B7%9E"' in turns


def test_it_finds_pages_by_their_name_in_either_language(client_in):
    page = text(client_in.get("/search/", {"q": "guardrails"}))
    pages = page.split('id="search-pages"', 1)[1].split("</section>", 1)[0]
    assert 'href="/settings/guardrails/"' in pages
    client_in.cookies["django_language"] = "zh-hans"
    page = text(client_in.get("/search/", {"q": "校准"}, HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert 'href="/calibration/"' in page.split('id="search-pages"', 1)[1]


def test_nothing_found_says_so_and_odd_input_is_harmless(client_in):
    page = text(client_in.get("/search/", {"q": 'C++ "abc * end: value'}))
    assert 'id="search-nothing"' in page
    assert client_in.get("/search/", {"q": "x" * 5000}).status_code == 200
    assert "Press / on any page" in text(client_in.get("/search/"))


def test_searching_does_not_count_as_recalling(client_in, hangzhou):
    fact = hangzhou[0]
    client_in.get("/search/", {"q": "杭州"})
    fact.refresh_from_db()
    assert fact.access_count == 0


def test_the_results_page_reads_in_chinese(client_in, hangzhou):
    client_in.cookies["django_language"] = "zh-hans"
    page = text(client_in.get("/search/", {"q": "杭州"}, HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "搜索" in page and "对话发言" in page and "事实" in page
