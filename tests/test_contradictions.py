"""The contradiction inbox: the rules, the job, resolution through the write path, undo."""

import json
import re

import pytest
from huey.contrib.djhuey import HUEY

from curator import writepath as wp
from curator.models import (
    Contradiction,
    ContradictionStatus,
    EventType,
    Fact,
    FactStatus,
    MemoryEvent,
)
from curator.undo import UndoRefused, undo_event
from lifecycle import contradictions, tasks
from lifecycle.extraction.contradiction_rules import read, verdict
from tests.api_helpers import assert_error


def write(content: str, **kw) -> Fact:
    kw = {"confidence": 0.95, "priority": "permanent", **kw}
    return wp.propose(wp.Candidate(content=content, **kw), actor="agent").fact


# -- the rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b",
    [
        ("I drink coffee every morning", "I don't drink coffee any more"),
        ("The user lives in Berlin", "The user moved to Munich"),
        ("喜欢咖啡", "不喝咖啡"),
        ("用户住在杭州", "用户搬到上海了"),
        ("The user is vegetarian", "The user eats meat every day"),
        ("用户单身", "用户已婚"),
    ],
)
def test_the_rules_find_pairs_that_cannot_both_be_true(a, b):
    assert verdict(a, b) is not None
    assert verdict(b, a) is not None


@pytest.mark.parametrize(
    "a, b",
    [
        ("The user drinks coffee every morning", "The user doesn't drink coffee after 6 pm"),
        ("The user likes coffee", "The user doesn't like tea"),
        ("The user lives in Berlin", "The user lives in Berlin, Germany"),
        ("The user used to live in Paris", "The user lives in Berlin"),
        ("The user's sister lives in Berlin", "The user lives in Munich"),
        ("用户每天早上喝咖啡", "用户下午不喝咖啡"),
        ("用户戒烟了", "用户不抽烟"),
        ("The user wants to learn to swim", "The user can't swim yet"),
    ],
)
def test_the_rules_leave_compatible_near_duplicates_alone(a, b):
    assert verdict(a, b) is None


def test_the_labelled_set_is_large_enough_and_balanced():
    path = "tests/data/contradictions.jsonl"
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    for label in ("contradiction", "compatible"):
        assert sum(r["label"] == label for r in rows) >= 60
        for lang in ("en", "zh"):
            assert sum(r["label"] == label and r["lang"] == lang for r in rows) >= 25


# -- the job -----------------------------------------------------------------------------


@pytest.fixture
def coffee(db):
    return write("I drink coffee every morning"), write("I don't drink coffee any more")


@pytest.fixture
def found(coffee):
    chinese = write("用户住在杭州"), write("用户搬到上海了")
    write("The user has a cat named Miso")  # nothing to do with either
    report = contradictions.scan()
    assert report.found == {"negation": 1, "slot": 1}, report
    return coffee, chinese


def test_the_job_finds_each_pair_once(found):
    assert Contradiction.objects.count() == 2
    again = contradictions.scan()
    assert again.total == 0 and Contradiction.objects.count() == 2


def test_a_scan_does_not_keep_the_claims_it_read(found):
    """The consumer would otherwise hold every fact's reading (90 MB at 100k facts)."""
    assert read.cache_info().currsize == 0


def test_the_same_subject_and_predicate_with_another_value_is_a_contradiction(db):
    a = write("Works at Initech", subject="user", predicate="employer")
    b = write("Works at Globex", subject="User", predicate="Employer ")  # another spelling
    assert a.status == b.status == FactStatus.ACTIVE
    contradictions.scan()
    [item] = Contradiction.objects.all()
    assert (item.rule, item.left_id, item.right_id) == ("same_slot", a.pk, b.pk)


def test_versions_of_one_chain_are_never_a_contradiction(db):
    write("The user lives in Berlin", subject="user", predicate="lives_in")
    write("The user moved to Munich", subject="user", predicate="lives_in")  # supersedes
    assert contradictions.scan().total == 0


def test_a_recent_scan_only_looks_at_pairs_with_a_changed_fact(coffee):
    from datetime import timedelta

    from django.utils import timezone

    Fact.objects.update(updated_at=timezone.now() - timedelta(days=3))
    assert contradictions.scan_recent().total == 0
    assert contradictions.scan().total == 1


