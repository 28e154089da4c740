"""Personal data in a real browser, in both languages: the chat-import preview says what would
go to review, the import holds the phone number and e-mail on the review desk (not in the
facts), and the Guardrails page shows the detectors sending to review."""

import json

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator.models import Fact, PendingItem
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def person():
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)


@pytest.fixture
def contacts(tmp_path):
    rows = [
        ("记住李雷的电话是13812345678", "2024-01-01T00:00:00Z"),
        ("My email address is li.lei@example.com", "2024-01-01T00:01:00Z"),
    ]
    path = tmp_path / "contacts.jsonl"
    lines = [
        json.dumps({"session_id": "c", "role": "user", "content": text, "timestamp": when},
                   ensure_ascii=False)
        for text, when in rows
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("language", "says", "detector"),
    [
        ("en", "will send memories drawn from 1 turn to review", "to review"),
        ("zh-hans", "送去审核", "待审阅"),
    ],
)
def test_an_import_with_contact_details_sends_them_to_review(
    page, live_server, person, contacts, screenshot_dir, language, says, detector
):
    log_in(page, live_server, "/settings/guardrails/")
    if language != "en":
        switch_language(page, language)
    expect(page.locator("tr[data-detector=phone]")).to_contain_text(detector)
    page.screenshot(path=str(screenshot_dir / f"guardrails-review-{language}.png"), full_page=True)

    page.goto(f"{live_server.url}/settings/import-history/")
    page.set_input_files("#history-upload input[type=file]", str(contacts))
    page.select_option("#history-upload select", "jsonl")
    page.locator("#history-upload button[type=submit]").click()
    guardrails = page.locator("#p-guardrails")
    expect(guardrails).to_contain_text(says)
    assert guardrails.locator("li.to-review").count() == 2  # the phone and the e-mail
    page.screenshot(path=str(screenshot_dir / f"import-preview-review-{language}.png"),
                    full_page=True)  # fmt: skip

    page.locator("#start-import").click()
    expect(page.locator(".import-status")).to_have_count(1)
    page.goto(f"{live_server.url}/review/")
    expect(page.locator("#main")).to_contain_text("13812345678")
    expect(page.locator("#main")).to_contain_text("li.lei@example.com")
    page.screenshot(path=str(screenshot_dir / f"review-personal-data-{language}.png"),
                    full_page=True)  # fmt: skip
    assert PendingItem.objects.filter(reason="personal_data").count() == 2
    assert not Fact.objects.filter(content__contains="13812345678").exists()
