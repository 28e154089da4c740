"""Confidence calibration: per source and bucket, what the person did with each item."""

import re

import pytest

from curator import calibration, thresholds
from curator import writepath as wp
from curator.models import Fact, MemoryEvent, PendingItem, SourceThreshold
from curator.undo import undo_event
from memsite.core.tokens import create_token
from memsite.models import ApiToken
from tests.api_helpers import Api, assert_error


def propose(api, content: str, confidence: float) -> dict:
    response = api.post("/memories", {"content": content, "confidence": confidence})
    assert response.status_code == 201, response.content
    return response.json()


def source(body: dict, key: str) -> dict:
    return next(s for s in body["sources"] if s["source"] == key)


def bucket(found: dict, low: float) -> dict:
    return next(b for b in found["buckets"] if b["range"][0] == low)


@pytest.fixture
def answered(api):
    """An agent's proposals, and what the person did with each."""
    confirmed = propose(api, "Likes green tea", 0.62)["pending"]["id"]
    edited = propose(api, "Lives near the river", 0.65)["pending"]["id"]
    ignored = propose(api, "Owns a red bicycle", 0.72)["pending"]["id"]
    propose(api, "Plays the cello", 0.78)  # still waiting
    deleted = propose(api, "Works at Initech", 0.95)["fact"]["id"]
    corrected = propose(api, "Has two sisters", 0.91)["fact"]["id"]
    kept = propose(api, "Speaks Italian", 0.97)["fact"]["id"]
    wp.confirm_pending(confirmed)
    wp.confirm_pending(edited, edits={"content": "Lives near the Spree"})
    wp.ignore_pending(ignored)
    wp.delete_fact(deleted, actor="person")
    wp.edit_fact(corrected, {"content": "Has three sisters"}, actor="person")
    return kept


def test_calibration_counts_match_the_review_actions(api, answered):
    token = ApiToken.objects.get(name="test agent")
    response = api.get("/calibration")
    assert response.status_code == 200, response.content
    agent = source(response.json(), f"token:{token.pk}")
    assert agent["label"] == "agent “test agent”"
    low = bucket(agent, 0.6)
    assert low["review"] == {"confirmed": 1, "edited": 1, "ignored": 0, "open": 0}
    assert (low["confirmed_share"], low["edited_share"]) == (0.5, 0.5)
    mid = bucket(agent, 0.7)
    assert mid["review"] == {"confirmed": 0, "edited": 0, "ignored": 1, "open": 1}
    assert mid["ignored_share"] == 1.0
    top = bucket(agent, 0.9)
    assert top["automatic"] == {"kept": 1, "corrected": 1, "deleted": 1}
    assert top["written"] == 3 and top["deleted_share"] == pytest.approx(1 / 3, abs=1e-4)
    assert bucket(agent, 0.8)["reviewed"] == bucket(agent, 0.8)["written"] == 0


def test_each_token_is_its_own_source(api, client, answered):
    _, raw = create_token("second agent")
    Api(client, raw).post("/memories", {"content": "Drinks oat milk", "confidence": 0.7})
    body = api.get("/calibration").json()
    second = ApiToken.objects.get(name="second agent")
    assert bucket(source(body, f"token:{second.pk}"), 0.7)["review"]["open"] == 1
    rules = source(body, "rules")  # listed with no history yet
    assert rules["thresholds"] == {"write": 0.85, "pending": 0.6, "custom": False}


def test_an_undone_write_counts_as_deleted(api):
    fact = propose(api, "Collects stamps", 0.9)["fact"]["id"]
    undo_event(MemoryEvent.objects.get(fact_id=fact, event_type="write").pk)
    [report] = [r for r in calibration.report() if r.key.startswith("token:")]
    assert report.buckets[calibration.bucket_of(0.9) + 1].auto["deleted"] == 1


def test_a_job_source_is_calibrated_too(db):
    candidate = wp.Candidate(content="用户喜欢喝乌龙茶", confidence=0.7, source="rules")
    item = wp.propose(candidate, actor="job").pending
    wp.confirm_pending(item.pk)
    rules = next(r for r in calibration.report() if r.key == "rules")
    assert rules.buckets[calibration.bucket_of(0.7) + 1].review["confirmed"] == 1


def _decisions(right: int, wrong: int, confidence: float) -> list[tuple[float, bool]]:
    return [(confidence, True)] * right + [(confidence, False)] * wrong


def test_a_threshold_is_suggested_where_answers_were_right():
    decisions = _decisions(40, 1, 0.93) + _decisions(19, 1, 0.84) + _decisions(10, 10, 0.75)
    suggestion = calibration.suggest(decisions)
    assert (suggestion.write, suggestion.right, suggestion.answered) == (0.8, 59, 61)
    assert "0.80" in suggestion.text and "59 of 61" in suggestion.text


def test_no_threshold_is_suggested_without_evidence_in_its_bucket():
    assert calibration.suggest(_decisions(30, 0, 0.95)).write == 0.9
    assert calibration.suggest(_decisions(10, 0, 0.95)) is None  # too few answers


def test_all_to_review_is_suggested_when_even_the_top_bucket_errs():
    suggestion = calibration.suggest(_decisions(15, 10, 0.95))
    assert suggestion.write == 1.0 and "send them all to review" in suggestion.text


# -- thresholds per source ---------------------------------------------------------------


