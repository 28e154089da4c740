"""The trace search page: literal words over raw turns, tool calls and results, with filters."""

import re
from datetime import timedelta

from django.utils import timezone

from curator import conversations
from curator.models import ConversationTurn, Owner, Session

CALLS = [{"id": "c1", "function": {"name": "run_shell", "arguments": {"cmd": "free -m"}}}]
RESULTS = [{"tool_call_id": "c1", "output": "orchard-2 内存不足 OOM killed celery"}]


def session(external_id="s1") -> Session:
    return Session.objects.get_or_create(
        owner=Owner.default(), external_id=external_id, defaults={"started_at": timezone.now()}
    )[0]


def turn(content, index=None, role="user", session_id="s1", **kw) -> ConversationTurn:
    s = session(session_id)
    index = s.turns.count() if index is None else index
    return ConversationTurn.objects.create(
        session=s, turn_index=index, role=role, content=content, **kw
    )


def search(client, **params) -> str:
    response = client.get("/traces/", params)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def hits(html: str) -> int:
    return html.count('class="card trace-hit')


def test_it_finds_chinese_words_and_marks_them(client_in):
    t = turn("我们昨天讨论了橘猫的疫苗")
    turn("今天天气不错")
    html = search(client_in, q="橘猫")
    assert hits(html) == 1
    assert "我们昨天讨论了<mark>橘猫</mark>的疫苗" in html
    assert f'href="/sessions/{t.session_id}/#turn-{t.pk}"' in html


def test_it_finds_english_words_whatever_their_case(client_in):
    turn("The Deploy failed on orchard-2")
    turn("nothing here")
    html = search(client_in, q="deploy")
    assert hits(html) == 1 and "The <mark>Deploy</mark> failed" in html


def test_every_word_must_appear(client_in):
    turn("橘猫 打疫苗")
    turn("橘猫 吃饭")
    assert hits(search(client_in, q="橘猫 疫苗")) == 1


def test_it_finds_tool_parameters_and_results(client_in):
    turn("我查一下", role="assistant", tool_calls=CALLS, tool_results=RESULTS)
    html = search(client_in, q="free -m")
    assert hits(html) == 1 and "in the tool calls" in html
    assert "<mark>free</mark> <mark>-m</mark>" in html  # each word marked
    html = search(client_in, q="内存不足")
    assert hits(html) == 1 and "in the tool results" in html and "<mark>内存不足</mark>" in html


def test_it_filters_by_role_session_and_dates(client_in):
    now = timezone.now()
    turn("alpha one", timestamp=now - timedelta(days=3))
    turn("alpha two", role="assistant")
    turn("alpha three", session_id="s2")
    assert hits(search(client_in, q="alpha")) == 3
    assert hits(search(client_in, q="alpha", session="s1")) == 2
    assert hits(search(client_in, q="alpha", role="assistant")) == 1
    since = timezone.localdate(now - timedelta(days=1)).isoformat()
    assert hits(search(client_in, q="alpha", date_from=since)) == 2
    assert hits(search(client_in, q="alpha", date_to=since)) == 1
    # a "to" date includes that whole day
    today = timezone.localdate().isoformat()
    assert hits(search(client_in, q="alpha", date_to=today)) == 3


def test_filters_alone_are_a_search(client_in):
    turn("只看助手", role="assistant")
    turn("用户说的")
    html = search(client_in, role="assistant")
    assert hits(html) == 1 and "只看助手" in html


def test_it_escapes_what_was_said(client_in):
    turn('<script>alert("x")</script> 橘猫')
    html = search(client_in, q="橘猫")
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; <mark>橘猫</mark>" in html


def test_a_term_that_looks_like_html_is_escaped_inside_the_mark(client_in):
    turn("a <b> tag")
    html = search(client_in, q="<b>")
    assert "<mark>&lt;b&gt;</mark>" in html and "<b>" not in html.split("trace-hits")[1]


def test_no_match_and_no_search_say_so(client_in):
    turn("橘猫")
    assert "No turn matches" in search(client_in, q="狮子")
    html = search(client_in)
    assert hits(html) == 0 and "Type a word" in html


def test_a_bad_date_is_shown_in_place(client_in):
    html = search(client_in, date_from="soon")
    assert hits(html) == 0 and 'class="error"' in html


def test_results_are_paginated(client_in):
    for i in range(25):
        turn(f"重复的话 {i}")
    assert hits(search(client_in, q="重复的话")) == 20
    html = search(client_in, q="重复的话", page=2)
    assert hits(html) == 5 and "q=%E9%87%8D" in html


def test_a_session_page_links_to_its_own_search(client_in):
    t = turn("hi", session_id="工作 1")
    html = client_in.get(f"/sessions/{t.session_id}/").content.decode()
    assert "/traces/?session=%E5%B7%A5%E4%BD%9C%201" in html


def test_sessions_stays_highlighted_in_the_navigation(client_in):
    html = client_in.get("/traces/").content.decode()
    assert re.search(r'<a [^>]*href="/sessions/"[^>]*aria-current="page"', html)


def test_someone_elses_turns_are_never_listed(client_in):
    turn("杭州 西湖 龙井")
    other = Session.objects.create(
        owner=Owner.objects.create(key="someone-else"), external_id="s2", started_at=timezone.now()
    )
    ConversationTurn.objects.create(
        session=other, turn_index=0, role="user", content="杭州 西湖 别人"
    )
    html = search(client_in, q="杭州")
    assert hits(html) == 1 and "别人" not in html
    assert len(conversations.search_traces(q="杭州")) == 1


def test_the_newest_turns_are_read_in_time_order_instead_of_sorted(db):
    plan = conversations.trace_queryset()[:20].explain()
    assert "timestamp" in plan and "TEMP B-TREE" not in plan, plan
