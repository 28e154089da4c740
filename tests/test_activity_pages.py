"""The activity log: every event with its changes, filters, undo, batch undo and purge."""

from datetime import timedelta

from django.utils import timezone

from curator import writepath as wp
from curator.models import EventType, Fact, FactStatus, MemoryEvent
from curator.writepath import Candidate, propose

HX = {"HX-Request": "true"}


def fact(content="李雷住在杭州", predicate="城市", **kw) -> Fact:
    candidate = Candidate(content, subject="李雷", predicate=predicate, **kw)
    return propose(candidate, actor="agent").fact


def page(client, url="/activity/", **kw) -> str:
    response = client.get(url, **kw)
    assert response.status_code == 200
    return response.content.decode()


def test_it_lists_every_event_newest_first_with_who_and_what(client_in):
    f = fact()
    wp.edit_fact(f.pk, {"content": "李雷住在杭州西湖区"}, actor="person")
    propose(Candidate("可能喜欢咖啡", confidence=0.3), actor="job")
    html = page(client_in)
    assert (
        html.index("Dropped “可能喜欢咖啡”")
        < html.index("Edited confidence, content")  # a hand edit verifies: confidence 1.0
        < html.index("Wrote “李雷住在杭州”")
    )
    assert "confidence 0.30 is below 0.60" in html
    assert "<ins>西湖区</ins>" in html  # the edit's diff
    assert ">person<" in html and ">agent<" in html and ">job<" in html


def test_filters(client_in):
    f = fact()
    g = fact("喜欢猫", predicate="宠物")
    wp.archive_fact(g.pk, actor="person")
    assert page(client_in, "/activity/?actor=person").count('<tr id="event-') == 1
    assert page(client_in, "/activity/?type=write").count('<tr id="event-') == 2
    assert page(client_in, f"/activity/?fact={f.pk}").count('<tr id="event-') == 1
    tomorrow = (timezone.localdate() + timedelta(days=1)).isoformat()
    assert "No activity matches" in page(client_in, f"/activity/?date_from={tomorrow}")
    today = timezone.localdate().isoformat()
    assert page(client_in, f"/activity/?date_to={today}").count('<tr id="event-') == 3


def test_undo_from_the_log(client_in):
    f = fact()
    wp.archive_fact(f.pk, actor="person")
    event = MemoryEvent.objects.get(event_type=EventType.ARCHIVE)
    response = client_in.post(f"/activity/{event.pk}/undo/", follow=True)
    f.refresh_from_db()
    assert f.status == FactStatus.ACTIVE
    html = response.content.decode()
    assert "Undone: Archived" in html and "Undid event" in html
    assert MemoryEvent.objects.filter(event_type=EventType.ARCHIVE).exists()  # kept


def test_a_refused_undo_says_why(client_in):
    f = fact()
    wp.edit_fact(f.pk, {"content": "甲"}, actor="person")
    first = MemoryEvent.objects.get(event_type=EventType.UPDATE)
    wp.edit_fact(f.pk, {"content": "乙"}, actor="person")
    html = page(client_in)
    assert f"Fact #{f.pk} was changed afterwards" in html
    response = client_in.post(f"/activity/{first.pk}/undo/", follow=True)
    assert "Cannot undo:" in response.content.decode()
    f.refresh_from_db()
    assert f.content == "乙"


def test_undo_with_htmx_returns_the_refreshed_log(client_in):
    f = fact()
    wp.archive_fact(f.pk, actor="person")
    event = MemoryEvent.objects.get(event_type=EventType.ARCHIVE)
    response = client_in.post(
        f"/activity/{event.pk}/undo/", {"next": "/activity/"}, headers=HX, follow=True
    )
    html = response.content.decode()
    assert "<html" not in html and "activity-table" in html and 'hx-swap-oob="true"' in html


def test_a_batch_is_shown_together_and_undone_together(client_in):
    facts = [fact(f"事实{i}", predicate=f"p{i}") for i in range(3)]
    batch, _ = wp.bulk_facts([f.pk for f in facts], "archive")
    html = page(client_in)
    assert f"part of {batch} (3 changes)" in html
    html = page(client_in, f"/activity/?batch={batch}")
    assert html.count('<tr id="event-') == 3 and "Undo the whole batch" in html
    client_in.post(f"/activity/batch/{batch}/undo/", {"next": f"/activity/?batch={batch}"})
    assert Fact.objects.active().count() == 3
    response = client_in.post(f"/activity/batch/{batch}/undo/", follow=True)
    assert "Nothing in this batch is left to undo." in response.content.decode()


def test_purge_asks_first_and_then_removes_the_text(client_in):
    f = fact("我的保险箱号码是 Q7731", predicate="保险箱")
    wp.delete_fact(f.pk, actor="person")
    delete = MemoryEvent.objects.get(event_type=EventType.DELETE)
    html = page(client_in)
    assert f'href="/activity/{delete.pk}/purge/"' in html
    confirm = page(client_in, f"/activity/{delete.pk}/purge/")
    assert "It cannot be undone." in confirm and "Q7731" in confirm
    response = client_in.post(f"/activity/{delete.pk}/purge/", follow=True)
    assert f"Fact #{f.pk} was permanently deleted." in response.content.decode()
    assert not Fact.objects.filter(pk=f.pk).exists()
    assert "Q7731" not in page(client_in)


def test_an_active_fact_cannot_be_purged(client_in):
    fact()
    write = MemoryEvent.objects.get(event_type=EventType.WRITE)
    response = client_in.get(f"/activity/{write.pk}/purge/", follow=True)
    assert "Only a deleted or archived fact can be purged." in response.content.decode()
    assert Fact.objects.exists()


def test_undo_needs_post(client_in):
    fact()
    write = MemoryEvent.objects.get(event_type=EventType.WRITE)
    assert client_in.get(f"/activity/{write.pk}/undo/").status_code == 405
