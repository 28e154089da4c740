"""The review desk page: listing, filters, single and bulk actions, full page and HTMX."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from curator import writepath as wp
from curator.models import (
    ConversationTurn,
    EventType,
    Fact,
    MemoryEvent,
    Owner,
    PendingItem,
    PendingStatus,
    Session,
)
from curator.writepath import Candidate, propose

HX = {"HX-Request": "true"}


def queued(content="李雷最近在学 Rust", **kw) -> PendingItem:
    kw.setdefault("subject", "李雷")
    kw.setdefault("predicate", "正在学习")
    kw.setdefault("confidence", 0.7)
    return propose(Candidate(content, **kw), actor="agent").pending


def written(content="李雷住在杭州", predicate="城市", **kw) -> Fact:
    return propose(
        Candidate(content, subject="李雷", predicate=predicate, **kw), actor="agent"
    ).fact


def page(client, url="/review/", **kw) -> str:
    response = client.get(url, **kw)
    assert response.status_code == 200
    return response.content.decode()


# --- the queue -------------------------------------------------------------------------


def test_each_item_explains_itself(client_in):
    session = Session.objects.create(owner=Owner.default(), external_id="s1", title="周末聊天")
    turn = ConversationTurn.objects.create(
        session=session, turn_index=3, role="user", content="我最近周末在写 Rust 练习"
    )
    queued(type="skill", scope="user", source="llm", source_turn_id=turn.pk)
    html = page(client_in)
    assert "李雷最近在学 Rust" in html and "confidence 0.70" in html
    assert "LLM extractor" in html and "skill" in html
    assert "Confidence below the write threshold (0.85)" in html
    assert f'href="/turns/{turn.pk}/"' in html and "我最近周末在写 Rust 练习" in html
    assert "周末聊天" in html


def test_a_conflict_shows_both_texts_with_the_difference(client_in):
    old = written("李雷住在杭州")
    queued("李雷住在上海", predicate="城市")
    html = page(client_in)
    assert f"Would replace fact #{old.pk}" in html
    assert "<del>杭州</del>" in html and "<ins>上海</ins>" in html


def test_a_suggested_deletion_says_so(client_in):
    fact = written("本周在排查内存泄漏", predicate="问题")
    propose(Candidate("已修复", delete_fact_id=fact.pk), actor="agent")
    html = page(client_in)
    assert f"The agent suggests removing fact #{fact.pk}" in html and "Remove the fact" in html
    assert "已修复" in html


def test_shortcuts_are_listed_and_the_script_is_optional(client_in):
    queued()
    html = page(client_in)
    assert 'id="shortcuts"' in html and "<kbd>j</kbd>" in html and "<kbd>l</kbd>" in html
    assert "js/review.js" in html
    assert 'action="/review/' in html  # every action is a real form


def test_the_navigation_counts_what_is_waiting(client_in):
    queued("甲")
    queued("乙")
    html = page(client_in, "/")
    assert '<span id="review-count" class="badge count" title="waiting for review">2</span>' in html


def test_filters_and_sort(client_in):
    queued("低", confidence=0.65, type="skill")
    queued("高", confidence=0.8, type="preference", predicate="偏好")
    html = page(client_in, "/review/?type=preference")
    assert "高" in html and ">低<" not in html
    html = page(client_in, "/review/?sort=confidence")
    assert html.index("高") < html.index("低")
    html = page(client_in, "/review/?reason=conflict")
    assert "Nothing waiting matches these filters." in html


def test_snoozed_items_are_listed_separately_with_their_time(client_in):
    item = queued()
    until = timezone.now() + timedelta(days=2)
    wp.snooze_pending(item.pk, until)
    html = page(client_in)
    assert 'id="snoozed-' in html and f'id="item-{item.pk}"' not in html
    assert timezone.localtime(until).strftime("%Y-%m-%d %H:%M") in html


def test_htmx_gets_the_partial(client_in):
    queued()
    html = page(client_in, headers=HX)
    assert "<html" not in html and 'class="list queue"' in html


def test_an_empty_queue_says_what_it_is_for(client_in):
    assert "Nothing is waiting for you" in page(client_in)


# --- single actions --------------------------------------------------------------------


def test_confirm_without_javascript_redirects_with_an_undo(client_in):
    item = queued()
    response = client_in.post(f"/review/{item.pk}/confirm/")
    event = MemoryEvent.objects.get(event_type=EventType.CONFIRM)
    assert response.status_code == 302 and response["Location"] == f"/review/?done={event.pk}"
    assert Fact.objects.get().verified
    html = page(client_in, response["Location"])
    assert "Confirmed “李雷最近在学 Rust”" in html
    assert f'action="/activity/{event.pk}/undo/"' in html


def test_confirm_with_htmx_swaps_the_item_in_place(client_in):
    item = queued()
    queued("另一个", predicate="其他")
    html = client_in.post(f"/review/{item.pk}/confirm/", headers=HX).content.decode()
    assert f'id="item-{item.pk}"' in html and "item done" in html and "Undo" in html
    assert '<span id="review-count" class="badge count" hx-swap-oob="true"' in html
    assert ">1</span>" in html  # one item still waiting


def test_the_heading_count_follows_the_badge_after_an_in_place_action(client_in):
    items = [queued(f"第 {n} 条", predicate=f"p{n}") for n in range(4)]
    queued("一条冲突", predicate="p0", confidence=0.7)  # any type: all five are listed
    query = "sort=confidence"
    html = client_in.post(
        f"/review/{items[0].pk}/confirm/", {"query": query}, headers=HX
    ).content.decode()
    heading = re.search(r'<span[^>]*id="review-total"[^>]*hx-swap-oob="true">(\d+)</span>', html)
    badge = re.search(r'id="review-count"[^>]*>(\d+)</span>', html)
    assert heading and badge and heading[1] == badge[1] == "4"
    undo = MemoryEvent.objects.filter(pending=items[0]).latest("pk")
    html = client_in.post(
        f"/activity/{undo.pk}/undo/", {"from": "review", "query": query}, headers=HX
    ).content.decode()
    assert re.search(r'id="review-total"[^>]*>5</span>', html)


def test_the_heading_count_keeps_the_pages_filters(client_in):
    kept = queued("只看偏好", type="preference", predicate="x")
    queued("一个事实", predicate="y")
    html = client_in.post(
        f"/review/{kept.pk}/ignore/", {"query": "type=preference"}, headers=HX
    ).content.decode()
    assert re.search(r'id="review-total"[^>]*>0</span>', html)  # none left of that type
    assert re.search(r'id="review-count"[^>]*>1</span>', html)  # one waiting overall


def test_edit_and_confirm(client_in):
    item = queued()
    form = client_in.get(f"/review/{item.pk}/edit/").content.decode()
    assert "<html" in form and f"c{item.pk}-content" in form
    inline = client_in.get(f"/review/{item.pk}/edit/", headers=HX).content.decode()
    assert "<html" not in inline and 'class="card item editing"' in inline
    data = {
        "edit": "1",
        f"c{item.pk}-content": "李雷在学 Rust 和 Go",
        f"c{item.pk}-subject": "李雷",
        f"c{item.pk}-predicate": "正在学习",
        f"c{item.pk}-type": "skill",
        f"c{item.pk}-scope": "user",
        f"c{item.pk}-priority": "",
        f"c{item.pk}-importance": "0.5",
        f"c{item.pk}-tags": "coding, rust",
    }
    response = client_in.post(f"/review/{item.pk}/confirm/", data, headers=HX)
    fact = Fact.objects.get()
    assert response.status_code == 200 and fact.content == "李雷在学 Rust 和 Go"
    assert fact.type == "skill" and fact.tags == ["coding", "rust"] and fact.verified


@pytest.mark.parametrize("headers", [{}, HX])
def test_an_over_long_edit_is_refused_in_place(client_in, headers):
    item = queued()
    data = {
        "edit": "1",
        f"c{item.pk}-content": "长" * 2001,
        f"c{item.pk}-type": "fact",
        f"c{item.pk}-scope": "user",
        f"c{item.pk}-importance": "0.5",
    }
    response = client_in.post(f"/review/{item.pk}/confirm/", data, headers=headers)
    html = response.content.decode()
    assert response.status_code == 200
    assert "The memory is too long: 2001 characters, at most 2000." in html
    assert ("<html" in html) == (not headers)
    assert not Fact.objects.exists()
    assert PendingItem.objects.get().status == PendingStatus.PENDING


def test_ignore_and_its_undo_from_the_item(client_in):
    item = queued()
    html = client_in.post(f"/review/{item.pk}/ignore/", headers=HX).content.decode()
    assert "Ignored" in html
    item.refresh_from_db()
    assert item.status == PendingStatus.REJECTED
    event = MemoryEvent.objects.get(event_type=EventType.REJECT)
    back = client_in.post(
        f"/activity/{event.pk}/undo/", {"from": "review"}, headers=HX
    ).content.decode()
    assert 'class="card item"' in back and "Ignore" in back
    item.refresh_from_db()
    assert item.status == PendingStatus.PENDING


@pytest.mark.parametrize("preset", ["hour", "tomorrow", "week"])
def test_later_presets(client_in, preset):
    item = queued()
    client_in.post(f"/review/{item.pk}/later/", {"preset": preset})
    item.refresh_from_db()
    assert item.status == PendingStatus.SNOOZED and item.cooldown_until > timezone.now()


def test_later_on_a_chosen_date(client_in):
    item = queued()
    when = timezone.localtime() + timedelta(days=3)
    client_in.post(
        f"/review/{item.pk}/later/", {"preset": "date", "until": when.strftime("%Y-%m-%dT%H:%M")}
    )
    item.refresh_from_db()
    assert item.cooldown_until.date() == when.date()


def test_later_without_a_time_is_refused_in_place(client_in):
    item = queued()
    html = client_in.post(
        f"/review/{item.pk}/later/", {"preset": "date"}, headers=HX
    ).content.decode()
    assert "Choose when the item should come back." in html
    item.refresh_from_db()
    assert item.status == PendingStatus.PENDING


def test_a_moot_item_says_so_and_needs_a_deliberate_confirm(client_in):
    old = written("李雷住在杭州")
    item = queued("李雷住在上海", predicate="城市")
    wp.archive_fact(old.pk, actor="person")
    html = page(client_in)
    assert "Out of date:" in html and "Confirm anyway" in html
    html = client_in.post(f"/review/{item.pk}/confirm/", headers=HX).content.decode()
    assert "is no longer active" in html and not Fact.objects.active().exists()
    client_in.post(f"/review/{item.pk}/confirm/", {"force": "1"}, headers=HX)
    assert Fact.objects.active().get().content == "李雷住在上海"


def test_handling_an_item_twice_explains_instead_of_failing(client_in):
    item = queued()
    client_in.post(f"/review/{item.pk}/confirm/")
    response = client_in.post(f"/review/{item.pk}/ignore/", follow=True)
    assert "This item was already handled (confirmed)." in response.content.decode()


def test_actions_need_post(client_in):
    item = queued()
    assert client_in.get(f"/review/{item.pk}/confirm/").status_code == 405
    assert client_in.get("/review/bulk/").status_code == 405


# --- bulk ------------------------------------------------------------------------------


def test_bulk_confirm_and_undo_all(client_in):
    items = [queued(f"候选{i}", predicate=f"p{i}") for i in range(3)]
    response = client_in.post(
        "/review/bulk/", {"action": "confirm", "ids": [i.pk for i in items[:2]]}
    )
    assert response.status_code == 302 and "batch=bulk-" in response["Location"]
    assert Fact.objects.count() == 2
    html = page(client_in, response["Location"])
    assert "2 changes made in one step." in html and "Undo all" in html
    batch = response["Location"].split("batch=")[1]
    client_in.post(f"/activity/batch/{batch}/undo/", {"next": "/review/"})
    assert not Fact.objects.active().exists()
    assert PendingItem.objects.filter(status=PendingStatus.PENDING).count() == 3


def test_bulk_later_and_ignore(client_in):
    items = [queued(f"候选{i}", predicate=f"p{i}") for i in range(2)]
    client_in.post("/review/bulk/", {"action": "later", "preset": "week", "ids": [items[0].pk]})
    client_in.post("/review/bulk/", {"action": "ignore", "ids": [items[1].pk]})
    statuses = dict(PendingItem.objects.values_list("pk", "status"))
    assert statuses == {items[0].pk: "snoozed", items[1].pk: "rejected"}


def test_bulk_without_a_selection_asks_for_one(client_in):
    queued()
    response = client_in.post("/review/bulk/", {"action": "confirm"}, follow=True)
    assert "Select at least one item." in response.content.decode()


def test_bulk_leaves_moot_items_alone_and_says_why(client_in):
    old = written("李雷住在杭州")
    moot = queued("李雷住在上海", predicate="城市")
    fine = queued()
    wp.archive_fact(old.pk, actor="person")
    response = client_in.post(
        "/review/bulk/", {"action": "confirm", "ids": [moot.pk, fine.pk]}, follow=True
    )
    assert "1 item(s) were left alone" in response.content.decode()
    assert PendingItem.objects.get(pk=moot.pk).status == PendingStatus.PENDING
    assert PendingItem.objects.get(pk=fine.pk).status == PendingStatus.CONFIRMED


# --- landing ---------------------------------------------------------------------------


def test_logins_land_on_the_queue_once_onboarding_is_done(client_in):
    assert client_in.get("/start/")["Location"] == "/"
    Owner.objects.filter(pk=Owner.default().pk).update(identity_confirmed=True)
    assert client_in.get("/start/")["Location"] == "/review/"


def test_the_turn_page_shows_the_turn_in_context(client_in):
    session = Session.objects.create(owner=Owner.default(), external_id="s1", title="对话")
    turns = [
        ConversationTurn.objects.create(
            session=session, turn_index=i, role="user", content=f"第{i}句"
        )
        for i in range(6)
    ]
    fact = written(source_turn_id=turns[4].pk)
    html = page(client_in, f"/turns/{turns[4].pk}/")
    assert "第1句" in html and "第4句" in html and "this-turn" in html
    assert f'href="/facts/{fact.pk}/"' in html


def test_an_item_opened_from_a_link_is_a_whole_page(client_in):
    item = queued()
    html = client_in.get(f"/review/{item.pk}/").content.decode()
    assert "<nav" in html and "李雷最近在学 Rust" in html
    assert f'action="/review/{item.pk}/confirm/"' in html
    assert 'form="review-bulk"' not in html  # no bulk form here: a box would do nothing
    assert '<ol class="list queue single">' in html  # no stray "1." before the card


def test_an_item_asked_for_by_htmx_is_only_its_card(client_in):
    item = queued()
    html = client_in.get(f"/review/{item.pk}/", headers=HX).content.decode()
    assert "<nav" not in html and "李雷最近在学 Rust" in html
