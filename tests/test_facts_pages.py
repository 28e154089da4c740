"""The facts list (filters, keyword search, bulk + undo, inline edit) and a fact's page."""

from datetime import timedelta

import pytest
from django.utils import timezone

from curator import writepath as wp
from curator.models import EventType, Fact, FactStatus, MemoryEvent, Owner
from curator.writepath import Candidate, propose
from retrieval.indexing import index_items

HX = {"HX-Request": "true"}


def fact(content="李雷住在杭州", predicate="城市", **kw) -> Fact:
    kw.setdefault("subject", "李雷")
    return propose(Candidate(content, predicate=predicate, **kw), actor="agent").fact


def page(client, url, **kw) -> str:
    response = client.get(url, **kw)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def rows(html: str) -> int:
    return html.count('<tr id="fact-')


# --- list, filters, sort ---------------------------------------------------------------


def test_active_facts_by_default_and_every_status_on_request(client_in):
    fact("现在的")
    old = fact("以前的", predicate="旧")
    wp.archive_fact(old.pk, actor="person")
    html = page(client_in, "/facts/")
    assert "现在的" in html and "以前的" not in html
    html = page(client_in, "/facts/?status=")
    assert "现在的" in html and "以前的" in html
    assert "以前的" in page(client_in, "/facts/?status=archived")


@pytest.mark.parametrize(
    "query, expected",
    [
        ("scope=project", "项目事实"),
        ("type=preference", "偏好"),
        ("verified=yes", "确认过的"),
        ("source=rules", "规则抽取"),
        ("priority=permanent", "偏好"),
        ("tag=工作", "项目事实"),
    ],
)
def test_filters(client_in, query, expected):
    fact("项目事实", predicate="a", scope="project", tags=["工作"])
    fact("偏好", predicate="b", type="preference")
    propose(Candidate("确认过的", subject="李雷", predicate="c", verified=True), actor="person")
    fact("规则抽取", predicate="d", source="rules")
    html = page(client_in, f"/facts/?{query}")
    assert expected in html and rows(html) == 1


def test_inferred_facts(client_in):
    fact("推断的", predicate="a")
    propose(Candidate("确认过的", subject="李雷", predicate="c", verified=True), actor="person")
    html = page(client_in, "/facts/?verified=no")
    assert "推断的" in html and "确认过的" not in html


def test_date_ranges(client_in):
    old = fact("很久以前", predicate="a")
    Fact.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    fact("最近", predicate="b")
    since = (timezone.localdate() - timedelta(days=7)).isoformat()
    html = page(client_in, f"/facts/?created_from={since}")
    assert "最近" in html and "很久以前" not in html
    assert "很久以前" in page(client_in, f"/facts/?created_to={since}")


def test_sort_by_importance_confidence_and_recall(client_in):
    a = fact("甲", predicate="a", importance=0.2, confidence=0.99)
    fact("乙", predicate="b", importance=0.9, confidence=0.86)
    Fact.objects.filter(pk=a.pk).update(access_count=5)
    html = page(client_in, "/facts/?sort=importance")
    assert html.index(">乙<") < html.index(">甲<")
    html = page(client_in, "/facts/?sort=confidence")
    assert html.index(">甲<") < html.index(">乙<")
    html = page(client_in, "/facts/?sort=recalled")
    assert html.index(">甲<") < html.index(">乙<")


def test_fifty_per_page_and_the_pager_keeps_filters(client_in):
    for i in range(55):
        fact(f"事实{i}", predicate=f"p{i}", scope="project")
    html = page(client_in, "/facts/?scope=project")
    assert rows(html) == 50 and "Page 1 of 2" in html
    assert 'href="?scope=project&amp;status=active&amp;page=2"' in html
    assert rows(page(client_in, "/facts/?scope=project&page=2")) == 5