def test_a_sources_threshold_routes_its_candidates(api, client, db):
    token = ApiToken.objects.get(name="test agent")
    wp.set_threshold(f"token:{token.pk}", write=0.6, pending=None)
    assert propose(api, "Likes jazz", 0.65)["outcome"] == "written"
    _, raw = create_token("careful agent")
    other = Api(client, raw).post("/memories", {"content": "Likes opera", "confidence": 0.65})
    assert other.json()["outcome"] == "pending"  # the default still applies to others


def test_a_threshold_change_is_undone_from_the_log(api, db):
    token = ApiToken.objects.get(name="test agent")
    key = f"token:{token.pk}"
    event = wp.set_threshold(key, write=0.7, pending=0.5)
    assert thresholds.for_source(key).write == 0.7
    assert event.event_type == "threshold" and event.payload["source"] == key
    undo_event(event.pk)
    assert thresholds.for_source(key) == thresholds.defaults()
    assert propose(api, "Likes chess", 0.75)["outcome"] == "pending"


def test_bad_thresholds_are_refused(db):
    with pytest.raises(wp.InvalidCandidate):
        wp.set_threshold("rules", write=0.5, pending=0.7)
    with pytest.raises(wp.InvalidCandidate):
        wp.set_threshold("rules", write=1.5, pending=None)
    with pytest.raises(wp.InvalidCandidate):
        wp.set_threshold("", write=0.9, pending=None)
    assert not SourceThreshold.objects.exists()
    assert wp.set_threshold("rules", write=None, pending=None) is None  # nothing changed


def test_a_retry_through_another_token_replays(api, client, db):
    body = {"content": "Likes tea", "confidence": 0.95, "operation_id": "op-1"}
    assert api.post("/memories", body).status_code == 201
    _, raw = create_token("same agent, new token")
    assert Api(client, raw).post("/memories", body).status_code == 200
    assert Fact.objects.count() == 1 and not PendingItem.objects.exists()


def test_calibration_needs_a_token(anon_api, db):
    assert_error(anon_api.get("/calibration"), 401)


# -- the page ----------------------------------------------------------------------------


def test_the_home_page_links_to_calibration(client_in, answered):
    assert 'href="/calibration/"' in client_in.get("/").content.decode()


def test_the_calibration_page_draws_each_source(client_in, answered):
    html = client_in.get("/calibration/").content.decode()
    assert "agent “test agent”" in html
    assert html.count('<svg class="calibration-chart"') == 1  # only sources with history
    table = html.split('class="table compact calibration-table"')[1].split("</table>")[0]
    assert '<tr data-bucket="0.9–1.0">' in table
    row = table.split('<tr data-bucket="0.9–1.0">')[1].split("</tr>")[0]
    assert [cell.split("<")[0].strip() for cell in row.split('<td class="num">')[1:]] == [
        "0", "0", "0", "0", "0", "3", "1", "1",
    ]  # fmt: skip
    assert "Sources without history yet" in html and "rules extractor" in html


def test_a_suggested_threshold_is_applied_and_undone(client_in, api):
    for n in range(24):
        propose(api, f"Fact number {n} about the user", 0.88)
    token = ApiToken.objects.get(name="test agent")
    for n in range(6):
        item = propose(api, f"Guess number {n} about the user", 0.83)["pending"]["id"]
        wp.confirm_pending(item)
    html = client_in.get("/calibration/").content.decode()
    assert "At 0.80 and above, 30 of 30 were right: write them directly." in html
    key = f"token:{token.pk}"
    response = client_in.post("/calibration/threshold/", {"source": key, "write": "0.80"})
    event = MemoryEvent.objects.get(event_type="threshold")
    assert response["Location"] == f"/calibration/?done={event.pk}"
    assert thresholds.for_source(key).write == 0.8
    page = client_in.get(response["Location"]).content.decode()
    assert "Set the thresholds of agent “test agent”: write at 0.80, review at default" in page
    assert propose(api, "Another guess", 0.82)["outcome"] == "written"
    client_in.post(f"/activity/{event.pk}/undo/")
    assert thresholds.for_source(key).write == 0.85


def test_each_of_the_six_outcomes_has_its_own_colour(client_in, answered):
    html = client_in.get("/calibration/").content.decode()
    legend = html.split('class="legend calibration-legend"')[1].split("</p>")[0]
    colours = re.findall(r"background: (#[0-9a-f]{6})", legend)
    assert len(colours) == 6 and len(set(colours)) == 6
    chart = html.split('<svg class="calibration-chart"')[1].split("</svg>")[0]
    assert set(re.findall(r'fill="(#[0-9a-f]{6})"', chart)) <= set(colours)


def test_the_page_explains_a_refused_threshold(client_in, db):
    response = client_in.post(
        "/calibration/threshold/",
        {"source": "rules", "write": "0.5", "pending": "0.7"},
        follow=True,
    )
    assert "must not be above the write threshold" in response.content.decode()
    response = client_in.post(
        "/calibration/threshold/", {"source": "rules", "write": "2"}, follow=True
    )
    assert "Write at" in response.content.decode() and not SourceThreshold.objects.exists()


def test_the_calibration_page_speaks_chinese(chinese_client, answered):
    html = chinese_client.get("/calibration/").content.decode()
    assert "校准" in html and "保存阈值" in html
