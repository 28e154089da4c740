"""The demo walked page by page in both languages, as a person evaluating the product would
(issue 29): nothing the demo should fill is empty (agents, recalls, contradictions,
calibration, cards), no table is wider than its box at 1280 px, and Sessions, a session's
page and Jobs agree on how many turns wait for extraction. Screenshots of every page in
both languages land in tests/e2e/screenshots/demo-walk/.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator.models import (
    Attachment,
    Contradiction,
    Episode,
    Fact,
    PendingItem,
    Session,
)
from lifecycle.demo import load_demo
from lifecycle.demo_use import demo_agents
from retrieval.models import RecallLog
from tests.e2e.helpers import PASSWORD, USERNAME, log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
LANGUAGES = ("en", "zh-hans")
WIDTH = 1280

# Pages the demo fills, and what shows that it did: (name, path, selector, at least).
# Paths with an id are built from the demo's rows (see `pages`).
FILLED = [
    ("home", "/", "main", 1),
    ("review", "/review/", "ol.queue > li.item", 1),
    ("contradictions", "/review/contradictions/", "li.contradiction", 1),
    ("facts", "/facts/", "main table tbody tr", 10),
    ("episodes", "/episodes/", "main a[href^='/episodes/']", 1),
    ("sessions", "/sessions/", "table.sessions-table tbody tr", 2),
    ("cards", "/cards/", "tr[data-card]", 6),
    ("card-user", "/cards/user/", "#card-preview section.generated li", 5),
    ("card-memory", "/cards/memory/", "#card-preview section.generated li", 5),
    ("activity", "/activity/", "main li, main tbody tr", 10),
    ("attachments", "/attachments/", "main a[href^='/attachments/']", 2),
    ("agents", "/agents/", "#agent-list tr[data-agent]", 3),
    ("recalls", "/recalls/", "table.recalls-table tbody tr", 10),
    ("calibration", "/calibration/", "section.calibration-source", 3),
]
# Pages the demo need not fill (settings, tools), walked for width and screenshots only.
OTHER = [
    ("debugger", "/debugger/?q=orchard"),
    ("jobs", "/jobs/"),
    ("settings", "/settings/"),
    ("guardrails", "/settings/guardrails/"),
    ("blocked", "/settings/guardrails/blocked/"),
    ("import-history", "/settings/import-history/"),
    ("traces", "/traces/?q=orchard"),
    ("cards-injected", "/cards/injected/"),
    ("cards-metabolism", "/cards/metabolism/"),
    ("card-revisions", "/cards/user/revisions/"),
]

# Shown: rendered, and not inside a closed <details> (whose content still has a layout box).
SHOWN_JS = "el => el.getClientRects().length > 0 && !el.closest('details:not([open])')"
EMPTY_JS = f"""() => [...document.querySelectorAll('main .empty')]
  .filter({SHOWN_JS}).map(el => el.innerText.trim().slice(0, 80))"""
# A table wider than the box it sits in: cut off, or scrolling sideways inside a 1280 px page.
WIDE_TABLES_JS = f"""() => [...document.querySelectorAll('main table')]
  .filter({SHOWN_JS})
  .map(t => ({{table: t.className || t.id || 'table', width: Math.ceil(t.scrollWidth),
              box: t.parentElement.clientWidth}}))
  .filter(r => r.width > r.box + 1)"""
NONZERO_CELL_JS = """() => [...document.querySelectorAll('table.calibration-table td.num')]
  .some(td => parseInt(td.innerText, 10) > 0)"""


@pytest.fixture
def demo(settings, tmp_path, monkeypatch):
    """The demo as `make demo` leaves it (search index, recalls and cards included)."""
    settings.MEMORY_DIR = tmp_path / "memory"
    # Each fact's re-index after the load would only repeat the load's own index_all.
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    result = load_demo()
    assert result.loaded and result.counts["recalls"] > 0
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    return result


def detail_pages() -> list[tuple[str, str, str, int]]:
    """Pages of single rows the demo made, with what each must show."""
    recalled = Fact.objects.filter(access_count__gt=0).order_by("-access_count").first()
    chat = demo_agents().get(name="ShiYi 聊天助手")
    pages = [
        ("fact", f"/facts/{recalled.pk}/", "table.recall tbody tr", 1),
        ("agent", f"/agents/{chat.pk}/", "#recalls tr.recall", 1),
        ("recall", f"/recalls/{RecallLog.objects.first().pk}/", "main li, main tr", 1),
        ("episode", f"/episodes/{Episode.objects.first().pk}/", "main", 1),
        ("attachment", f"/attachments/{Attachment.objects.first().pk}/", "main", 1),
        (
            "review-item",
            f"/review/{PendingItem.objects.filter(status='pending').first().pk}/",
            "main form",
            1,
        ),
    ]
    for n, session in enumerate(Session.objects.order_by("started_at"), start=1):
        pages.append((f"session-{n}", f"/sessions/{session.pk}/", "li.turn", 8))
        turn = session.turns.order_by("turn_index").first()
        pages.append((f"turn-{n}", f"/turns/{turn.pk}/", "main", 1))
    return pages


def open_context(browser, live_server, language):
    context = browser.new_context(viewport={"width": WIDTH, "height": 900})
    context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page = context.new_page()
    log_in(page, live_server)
    return context, page


def visit(page, live_server, language, path):
    response = page.goto(live_server.url + path)
    assert response.status == 200, f"{path}: {response.status}"
    expect(page.locator("html")).to_have_attribute("lang", language)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_demo_fills_every_page_it_should(browser, live_server, demo, language, screenshot_dir):
    folder = screenshot_dir / "demo-walk"
    folder.mkdir(parents=True, exist_ok=True)
    context, page = open_context(browser, live_server, language)
    problems = []
    for name, path, selector, least in FILLED + detail_pages():
        visit(page, live_server, language, path)
        page.screenshot(path=str(folder / f"{name}-{language}.png"), full_page=True)
        if (found := page.locator(selector).count()) < least:
            problems.append(f"{path}: {found} × {selector!r}, the demo should show {least}+")
        problems += [f"{path}: empty: {text!r}" for text in page.evaluate(EMPTY_JS)]
        if name == "calibration" and not page.evaluate(NONZERO_CELL_JS):
            problems.append(f"{path}: every count is zero")
        if name == "cards":
            for key in ("user", "memory"):
                row = page.locator(f"tr[data-card={key}]").inner_text()
                if "empty" in row or "空" in row or "never" in row or "从未" in row:
                    problems.append(f"{path}: the {key} card reads {row!r}")
    for name, path in OTHER:
        visit(page, live_server, language, path)
        page.screenshot(path=str(folder / f"{name}-{language}.png"), full_page=True)
    context.close()
    assert Contradiction.objects.filter(status="open").exists()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_table_is_wider_than_its_box_at_1280_px(browser, live_server, demo, language):
    context, page = open_context(browser, live_server, language)
    problems = []
    paths = [path for _n, path, *_rest in FILLED + detail_pages()] + [p for _n, p in OTHER]
    for path in paths:
        visit(page, live_server, language, path)
        for wide in page.evaluate(WIDE_TABLES_JS):
            problems.append(
                f"{path}: table {wide['table']!r} is {wide['width']} px in a {wide['box']} px box"
            )
    context.close()
    assert not problems, "\n".join(problems)


NUMBER = DIGIT = re.compile(r"\d+")


def first_number(text: str) -> int:
    found = NUMBER.search(text)
    return int(found.group()) if found else 0


@pytest.mark.parametrize("language", LANGUAGES)
def test_sessions_a_session_and_jobs_agree_on_the_waiting_turns(
    browser, live_server, demo, language
):
    context, page = open_context(browser, live_server, language)
    visit(page, live_server, language, "/sessions/")
    listed = {}
    for session in Session.objects.all():
        badge = page.locator(f"#session-{session.pk} .badge").filter(has_text=DIGIT)
        listed[session.pk] = first_number(badge.inner_text()) if badge.count() else 0

    problems = []
    on_pages = {}
    for session in Session.objects.all():
        visit(page, live_server, language, f"/sessions/{session.pk}/")
        turns = page.locator("li.turn")
        waiting = turns.filter(has=page.locator(".turn-head .badge:not(.role)"))
        on_pages[session.pk] = waiting.count()
        for n in range(turns.count()):
            turn = turns.nth(n)
            said_nothing = turn.locator("[data-extraction=nothing]").count()
            said_waiting = turn.locator(".turn-head .badge:not(.role)").count()
            extracted = turn.locator(".turn-extracted").count()
            if extracted and (said_nothing or said_waiting):
                problems.append(
                    f"session {session.pk} turn {n + 1}: says it is waiting or extracted "
                    "nothing, and lists what was extracted from it"
                )
    visit(page, live_server, language, "/jobs/")
    jobs = int(page.locator("[data-count=unextracted]").inner_text())
    context.close()

    if listed != on_pages:
        problems.append(f"Sessions lists {listed} waiting turns, the session pages {on_pages}")
    if sum(listed.values()) != jobs:
        problems.append(f"Sessions lists {sum(listed.values())} waiting turns, Jobs {jobs}")
    assert not problems, "\n".join(problems)