def test_keyword_search_goes_through_the_index_and_works_in_chinese(client_in):
    facts = [
        fact("李雷已经搬到杭州，在杭州工作", predicate="城市"),
        fact("Prefers pytest over unittest", predicate="测试"),
        fact("不要在周末发工作提醒", predicate="提醒"),
    ]
    index_items("fact", facts, embed=False)
    html = page(client_in, "/facts/?q=杭州")
    assert "在杭州工作" in html and rows(html) == 1
    assert rows(page(client_in, "/facts/?q=pytest")) == 1
    html = page(client_in, "/facts/?q=不存在的东西")
    assert "No facts match" in html


def test_search_finds_archived_facts_when_asked(client_in):
    f = fact("旧的编辑器是 VS Code", predicate="编辑器")
    wp.archive_fact(f.pk, actor="person")
    index_items("fact", [Fact.objects.get(pk=f.pk)], embed=False)
    assert rows(page(client_in, "/facts/?q=编辑器&status=archived")) == 1


def test_htmx_gets_the_partial(client_in):
    fact()
    html = page(client_in, "/facts/", headers=HX)
    assert "<html" not in html and 'id="facts-bulk"' in html


# --- bulk ------------------------------------------------------------------------------


def test_bulk_archive_then_undo_restores_every_fact(client_in):
    facts = [fact(f"事实{i}", predicate=f"p{i}") for i in range(4)]
    response = client_in.post(
        "/facts/bulk/",
        {"action": "archive", "ids": [f.pk for f in facts], "query": "status=active"},
    )
    assert response.status_code == 302 and "&batch=bulk-" in response["Location"]
    assert not Fact.objects.active().exists()
    html = page(client_in, response["Location"])
    assert "4 changes made in one step." in html and "Undo all" in html
    batch = response["Location"].split("batch=")[1]
    client_in.post(f"/activity/batch/{batch}/undo/", {"next": "/facts/"})
    assert Fact.objects.active().count() == 4


def test_bulk_scope_and_priority(client_in):
    facts = [fact(f"事实{i}", predicate=f"p{i}") for i in range(2)]
    ids = [f.pk for f in facts]
    client_in.post("/facts/bulk/", {"action": "scope", "scope": "project", "ids": ids})
    client_in.post("/facts/bulk/", {"action": "priority", "priority": "permanent", "ids": ids})
    assert set(Fact.objects.values_list("scope", "priority")) == {("project", "permanent")}


def test_bulk_needs_a_value_and_a_selection(client_in):
    f = fact()
    response = client_in.post("/facts/bulk/", {"action": "scope", "ids": [f.pk]}, follow=True)
    assert "Choose the new value first." in response.content.decode()
    response = client_in.post("/facts/bulk/", {"action": "archive"}, follow=True)
    assert "Select at least one fact." in response.content.decode()


# --- edit ------------------------------------------------------------------------------


def form_data(f: Fact, **changes) -> dict:
    data = {
        "content": f.content,
        "subject": f.subject,
        "predicate": f.predicate,
        "type": f.type,
        "scope": f.scope,
        "importance": f.importance,
        "priority": f.priority,
        "expires_at": timezone.localtime(f.expires_at).strftime("%Y-%m-%dT%H:%M")
        if f.expires_at
        else "",
        "tags": ", ".join(f.tags),
        "expected_updated_at": f.updated_at.isoformat(),
        **changes,
    }
    return {f"f{f.pk}-{k}": v for k, v in data.items()}


def test_inline_edit_swaps_the_row(client_in):
    f = fact()
    html = page(client_in, f"/facts/{f.pk}/edit/?inline=1", headers=HX)
    assert html.startswith('<tr id="fact-') and 'class="editing"' in html
    data = {**form_data(f, content="李雷住在杭州西湖区"), "inline": "1"}
    html = client_in.post(f"/facts/{f.pk}/edit/", data, headers=HX).content.decode()
    assert html.startswith(f'<tr id="fact-{f.pk}"') and "李雷住在杭州西湖区" in html
    f.refresh_from_db()
    assert f.content == "李雷住在杭州西湖区" and f.verified
    assert page(client_in, f"/facts/{f.pk}/row/", headers=HX).startswith("<tr")


