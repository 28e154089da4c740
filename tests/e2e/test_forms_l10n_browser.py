"""Every form with a date, time or number field, submitted in a real browser in both languages,
and the stored (or kept) value checked (issue 29: the zh-Hans page wrote the review expiry as
2026/12/27, which a date input rejects, so confirming failed for every Chinese reader)."""

import re
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from curator import thresholds
from curator import writepath as wp
from curator.models import Episode, Fact, Owner, PendingItem
from memsite.core.tokens import create_token
from retrieval.indexing import index_items
from retrieval.models import RegressionCheck
from tests.e2e.helpers import PASSWORD, USERNAME, log_in
from tests.lifecycle_helpers import session, turn

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
LANGUAGES = ["en", "zh-hans"]
MOMENT = "2030-01-02T09:30"


@pytest.fixture
def world(monkeypatch):
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    monkeypatch.setattr("lifecycle.tasks.contradictions_after_write", lambda: None)
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    token, _raw = create_token("chat assistant")
    for text in ("最近在看《三体》", "Plans a trip to Kyoto", "在学做川菜", "Reads about sailing"):
        wp.propose(wp.Candidate(text, confidence=0.7, token_id=token.pk), actor="agent")
    said = turn(session("s-forms"), "我最近在学 Rust")
    Episode.objects.create(
        owner=Owner.default(),
        summary="Set up the Rust toolchain",
        session=said.session,
        started_at=timezone.now(),
        ended_at=timezone.now(),
    )
    fact = wp.propose(wp.Candidate("李雷住在杭州", subject="李雷"), actor="person").fact
    return {"token": f"token:{token.pk}", "fact": fact}


def in_language(page, live_server, language, path):
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    log_in(page, live_server, path)
    expect(page.locator("html")).to_have_attribute("lang", language)


def card(page, content):
    return page.locator("ol.queue > li.item", has_text=content)


def pending(content) -> PendingItem:
    return PendingItem.objects.get(candidate__content=content)


def stored_day(content):
    return timezone.localdate(Fact.objects.get(content=content).expires_at).isoformat()


@pytest.mark.parametrize("language", LANGUAGES)
def test_review_confirms_with_an_expiry_date_by_click_and_by_key(
    page, live_server, world, language, screenshot_dir
):
    in_language(page, live_server, language, "/review/")
    # Each card shows its expiry in the date input, not an empty box.
    shown = {}
    for content in ("最近在看《三体》", "Plans a trip to Kyoto"):
        item = pending(content)
        day = timezone.localdate(wp.retention_of(item).expires_at).isoformat()
        date_input = page.locator(f'input[name="r{item.pk}-expires_on"]')
        expect(date_input).to_have_value(day)
        shown[content] = day
    page.screenshot(path=str(screenshot_dir / f"review-expiry-{language}.png"), full_page=True)

    # By click, after choosing another day.
    picked = (timezone.localdate() + timedelta(days=45)).isoformat()
    trip = card(page, "Plans a trip to Kyoto")
    trip.locator('input[type="date"]').fill(picked)
    trip.locator("button[data-key=c]").click()
    expect(trip).to_have_class(re.compile(r"\bdone\b"))
    assert stored_day("Plans a trip to Kyoto") == picked

    # By keyboard: select the first open card with j, confirm it with c, as shown.
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("j")
    current = page.locator("ol.queue > li.item.current")
    expect(current).to_have_count(1)
    content = next(c for c in shown if c in current.inner_text())
    page.keyboard.press("c")
    expect(card(page, content)).to_have_class(re.compile(r"\bdone\b"))
    assert stored_day(content) == shown[content]
    assert page.locator("[role=alert]").count() == 0


