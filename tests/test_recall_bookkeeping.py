"""What a recorded search costs the searches after it (issue 33 item 0): the recall writer
runs beside them on one interpreter lock, so it must not rebuild what did not change, and its
writes (access counters, the recall log) must not send the search indexes back to disk."""

import pytest

from curator.guard import rules as guard
from curator.models import Owner
from retrieval import keywords, matrix
from retrieval import search as searching
from retrieval.models import RecallLog
from retrieval.search import flush_recalls, search
from tests.search_helpers import fact


@pytest.fixture
def background(settings):
    settings.SEARCH_RECORD_IN_BACKGROUND = True


@pytest.fixture
def rebuilt_rules(monkeypatch):
    """How many times the guard rules were rebuilt from the database (ORM and matchers)."""
    calls = []
    real = guard.active

    def counting(owner=None):
        calls.append(owner)
        return real(owner)

    monkeypatch.setattr(guard, "active", counting)
    return calls


@pytest.mark.django_db(transaction=True)
def test_recording_recalls_does_not_rebuild_unchanged_guard_rules(background, rebuilt_rules):
    owner = Owner.default()
    fact(owner, "用户住在杭州")
    for query in ("杭州", "住在哪里", "杭州的天气"):
        search(query, owner=owner, caller="api")
        flush_recalls()
    # The first recall reads them (and creates the built-in detectors: read once more).
    assert len(rebuilt_rules) <= 2
    rebuilt_rules.clear()
    search("杭州", owner=owner, caller="api")
    flush_recalls()
    assert rebuilt_rules == []
    assert RecallLog.objects.count() == 4


@pytest.mark.django_db(transaction=True)
def test_a_rule_added_between_recalls_masks_the_next_logged_query(background, rebuilt_rules):
    owner = Owner.default()
    fact(owner, "用户住在杭州")
    search("杭州 orchard", owner=owner, caller="api")
    flush_recalls()
    rebuilt_rules.clear()
    rule = guard.create_rule({"name": "fruit", "words": ["orchard"]}, owner)
    search("杭州 orchard", owner=owner, caller="api")
    flush_recalls()
    guard.update_rule(rule, {"enabled": False})
    search("杭州 orchard", owner=owner, caller="api")
    flush_recalls()
    logged = list(RecallLog.objects.order_by("pk").values_list("query", flat=True))
    assert "orchard" in logged[0] and "orchard" not in logged[1] and "orchard" in logged[2]
    assert len(rebuilt_rules) == 2  # once each time the rules changed, never per search


@pytest.mark.django_db(transaction=True)
def test_recording_recalls_does_not_reload_or_replay_the_search_indexes(
    background, settings, monkeypatch
):
    settings.SEARCH_KEYWORD_INDEX = True
    owner = Owner.default()
    items = [fact(owner, f"用户第{n}次去杭州出差 trip {n}") for n in range(5)]
    search("杭州", owner=owner, record=False)  # loads both indexes
    work = []
    for cls, name in [
        (keywords.KeywordIndex, "_reload"),
        (keywords.KeywordIndex, "_apply"),
        (matrix.VectorMatrix, "_catch_up"),
    ]:
        real = getattr(cls, name)
        monkeypatch.setattr(
            cls, name, lambda self, *a, r=real, n=name: work.append(n) or r(self, *a)
        )
    for query in ("杭州", "出差", "trip", "杭州 trip"):
        search(query, owner=owner, caller="api")
        flush_recalls()
    search("杭州", owner=owner, record=False)
    assert work == []  # the counters and the log are not search documents
    assert sum(i.access_count for i in type(items[0]).objects.filter(owner=owner)) > 0


@pytest.mark.django_db(transaction=True)
def test_recalls_made_close_together_share_one_write(background, settings, monkeypatch):
    """Each commit makes the searching connections re-read their pages: the recalls of a
    short while go in one transaction, not one each."""
    settings.SEARCH_RECORD_DELAY = 0.5
    owner = Owner.default()
    item = fact(owner, "用户住在杭州")
    writes = []
    real = searching._write_recalls
    monkeypatch.setattr(
        searching, "_write_recalls", lambda batch: writes.append(len(batch)) or real(batch)
    )
    for _ in range(4):
        search("杭州", owner=owner, caller="api")
    flush_recalls()
    item.refresh_from_db()
    assert writes == [4] and item.access_count == 4 and RecallLog.objects.count() == 4