def test_full_page_edit_redirects_to_the_fact_with_an_undo(client_in):
    f = fact()
    assert "<html" in page(client_in, f"/facts/{f.pk}/edit/")
    response = client_in.post(f"/facts/{f.pk}/edit/", form_data(f, scope="project"))
    event = MemoryEvent.objects.get(event_type=EventType.UPDATE)
    assert response["Location"] == f"/facts/{f.pk}/?done={event.pk}"
    html = page(client_in, response["Location"])
    assert "Saved." in html and f'action="/activity/{event.pk}/undo/"' in html


def test_a_stale_edit_is_refused_with_the_current_text(client_in):
    f = fact()
    opened = form_data(f, content="李雷住在宁波")
    wp.edit_fact(f.pk, {"content": "李雷住在杭州滨江区"}, actor="agent")
    html = client_in.post(f"/facts/{f.pk}/edit/", {**opened, "inline": "1"}, headers=HX)
    html = html.content.decode()
    assert "This fact changed since you opened it." in html and "李雷住在杭州滨江区" in html
    assert "李雷住在宁波" in html  # what the person typed is kept
    f.refresh_from_db()
    assert f.content == "李雷住在杭州滨江区"
    again = form_data(f, content="李雷住在宁波")
    client_in.post(f"/facts/{f.pk}/edit/", again)
    f.refresh_from_db()
    assert f.content == "李雷住在宁波"


@pytest.mark.parametrize("headers", [{}, HX])
def test_an_empty_edit_is_refused_in_place(client_in, headers):
    f = fact()
    data = {**form_data(f, content="   "), "inline": "1"}
    response = client_in.post(f"/facts/{f.pk}/edit/", data, headers=headers)
    assert response.status_code == 200
    html = response.content.decode()
    assert "The memory is empty" in html or "This field is required." in html
    f.refresh_from_db()
    assert f.content == "李雷住在杭州"


def test_an_edit_onto_a_taken_subject_and_predicate_is_refused(client_in):
    taken = fact("喜欢猫", predicate="宠物")
    f = fact()
    response = client_in.post(f"/facts/{f.pk}/edit/", form_data(f, predicate="宠物"))
    assert f"Fact #{taken.pk} already holds this subject and predicate" in response.content.decode()


# --- detail ----------------------------------------------------------------------------


def test_the_history_chain_shows_every_version(client_in):
    a = fact("李雷住在北京")
    b = fact("李雷住在上海")
    c = fact("李雷住在杭州")
    wp.edit_fact(c.pk, {"importance": 0.9}, actor="person")
    html = page(client_in, f"/facts/{b.pk}/")
    for version in (a, b, c):
        assert f'id="version-{version.pk}"' in html
    assert "Version 3" in html and "<del>上海</del><ins>杭州</ins>" in html
    assert "This is an older version" in html and "Make this version current again" in html
    assert "by agent" in html and "confidence 0.90 ≥ 0.85" in html
    assert "Importance: 0.50 → 0.90" in html


def test_recalls_older_than_the_log_are_explained(client_in):
    f = fact()
    Fact.objects.filter(pk=f.pk).update(access_count=5)
    html = page(client_in, f"/facts/{f.pk}/")
    assert "None of its recalls is in the recall log, which keeps the last 90 days" in html


def test_the_fact_page_shows_recall_expiry_and_events(client_in):
    f = fact(priority="short_term")
    html = page(client_in, f"/facts/{f.pk}/")
    assert "No recall is logged for this fact yet." in html
    assert 'data-retention="expires">expires on ' in html and "in 2" in html
    assert "Wrote “李雷住在杭州”" in html and "Expiry and decay" in html


def test_the_fact_page_counts_the_changes_of_the_batch_it_was_part_of(client_in):
    owner = Owner.default()
    made = [
        propose(
            Candidate(f"事实 {n}", subject="李雷", predicate=f"p{n}"),
            actor="job",
            batch="extract-7",
        )
        for n in range(3)
    ]
    html = page(client_in, f"/facts/{made[0].fact.pk}/")
    assert "part of extract-7 (3 changes)" in html
    assert owner.events.filter(batch="extract-7").count() == 3