def test_writes_queue_one_coalesced_scan(db, monkeypatch, settings):
    queued = []
    monkeypatch.setattr(contradictions, "_next_run", 0.0)
    monkeypatch.setattr(tasks, "delayed_runs_happen", lambda: True)  # as in the consumer
    monkeypatch.setattr(
        tasks.find_contradictions_soon, "schedule", lambda **kw: queued.append(kw["delay"])
    )
    for _ in range(5):
        tasks.contradictions_after_write()
    assert queued == [settings.CONTRADICTIONS_DELAY]


def test_a_fact_change_reaches_the_receiver(db, monkeypatch, django_capture_on_commit_callbacks):
    calls = []
    monkeypatch.setattr(tasks, "contradictions_after_write", lambda: calls.append(1))
    monkeypatch.setattr(tasks, "index_item", lambda kind, object_id: None)
    with django_capture_on_commit_callbacks(execute=True):
        write("The user has a dog")
    assert calls == [1]


def _judge(body: dict) -> str:
    """The fake LLM: a pair about sushi contradicts, any other does not."""
    pairs = re.findall(r"^(\d+)\. A: (.*)$", body["messages"][1]["content"], re.M)
    answers = [{"id": int(n), "contradiction": "sushi" in a, "why": "opposite"} for n, a in pairs]
    return json.dumps({"pairs": answers})


def test_the_llm_judges_similar_pairs_the_rules_leave_open(db, fake_openai, settings):
    settings.LLM_BASE_URL, settings.LLM_MODEL = fake_openai.base_url, "test-model"
    write("The user loves sushi")
    write("The user gets sick from sushi")
    write("The user is a fan of jazz")
    write("The user is a big fan of jazz records")
    fake_openai.chat_replies = [_judge]
    report = contradictions.scan()
    assert report.asked_llm == 2 and report.dismissed == 1
    [item] = Contradiction.objects.filter(rule="llm", status=ContradictionStatus.OPEN)
    assert item.left.content == "The user loves sushi" and item.detail == {"why": "opposite"}
    assert contradictions.scan().asked_llm == 0  # answered pairs are not asked again


def test_a_failing_llm_leaves_the_rules_findings(coffee, fake_openai, settings):
    settings.LLM_BASE_URL, settings.LLM_MODEL = fake_openai.base_url, "test-model"
    fake_openai.fail_next(500, times=4)
    write("The user enjoys long walks by the river")
    write("The user enjoys long walks")
    assert contradictions.scan().found == {"negation": 1}


# -- resolving through the write path ------------------------------------------------------


def test_keep_the_right_archives_the_left_and_undo_restores_it(found):
    (left, right), _ = found
    item = Contradiction.objects.get(left=left)
    event = wp.resolve_contradiction(item.pk, "keep_right")
    left.refresh_from_db()
    item.refresh_from_db()
    assert left.status == FactStatus.ARCHIVED and item.status == ContradictionStatus.RESOLVED
    assert event.event_type == EventType.RESOLVE and event.fact_id == left.pk
    undo_event(event.pk)
    left.refresh_from_db()
    item.refresh_from_db()
    assert left.status == FactStatus.ACTIVE
    assert (item.status, item.resolution, item.resolved_at) == ("open", "", None)


def test_merge_rewrites_the_left_and_archives_the_right(found):
    (left, right), _ = found
    item = Contradiction.objects.get(left=left)
    wp.resolve_contradiction(item.pk, "merge", text="I stopped drinking coffee in March")
    left.refresh_from_db()
    right.refresh_from_db()
    assert left.content == "I stopped drinking coffee in March" and left.verified
    assert right.status == FactStatus.ARCHIVED


def test_both_true_is_never_asked_again(found):
    (left, right), _ = found
    item = Contradiction.objects.get(left=left)
    wp.resolve_contradiction(item.pk, "both")
    assert Fact.objects.get(pk=left.pk).status == Fact.objects.get(pk=right.pk).status == "active"
    assert contradictions.scan().total == 0
    assert Contradiction.objects.get(pk=item.pk).status == ContradictionStatus.COMPATIBLE


def test_a_resolution_is_refused_when_it_no_longer_applies(found):
    (left, right), _ = found
    item = Contradiction.objects.get(left=left)
    with pytest.raises(wp.InvalidCandidate):
        wp.resolve_contradiction(item.pk, "merge", text="   ")
    with pytest.raises(wp.InvalidCandidate):
        wp.resolve_contradiction(item.pk, "keep_both")
    wp.archive_fact(right.pk, actor="person")
    with pytest.raises(wp.MootPending):
        wp.resolve_contradiction(item.pk, "keep_left")
    wp.restore_fact(right.pk, actor="person")
    wp.resolve_contradiction(item.pk, "keep_left")
    with pytest.raises(wp.AlreadyResolved):
        wp.resolve_contradiction(item.pk, "keep_left")


