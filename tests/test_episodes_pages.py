"""The episodes list (filters), an episode's page (action timeline, facts, session link) and
its edit form (validation in place, an event, re-indexing)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator.models import (
    ConversationTurn,
    Episode,
    EventType,
    Fact,
    MemoryEvent,
    Outcome,
    Owner,
    Session,
)
from retrieval.backends import Filters, keyword_hits
from retrieval.indexing import index_items

NODES = [
    {
        "tool_name": "run_shell",
        "key_params": {"cmd": "free -m"},
        "result_summary": "Mem: 15Gi total, 14Gi used",
        "success": True,
        "error_message": None,
        "timestamp": "2026-03-01T09:00:00+00:00",
    },
    {
        "tool_name": "restart_service",
        "key_params": {"name": "celery"},
        "result_summary": "",
        "success": False,
        "error_message": "permission denied",
        "timestamp": "2026-03-01T09:05:00+00:00",
    },
]


@pytest.fixture
def owner(db):
    return Owner.default()


def make(owner, summary, days_ago=0, **kw) -> Episode:
    when = timezone.now() - timedelta(days=days_ago)
    ep = Episode.objects.create(owner=owner, summary=summary, started_at=when, ended_at=when, **kw)
    index_items("episode", [ep], embed=False)
    return ep


def page(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


# --- list and filters ------------------------------------------------------------------------


def test_the_list_shows_every_episode_newest_first(client_in, owner):
    make(owner, "排查 orchard OOM", days_ago=2)
    make(owner, "写周报", days_ago=0)
    html = page(client_in, "/episodes/")
    assert html.index("写周报") < html.index("排查 orchard OOM")


def test_it_filters_by_outcome_tool_and_entity(client_in, owner):
    make(owner, "排查 OOM", outcome=Outcome.FAILED, tools_used=["run_shell"], entities=["orchard"])
    make(owner, "写周报", outcome=Outcome.SUCCESS, tools_used=["write_file"], entities=["周报"])
    html = page(client_in, "/episodes/?outcome=failed")
    assert "排查 OOM" in html and "写周报" not in html
    html = page(client_in, "/episodes/?tool=write_file")
    assert "写周报" in html and "排查 OOM" not in html
    html = page(client_in, "/episodes/?entity=Orchard")  # entities ignore case
    assert "排查 OOM" in html and "写周报" not in html


def test_it_filters_by_time_range(client_in, owner):
    make(owner, "上个月的事", days_ago=40)
    make(owner, "昨天的事", days_ago=1)
    since = (timezone.localdate() - timedelta(days=7)).isoformat()
    html = page(client_in, f"/episodes/?time_from={since}")
    assert "昨天的事" in html and "上个月的事" not in html
    until = (timezone.localdate() - timedelta(days=30)).isoformat()
    html = page(client_in, f"/episodes/?time_to={until}")
    assert "上个月的事" in html and "昨天的事" not in html


def test_text_search_finds_chinese_words_however_they_were_cut(client_in, owner):
    make(owner, "帮李雷排查橘猫照片上传失败的问题")
    make(owner, "写周报")
    html = page(client_in, "/episodes/?q=猫的照片")
    assert "橘猫照片" in html and "写周报" not in html


def test_a_bad_filter_value_is_ignored_not_an_error(client_in, owner):
    make(owner, "写周报")
    assert "写周报" in page(client_in, "/episodes/?outcome=nonsense&time_from=not-a-date")


def test_the_empty_list_says_where_episodes_come_from(client_in, owner):
    assert "When a session ends" in page(client_in, "/episodes/")


# --- detail ----------------------------------------------------------------------------------


def test_the_detail_shows_the_action_timeline(client_in, owner):
    ep = make(owner, "排查 OOM", goal="找出内存泄漏", action_nodes=NODES, importance=0.8)
    html = page(client_in, f"/episodes/{ep.pk}/")
    assert "找出内存泄漏" in html and "0.80" in html
    assert html.index("run_shell") < html.index("restart_service")
    assert "free -m" in html and "Mem: 15Gi total" in html
    assert "permission denied" in html and "action-failed" in html and "action-ok" in html


def test_the_detail_links_its_session_and_the_facts_learned_there(client_in, owner):
    session = Session.objects.create(owner=owner, external_id="chat-42")
    turn = ConversationTurn.objects.create(session=session, turn_index=0, role="user")
    ep = make(owner, "排查 OOM", session=session)
    learned = Fact.objects.create(
        owner=owner, content="orchard 跑在 4G 内存的机器上", source_turn=turn
    )
    linked = Fact.objects.create(owner=owner, content="李雷用 celery")
    ep.linked_facts.add(linked)
    Fact.objects.create(owner=owner, content="无关的事实")
    html = page(client_in, f"/episodes/{ep.pk}/")
    assert f'id="episode-session" href="/sessions/{session.pk}/"' in html
    assert 'class="prov-session"' in html
    assert f"/facts/{learned.pk}/" in html and f"/facts/{linked.pk}/" in html
    assert "无关的事实" not in html


def test_unknown_episodes_are_404(client_in, owner):
    assert client_in.get("/episodes/999/").status_code == 404
    assert client_in.get("/episodes/999/edit/").status_code == 404


# --- edit ------------------------------------------------------------------------------------


def test_an_edit_saves_records_an_event_and_reindexes(
    client_in, owner, django_capture_on_commit_callbacks
):
    ep = make(owner, "排查 OOM", goal="旧目标")
    form = {
        "summary": "排查 orchard 内存泄漏",
        "goal": "旧目标",
        "outcome": "partial",
        "importance": "0.9",
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client_in.post(f"/episodes/{ep.pk}/edit/", form)
    assert response.status_code == 302 and response["Location"] == f"/episodes/{ep.pk}/"
    ep.refresh_from_db()
    assert (ep.summary, ep.outcome, ep.importance) == ("排查 orchard 内存泄漏", "partial", 0.9)
    event = MemoryEvent.objects.get(event_type=EventType.EPISODE_EDIT)
    assert event.actor == "person" and event.payload["episode"] == ep.pk
    assert event.payload["before"]["summary"] == "排查 OOM"
    assert event.payload["after"]["outcome"] == "partial" and "goal" not in event.payload["after"]
    hits = keyword_hits("内存泄漏", owner.pk, filters=Filters(owner.pk, kinds=("episode",)))
    assert [h.object_id for h in hits] == [ep.pk]


def test_an_invalid_edit_shows_the_errors_in_place_and_changes_nothing(client_in, owner):
    ep = make(owner, "排查 OOM")
    form = {"summary": "", "goal": "", "outcome": "exploded", "importance": "3"}
    response = client_in.post(f"/episodes/{ep.pk}/edit/", form)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('class="error"') >= 3 and 'action="/episodes/' in html
    ep.refresh_from_db()
    assert ep.summary == "排查 OOM" and not MemoryEvent.objects.exists()


def test_saving_without_changes_records_no_event(client_in, owner):
    ep = make(owner, "排查 OOM", importance=0.5)
    form = {"summary": "排查 OOM", "goal": "", "outcome": "success", "importance": "0.5"}
    assert client_in.post(f"/episodes/{ep.pk}/edit/", form).status_code == 302
    assert not MemoryEvent.objects.exists()


def test_the_activity_log_lists_an_episode_edit(client_in, owner):
    ep = make(owner, "排查 OOM")
    form = {"summary": "排查内存", "goal": "", "outcome": "success", "importance": "0.5"}
    client_in.post(f"/episodes/{ep.pk}/edit/", form)
    assert "排查内存" in page(client_in, "/activity/")