@pytest.mark.parametrize(
    "action, status",
    [("archive", FactStatus.ARCHIVED), ("delete", FactStatus.ARCHIVED)],
)
def test_fact_actions_redirect_back_with_an_undo(client_in, action, status):
    f = fact()
    response = client_in.post(f"/facts/{f.pk}/{action}/")
    assert response.status_code == 302 and "?done=" in response["Location"]
    f.refresh_from_db()
    assert f.status == status
    client_in.post(f"/facts/{f.pk}/restore/")
    f.refresh_from_db()
    assert f.status == FactStatus.ACTIVE


def test_pin_and_revert(client_in):
    old = fact("李雷住在北京", priority="short_term")
    new = fact("李雷住在杭州")
    client_in.post(f"/facts/{new.pk}/pin/")
    new.refresh_from_db()
    assert new.priority == "permanent" and new.expires_at is None
    response = client_in.post(f"/facts/{old.pk}/revert/")
    current = Fact.objects.active().get()
    assert current.content == "李雷住在北京" and response["Location"].startswith(
        f"/facts/{current.pk}/"
    )


def test_a_refused_action_explains(client_in):
    old = fact("李雷住在北京")
    wp.archive_fact(old.pk, actor="person")
    fact("李雷住在杭州")
    response = client_in.post(f"/facts/{old.pk}/restore/", follow=True)
    assert "already holds this subject and predicate" in response.content.decode()


def test_unknown_actions_are_not_found(client_in):
    f = fact()
    assert client_in.post(f"/facts/{f.pk}/explode/").status_code == 404
    assert client_in.get(f"/facts/{f.pk}/archive/").status_code == 405
    assert Owner.default()  # the owner row the page uses exists


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_an_active_fact_is_not_called_expired_before_its_expiry(client_in, language):
    soon = timezone.now() + timedelta(days=20)
    f = fact("Travels to Kyoto in December", predicate="trip")
    wp.edit_fact(f.pk, {"expires_at": soon}, actor="person")
    client_in.cookies["django_language"] = language
    html = page(client_in, f"/facts/{f.pk}/")
    assert "(expired)" not in html and "（已过期）" not in html and "(已过期)" not in html
    when = timezone.localtime(soon).strftime("%Y-%m-%d %H:%M")
    assert when in html.split('class="muted small intervals"')[1].split("</p>")[0]


def test_the_english_word_diff_keeps_words_apart():
    from curator.diff import inline_diff

    shown = inline_diff("Switched from VS Code to Helix", "Now uses Helix")
    assert str(shown) == "<del>Switched from VS Code to</del> <ins>Now uses</ins> Helix"
    assert (
        str(inline_diff("李雷住在杭州", "李雷住在上海")) == "李雷住在<del>杭州</del><ins>上海</ins>"
    )


def test_the_table_says_how_long_a_fact_really_lasts(client_in):
    """Issue 29: "long term (30 days)" under a fact the person verified to keep."""
    kept = fact("喜欢乌龙茶", predicate="饮品", priority="long_term")
    Fact.objects.filter(pk=kept.pk).update(verified=True, expires_at=None)
    fading = fact("最近在看《三体》", predicate="在读", priority="long_term")
    Fact.objects.filter(pk=fading.pk).update(expires_at=None)
    dated = fact("下周去东京", predicate="行程", priority="short_term")
    html = page(client_in, "/facts/")
    assert "30 days" not in html.split("<tbody>")[1]
    row = html.split(f'id="fact-{kept.pk}"')[1].split("</tr>")[0]
    assert "fades when unused" in row  # long term, no date, verified: the person chose decay
    row = html.split(f'id="fact-{dated.pk}"')[1].split("</tr>")[0]
    day = timezone.localtime(Fact.objects.get(pk=dated.pk).expires_at).strftime("%Y-%m-%d")
    assert f"until {day}" in row
