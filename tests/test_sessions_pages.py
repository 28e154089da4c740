"""The sessions list and a session's transcript (turns, tool calls, what was extracted)."""

from datetime import timedelta

from django.utils import timezone

from curator.models import (
    ConversationTurn,
    Episode,
    Fact,
    Owner,
    PendingItem,
    PendingReason,
    Session,
)
from curator.transcripts import episode_url

CALLS = [{"id": "c1", "function": {"name": "run_shell", "arguments": {"cmd": "free -m"}}}]
RESULTS = [{"tool_call_id": "c1", "output": "内存不足"}]


def page(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def session(external_id="s1", started=None, **kw) -> Session:
    started = started or timezone.now()
    return Session.objects.create(
        owner=Owner.default(), external_id=external_id, started_at=started, **kw
    )


def turn(s, index, content="你好", role="user", **kw) -> ConversationTurn:
    return ConversationTurn.objects.create(
        session=s, turn_index=index, role=role, content=content, **kw
    )


def test_the_list_shows_turn_counts_extraction_and_the_episode(client_in):
    done = session("done-1", title="周末计划")
    for i in range(3):
        turn(done, i, extracted=True)
    episode = Episode.objects.create(owner=Owner.default(), session=done, summary="规划了周末")
    open_one = session("open-1")
    turn(open_one, 0)
    html = page(client_in, "/sessions/")
    assert "周末计划" in html and "open-1" in html
    row = html.split(f'id="session-{done.pk}"')[1].split("</tr>")[0]
    assert '<td class="num turn-count">3</td>' in row and "extracted" in row
    assert f'<a href="{episode_url(episode.pk)}">规划了周末</a>' in row
    other = html.split(f'id="session-{open_one.pk}"')[1].split("</tr>")[0]
    assert '<td class="num turn-count">1</td>' in other and "1 turn waiting" in other


def test_the_list_is_newest_first_and_paginated(client_in):
    now = timezone.now()
    for i in range(30):
        session(f"s-{i:02d}", started=now - timedelta(hours=i))
    first = page(client_in, "/sessions/")
    assert first.index("s-00") < first.index("s-01") and "s-29" not in first
    assert "s-29" in page(client_in, "/sessions/?page=2")


def test_the_transcript_shows_every_turn_with_pretty_tool_json(client_in):
    s = session()
    turn(s, 0, "服务器又挂了")
    t = turn(s, 1, "我查一下", role="assistant", tool_calls=CALLS, tool_results=RESULTS)
    html = page(client_in, f"/sessions/{s.pk}/")
    assert "服务器又挂了" in html and f'id="turn-{t.pk}"' in html
    assert "<details" in html and "run_shell" in html
    assert "&quot;cmd&quot;: &quot;free -m&quot;" in html  # indented JSON, escaped in <pre>
    assert "\n  {\n" in html  # pretty-printed, not one line
    assert "内存不足" in html  # the result, with Chinese kept readable (not \\u escapes)


def test_facts_and_pending_items_link_from_their_turn(client_in):
    s = session()
    said = turn(s, 0, "我住在杭州", extracted=True)
    turn(s, 1, "好的", role="assistant")
    fact = Fact.objects.create(owner=Owner.default(), content="住在杭州", source_turn=said)
    item = PendingItem.objects.create(
        owner=Owner.default(),
        candidate={"content": "喜欢龙井"},
        confidence=0.7,
        reason=PendingReason.LOW_CONFIDENCE,
        source_turn=said,
    )
    html = page(client_in, f"/sessions/{s.pk}/")
    turn_block = html.split(f'id="turn-{said.pk}"')[1].split('id="turn-')[0]
    assert f'href="/facts/{fact.pk}/"' in turn_block and f'href="/review/{item.pk}/"' in turn_block


def test_the_turn_page_links_to_its_place_in_the_session(client_in):
    s = session()
    t = turn(s, 0)
    assert f'href="/sessions/{s.pk}/#turn-{t.pk}"' in page(client_in, f"/turns/{t.pk}/")


def test_unknown_sessions_are_404(client_in):
    assert client_in.get("/sessions/999/").status_code == 404


def test_the_session_partial_for_htmx_has_no_layout(client_in):
    s = session()
    turn(s, 0)
    html = client_in.get(f"/sessions/{s.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "transcript" in html and "<html" not in html


def test_sessions_are_in_the_navigation(client_in):
    assert 'href="/sessions/"' in page(client_in, "/")


def test_turns_are_numbered_from_one_on_pages(client_in):
    s = session()
    first = turn(s, 0, "第一句")
    turn(s, 1, "第二句", role="assistant")
    transcript = page(client_in, f"/sessions/{s.pk}/")
    assert "turn 1</a>" in transcript and "turn 2</a>" in transcript
    assert "turn 0" not in transcript
    assert "Turn 1 ·" in page(client_in, f"/turns/{first.pk}/")
    zh = client_in.get(f"/sessions/{s.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "第 1 轮" in zh and "第 0 轮" not in zh


def test_sessions_a_session_and_jobs_agree_on_what_waits_for_extraction(client_in):
    """Issue 29: "4 turns waiting" on Sessions, "2 turns not extracted yet" on Jobs, an
    assistant turn "waiting", and "nothing extracted" above the turn's own memory."""
    from lifecycle.models import ExtractionItem, QueueStatus

    s = session("agree-1")
    said = turn(s, 0, "我住在杭州", extracted=True)
    turn(s, 1, "好的", role="assistant")  # never extracted, never waiting
    fresh = turn(s, 2, "我在学 Rust")  # waiting, and already cited by an agent's fact
    retried = turn(s, 3, "下周去东京")
    dead = turn(s, 4, "记得带伞")
    turn(s, 5, "明白", role="assistant")
    ExtractionItem.objects.create(turn=retried, status=QueueStatus.WAITING, attempts=1)
    ExtractionItem.objects.create(turn=dead, status=QueueStatus.DEAD, attempts=3)
    Fact.objects.create(owner=Owner.default(), content="住在杭州", source_turn=said)
    Fact.objects.create(owner=Owner.default(), content="在学 Rust", source_turn=fresh)

    listing = page(client_in, "/sessions/").split(f'id="session-{s.pk}"')[1].split("</tr>")[0]
    assert "2 turns waiting" in listing
    html = page(client_in, f"/sessions/{s.pk}/")
    assert "2 turns waiting for extraction" in html
    assert html.count('data-state="waiting"') + html.count('data-state="retrying"') == 2
    assert html.count('data-state="gave_up"') == 1
    said_block = html.split(f'id="turn-{said.pk}"')[1].split('id="turn-')[0]
    assert "nothing extracted" not in said_block and "住在杭州" in said_block
    jobs = page(client_in, "/jobs/")
    assert 'data-count="unextracted">2<' in jobs
