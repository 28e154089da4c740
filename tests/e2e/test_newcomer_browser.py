"""A newcomer's first hour, held: every page fits, reads Chinese in Chinese, and guides.

Visits every page of the navigation and the main detail pages (a fact, an episode, a
session, an attachment, a card, and the Agents page when there is one) at 1280 and 375 px.
In zh-hans: no page scrolls sideways and no English sentence shows outside the person's
content. In both languages: the navigation is one row at 1280 px. Screenshots of every
page in both languages land in tests/e2e/screenshots/newcomer/ for review.
"""

import json
import urllib.request

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from curator.models import Attachment, Episode, Fact, Owner, PendingItem, Session
from lifecycle import refresh
from lifecycle.demo import load_demo
from lifecycle.models import JobRun
from lifecycle.sessions import run_end
from memsite.core.tokens import create_token
from memsite.models import ApiToken
from tests.e2e.helpers import PASSWORD, USERNAME, log_in
from tests.e2e.pagecheck import (
    NAV_ROWS_JS,
    OVERFLOW_JS,
    VISIBLE_TEXT_JS,
    ascii_colons,
    content_corpus,
    english_runs,
)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
WIDTHS = (1280, 375)
NAV_PAGES = [
    "/",
    "/review/",
    "/facts/",
    "/episodes/",
    "/sessions/",
    "/cards/",
    "/activity/",
    "/debugger/",
    "/attachments/",
    "/jobs/",
    "/settings/",
    "/agents/",
]


@pytest.fixture
def memory(settings, tmp_path, monkeypatch):
    """The demo memory as a Chinese-speaking owner has it after a day: an ended session with
    its rules episode and job run, refreshed cards, a token."""
    settings.MEMORY_DIR = tmp_path / "memory"
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    load_demo(index=False)
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    Owner.objects.filter(key="global").update(language="zh-hans")
    open_session = Session.objects.filter(ended_at__isnull=True).first()
    run_end(open_session.pk, trigger="command")
    refresh.refresh(timezone.now(), False, {})
    create_token("chat assistant")
    return open_session


def detail_pages(session: Session) -> list[tuple[str, str]]:
    """(screenshot name, path): names stay the same from run to run, ids do not."""
    episode = Episode.objects.filter(session=session).first()
    active = Fact.objects.filter(status="active")
    pages = [
        ("fact", f"/facts/{active.order_by('pk').first().pk}/"),
        ("episode-rules", f"/episodes/{episode.pk}/"),
        ("episode-demo", f"/episodes/{Episode.objects.exclude(pk=episode.pk).first().pk}/"),
        ("session", f"/sessions/{session.pk}/"),
        ("turn", f"/turns/{session.turns.order_by('turn_index').first().pk}/"),
        ("attachment", f"/attachments/{Attachment.objects.first().pk}/"),
        ("card", "/cards/user/"),
        ("card-revisions", "/cards/scratchpad/revisions/"),
        ("card-metabolism", "/cards/metabolism/"),
        ("review-item", f"/review/{PendingItem.objects.order_by('pk').first().pk}/"),
        ("debugger-why-not", f"/debugger/?q=编辑器&why={active.order_by('-pk').first().pk}"),
        ("job-run", f"/jobs/runs/{JobRun.objects.first().run_id}/"),
        ("agent", f"/agents/{ApiToken.objects.first().pk}/"),
        ("traces", "/traces/?q=orchard"),
        ("onboarding", "/onboarding/"),
        ("not-found", "/no-such-page/"),
    ]
    return pages


def all_pages(session: Session) -> list[tuple[str, str]]:
    nav = [(path.strip("/") or "home", path) for path in NAV_PAGES]
    return nav + detail_pages(session)


def visit_all(browser, live_server, language, pages, folder, check):
    """Each page at each width: screenshot, then `check(page, path, width)`."""
    folder.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 800})
        context.add_cookies(
            [{"name": "django_language", "value": language, "url": live_server.url}]
        )
        page = context.new_page()
        log_in(page, live_server)
        for name, path in pages:
            page.goto(live_server.url + path)
            expect(page.locator("html")).to_have_attribute("lang", language)
            shot = folder / f"{name}-{language}-{width}.png"
            page.screenshot(path=str(shot), full_page=True)
            check(page, path, width)
        context.close()


def test_every_page_fits_and_reads_chinese(browser, live_server, memory, screenshot_dir):
    corpus = content_corpus()
    problems = []

    def check(page, path, width):
        if (over := page.evaluate(OVERFLOW_JS)) > 0:
            problems.append(f"{path} at {width} px scrolls sideways by {over} px")
        if width == 1280 and page.evaluate(NAV_ROWS_JS) != 1:
            problems.append(f"{path}: the navigation wraps at 1280 px")
        if width == 1280:  # the text is the same at both widths
            shown = page.evaluate(VISIBLE_TEXT_JS)
            problems.extend(f"{path}: {run}" for run in english_runs(shown["texts"], corpus))
            lines = shown["texts"] + shown["lines"]
            problems.extend(f"{path}: {c}" for c in ascii_colons(lines, corpus))

    visit_all(
        browser, live_server, "zh-hans", all_pages(memory), screenshot_dir / "newcomer", check
    )
    assert not problems, "\n".join(problems)


def test_every_page_fits_in_english_too(browser, live_server, memory, screenshot_dir):
    problems = []

    def check(page, path, width):
        if (over := page.evaluate(OVERFLOW_JS)) > 0:
            problems.append(f"{path} at {width} px scrolls sideways by {over} px")
        if width == 1280 and page.evaluate(NAV_ROWS_JS) != 1:
            problems.append(f"{path}: the navigation wraps at 1280 px")

    visit_all(browser, live_server, "en", all_pages(memory), screenshot_dir / "newcomer", check)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_fresh_chinese_install_guides_until_an_agent_has_called(browser, live_server, width):
    context = browser.new_context(viewport={"width": width, "height": 720}, locale="zh-CN")
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("button.primary")
    page.wait_for_url(live_server.url + "/")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")

    guide = page.locator("#getting-started")
    expect(guide).to_be_in_viewport()  # on the first screen, no scrolling
    connect = page.locator(".guide-step[data-step=connect]")
    expect(connect).to_have_attribute("data-done", "false")
    expect(connect).to_contain_text("连接智能体")

    _token, raw = create_token("chat assistant")
    page.reload()
    expect(connect).to_have_attribute("data-done", "false")  # a token is not a connection
    expect(connect.locator("pre")).to_contain_text("Authorization: Bearer")

    request = urllib.request.Request(
        live_server.url + "/api/v1/profile", headers={"Authorization": f"Bearer {raw}"}
    )
    with urllib.request.urlopen(request) as answer:
        assert json.load(answer) is not None
    page.reload()
    expect(connect).to_have_attribute("data-done", "true")
    context.close()


def test_an_unknown_address_shows_the_apps_404_in_both_languages(browser, live_server, memory):
    for language, heading in (("zh-hans", "这个地址没有内容"), ("en", "There is nothing at this")):
        context = browser.new_context()
        context.add_cookies(
            [{"name": "django_language", "value": language, "url": live_server.url}]
        )
        page = context.new_page()
        log_in(page, live_server)
        response = page.goto(live_server.url + "/no/such/page/")
        assert response.status == 404
        expect(page.locator("h1")).to_contain_text(heading)
        expect(page.locator("nav.nav a[href='/facts/']")).to_be_visible()
        context.close()