def test_undo_is_refused_once_the_fact_changed_again(found):
    (left, right), _ = found
    item = Contradiction.objects.get(left=left)
    event = wp.resolve_contradiction(item.pk, "keep_left")
    wp.restore_fact(right.pk, actor="person")
    with pytest.raises(UndoRefused):
        undo_event(event.pk)


# -- the API -----------------------------------------------------------------------------


def test_api_lists_the_contradictions_the_job_found(api, found):
    (left, right), (hangzhou, shanghai) = found
    body = api.get("/contradictions").json()
    assert body["count"] == 2
    pairs = {(i["left"]["content"], i["right"]["content"]) for i in body["items"]}
    assert pairs == {
        ("I drink coffee every morning", "I don't drink coffee any more"),
        ("用户住在杭州", "用户搬到上海了"),
    }
    slot = next(i for i in body["items"] if i["rule"] == "slot")
    assert "杭州" in slot["explanation"] and "上海" in slot["explanation"]


def test_api_keep_the_right_archives_the_left_and_undo_restores_it(api, found):
    (left, right), _ = found
    item = Contradiction.objects.get(left=left)
    response = api.post(f"/contradictions/{item.pk}/resolve", {"action": "keep_right"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["contradiction"]["status"] == "resolved"
    assert body["contradiction"]["left"]["status"] == "archived"
    event = MemoryEvent.objects.get(pk=body["event_id"])
    assert event.actor == "agent" and event.event_type == "resolve"
    assert api.get("/contradictions").json()["count"] == 1
    undo_event(event.pk)
    assert Fact.objects.get(pk=left.pk).status == "active"
    assert api.get("/contradictions").json()["count"] == 2


def test_api_refuses_bad_resolutions(api, read_api, found):
    (left, _), _ = found
    item = Contradiction.objects.get(left=left)
    path = f"/contradictions/{item.pk}/resolve"
    assert_error(api.post(path, {"action": "merge"}), 422, "empty_content")
    assert_error(api.post(path, {"action": "delete_both"}), 422, "invalid")
    assert_error(api.post("/contradictions/99999/resolve", {"action": "both"}), 404, "not_found")
    assert_error(read_api.post(path, {"action": "both"}), 403, "read_only_token")
    assert api.post(path, {"action": "both"}).status_code == 200
    assert_error(api.post(path, {"action": "both"}), 409, "already_resolved")
    assert api.get("/contradictions", {"status": "compatible"}).json()["count"] == 1


# -- the page ----------------------------------------------------------------------------


def test_review_has_a_contradictions_tab_with_both_sides(client_in, found):
    review = client_in.get("/review/").content.decode()
    assert (
        'href="/review/contradictions/"' in review
        and '<span class="badge count">2</span>' in review
    )
    html = client_in.get("/review/contradictions/").content.decode()
    assert html.count('class="contradiction card"') == 2
    text = re.sub(r"<[^>]+>", "", html)
    assert "I drink coffee every morning" in text and "用户搬到上海了" in text
    assert "用户<del>住在杭州</del>" in html and "用户<ins>搬到上海了</ins>" in html


def test_keep_the_right_on_the_page_offers_the_undo(client_in, found):
    (left, right), _ = found
    item = Contradiction.objects.get(left=left)
    response = client_in.post(
        f"/review/contradictions/{item.pk}/resolve/", {"action": "keep_right"}
    )
    assert response.status_code == 302
    event = MemoryEvent.objects.get(event_type="resolve")
    assert response["Location"] == f"/review/contradictions/?done={event.pk}"
    page = client_in.get(response["Location"]).content.decode()
    assert f'action="/activity/{event.pk}/undo/"' in page
    assert "Kept “I don&#x27;t drink coffee any more” and archived" in page
    assert Fact.objects.get(pk=left.pk).status == "archived"
    client_in.post(f"/activity/{event.pk}/undo/")
    assert Fact.objects.get(pk=left.pk).status == "active"


def test_a_merge_without_text_is_explained_on_the_page(client_in, found):
    (left, _), _ = found
    item = Contradiction.objects.get(left=left)
    response = client_in.post(
        f"/review/contradictions/{item.pk}/resolve/", {"action": "merge", "text": " "}, follow=True
    )
    assert "The memory is empty" in response.content.decode()
    assert Contradiction.objects.get(pk=item.pk).status == "open"


def test_look_now_finds_contradictions(client_in, coffee):
    response = client_in.post("/review/contradictions/check/", follow=True)
    assert response.content.decode().count('class="contradiction card"') == 1


def test_the_contradictions_tab_speaks_chinese(chinese_client, found):
    html = chinese_client.get("/review/contradictions/").content.decode()
    assert "两者都对" in html and "保留这条" in html


def test_a_queued_check_is_not_work_health_waits_for(api, monkeypatch):
    monkeypatch.setattr(contradictions, "_next_run", 0.0)
    monkeypatch.setattr(tasks, "delayed_runs_happen", lambda: True)
    tasks.contradictions_after_write()  # scheduled a minute ahead
    try:
        assert api.get("/health").json()["queue"]["pending"] == 0
    finally:
        HUEY.flush()  # the schedule in memory outlives the test


def test_purging_a_fact_blanks_its_text_in_the_resolution(found):
    (left, right), _ = found
    item = Contradiction.objects.get(left=left)
    event = wp.resolve_contradiction(item.pk, "keep_left")
    wp.purge_fact(right.pk)
    event.refresh_from_db()
    assert event.payload["right"]["content"] is None
    assert "I don't drink coffee any more" not in json.dumps(event.payload, ensure_ascii=False)
    assert event.payload["left"]["content"] == "I drink coffee every morning"
    assert not Contradiction.objects.filter(pk=item.pk).exists()


def test_a_resolution_and_its_undo_are_in_the_facts_lifetime(found):
    from curator import timetravel

    (left, right), _ = found
    item = Contradiction.objects.get(left=left)
    undo_event(wp.resolve_contradiction(item.pk, "keep_right").pk)
    intervals = timetravel.lifetime(Fact.objects.get(pk=left.pk)).intervals
    assert [i.ended_by for i in intervals] == ["archived", ""]


def rows_for_pairing(n: int) -> list[contradictions.Row]:
    """n facts of two owners from the labelled texts (Chinese and English), said several
    times over, some superseding another."""
    path = "tests/data/contradictions.jsonl"
    texts = [
        json.loads(line)[side]
        for line in open(path, encoding="utf-8")
        if line.strip()
        for side in ("a", "b")
    ]
    return [
        contradictions.Row(
            pk=pk,
            owner_id=1 + pk % 2,
            content=texts[(pk * 7) % len(texts)],
            subject="",
            predicate="",
            content_key=f"k{pk}",
            supersedes_id=pk - 2 if pk % 5 == 0 else None,
            updated_at=None,
        )
        for pk in range(1, n + 1)
    ]


def pairs_sharing_a_key(rows, changed) -> list[tuple[int, int]]:
    """The definition: two facts of one owner sharing a key that at most MAX_KEY_FACTS
    facts share, neither superseding the other (with `changed`, one of them changed)."""
    from lifecycle.extraction.contradiction_rules import keys

    holders = {}
    for row in rows:
        for key in keys(row.content):
            holders.setdefault((row.owner_id, key), set()).add(row.pk)
    by_pk = {row.pk: row for row in rows}
    found = set()
    for pks in holders.values():
        if len(pks) > contradictions.MAX_KEY_FACTS:
            continue
        for a in pks:
            for b in pks:
                linked = by_pk[a].supersedes_id == b or by_pk[b].supersedes_id == a
                if a < b and not linked and (changed is None or {a, b} & changed):
                    found.add((a, b))
    return sorted(found)


@pytest.mark.parametrize("changed", [None, set(range(1, 1500, 37))])
def test_a_scan_over_many_facts_pairs_every_fact_sharing_a_key(monkeypatch, changed):
    """The scan builds its key index without the claim cache (the consumer's peak at 100k
    facts): the pairs are still exactly those sharing a key, keys shared by too many facts
    skipped, in pk order."""
    monkeypatch.setattr(contradictions, "MAX_KEY_FACTS", 40)
    rows = rows_for_pairing(1500)
    read.cache_clear()
    pairs = [(a.pk, b.pk) for a, b in contradictions.rule_pairs(rows, changed)]
    assert read.cache_info().currsize == 0  # each fact read once, past the cache
    expected = pairs_sharing_a_key(rows, changed)
    assert pairs == expected
    assert len(expected) > 300
    assert {row.owner_id for row in rows if row.pk in {pk for pair in pairs for pk in pair}} == {
        1,
        2,
    }
    monkeypatch.setattr(contradictions, "MAX_KEY_FACTS", 10**6)
    assert len(contradictions.rule_pairs(rows, changed)) > len(pairs)  # the cap was hit