@pytest.mark.parametrize("language", LANGUAGES)
def test_later_edit_and_fact_forms_store_the_typed_values(page, live_server, world, language):
    in_language(page, live_server, language, "/review/")
    # "Later … or until" a moment (datetime-local).
    cooking = card(page, "在学做川菜")
    cooking.locator("details.later summary").click()
    cooking.locator('input[name="until"]').fill(MOMENT)
    cooking.locator('details.later button[value="date"]').click()
    expect(cooking).to_have_class(re.compile(r"\bdone\b"))
    until = timezone.localtime(pending("在学做川菜").cooldown_until)
    assert until.strftime("%Y-%m-%dT%H:%M") == MOMENT

    # Edit and confirm: a decimal importance.
    sailing = card(page, "Reads about sailing")
    sailing.locator("a[data-key=e]").click()
    editing = page.locator("li.item.editing")
    editing.locator('input[name$="-importance"]').fill("0.35")
    editing.locator("button.primary").click()
    expect(page.locator("li.item.done", has_text="Reads about sailing")).to_be_visible()
    assert Fact.objects.get(content="Reads about sailing").importance == pytest.approx(0.35)

    # A fact's own edit page: importance and an expiry moment.
    fact = world["fact"]
    page.goto(f"{live_server.url}/facts/{fact.pk}/edit/")
    page.locator('input[name$="-importance"]').fill("0.4")
    page.locator('input[name$="-expires_at"]').fill(MOMENT)
    page.locator("form button.primary").click()
    expect(page).to_have_url(re.compile(rf"/facts/{fact.pk}/(\?done=[0-9]+)?$"))
    fact.refresh_from_db()
    assert fact.importance == pytest.approx(0.4)
    assert timezone.localtime(fact.expires_at).strftime("%Y-%m-%dT%H:%M") == MOMENT

    # An episode's importance.
    episode = Episode.objects.get()
    page.goto(f"{live_server.url}/episodes/{episode.pk}/edit/")
    page.locator('input[name="importance"]').fill("0.85")
    page.locator("main form button[type=submit]").first.click()
    expect(page).to_have_url(re.compile(rf"/episodes/{episode.pk}/(\?done=[0-9]+)?$"))
    episode.refresh_from_db()
    assert episode.importance == pytest.approx(0.85)

    # A source's confidence thresholds on Calibration.
    page.goto(f"{live_server.url}/calibration/")
    source = page.locator(f'section.calibration-source[data-source="{world["token"]}"]')
    source.locator('input[name="write"]').fill("0.85")
    source.locator('input[name="pending"]').fill("0.6")
    source.locator("form.threshold-form button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"done="))
    limits = thresholds.for_source(world["token"])
    assert (limits.own_write, limits.own_pending) == (pytest.approx(0.85), pytest.approx(0.6))
    expect(source.locator('input[name="write"]')).to_have_value("0.85")


def filters(fact_pk):
    day, later = "2026-01-05", "2031-12-30"
    return [
        (
            "/facts/",
            "form.fact-filters",
            {
                "created_from": day,
                "created_to": later,
                "updated_from": day,
                "updated_to": later,
                "as_of": MOMENT,
            },
        ),
        (
            "/activity/",
            "main form.filters",
            {"fact": str(fact_pk), "date_from": day, "date_to": later},
        ),
        ("/traces/", "form.trace-filters", {"date_from": day, "date_to": later}),
        ("/episodes/", "form.episode-filters", {"time_from": day, "time_to": later}),
        ("/recalls/", "form.recall-filters", {"fact": str(fact_pk), "since": day, "until": later}),
        (f"/facts/{fact_pk}/", "form.as-of-form", {"as_of": MOMENT}),
        (
            "/debugger/?q=Rust",
            "main form:has(#id_q)",
            {
                "half_life": "12.5",
                "time_from": day,
                "time_to": later,
                "as_of": MOMENT,
                "limit": "7",
                "k": "40",
            },
        ),
    ]


HTMX_IDLE = (
    "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"
)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_filter_keeps_the_dates_and_numbers_it_was_given(page, live_server, world, language):
    in_language(page, live_server, language, "/")
    for path, form_selector, values in filters(world["fact"].pk):
        page.goto(f"{live_server.url}{path}")
        form = page.locator(form_selector)
        for name, value in values.items():
            # A date applied at once swaps the form in (htmx): fill the next one only in the
            # new form, or the value lands in the old one and is lost.
            page.wait_for_function(HTMX_IDLE)
            field = form.locator(f'[name="{name}"]')
            if not field.is_visible():  # a filter folded away under a <details>
                form.locator(f'details:has([name="{name}"]) > summary').click()
            applies_at_once = "change" in (form.get_attribute("hx-trigger") or "")
            field.fill(value)
            if applies_at_once and field.get_attribute("type") == "date":
                expect(page).to_have_url(re.compile(rf"[?&]{name}={value}"))  # htmx, on change
                page.wait_for_load_state("networkidle")
        form.locator("button[type=submit]").first.click()
        for name, value in values.items():  # the URL keeps the query: a view can be shared
            expect(page).to_have_url(re.compile(rf"[?&]{re.escape(urlencode({name: value}))}"))
        page.wait_for_load_state("networkidle")
        for name, value in values.items():
            expect(page.locator(form_selector).locator(f'[name="{name}"]')).to_have_value(value)
        assert page.locator(".error, .errorlist").count() == 0, (path, language)


@pytest.fixture
def indexed(world):
    index_items("fact", [world["fact"]])  # the debugger's check form needs a result
    yield world["fact"]
    with connection.cursor() as cur:  # flush() does not empty the virtual tables
        for table in ("search_fts", "search_vec", "search_vecf"):
            cur.execute(f"DELETE FROM {table}")


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_regression_check_keeps_its_number(page, live_server, indexed, language):
    in_language(page, live_server, language, "/debugger/?q=%E6%9D%AD%E5%B7%9E")
    form = page.locator("form:has(input[name=within])")
    expect(form.locator("input[name=must_include]")).to_have_value(str(indexed.pk))
    form.locator("input[name=within]").fill("7")
    form.locator("button[type=submit]").click()
    expect(page.locator("#checks table")).to_be_visible()
    assert RegressionCheck.objects.get().within == 7
