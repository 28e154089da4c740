"""A person edits User.md while the live refresh rewrites it: confirming a fact on the review
desk refreshes the card in the background, and the person's save (a new section at the
end, Ctrl+S) keeps both, with a message saying so instead of the conflict page."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from curator import cards
from curator.models import CardAuthor, Fact, Owner
from curator.writepath import PENDING, Candidate, propose
from lifecycle import refresh
from tests.e2e.helpers import PASSWORD, USERNAME, log_in
from tests.queue_helpers import run_scheduled

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
NOTES = "## Notes\n\n- 周五下午不开会"


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    return settings.MEMORY_DIR


@pytest.fixture
def card_and_item(live_queue, monkeypatch):
    """User.md with its generated section, and a preference waiting on the review desk."""
    monkeypatch.setattr("lifecycle.tasks.index_item", lambda kind, object_id: None)
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    owner = Owner.default()
    cards.save("user", "# User.md\n\nLi Lei, backend engineer.\n", CardAuthor.PERSON)
    Fact.objects.create(owner=owner, scope="user", type="preference", content="Prefers pytest")
    refresh.refresh_cards(timezone.now(), {}, note="live_refresh")
    candidate = Candidate(
        content="偏好简洁的中文回答",
        subject="李雷",
        predicate="回答风格",
        type="preference",
        priority="permanent",
        confidence=0.7,
        source="llm",
    )
    result = propose(candidate, actor="job", owner=owner)
    assert result.outcome == PENDING
    return result.pending


def test_a_save_after_the_live_refresh_keeps_both(page, live_server, card_and_item, screenshot_dir):
    log_in(page, live_server, "/cards/user/")
    opened = page.input_value("#id_content")
    assert "Prefers pytest" in opened and "偏好简洁的中文回答" not in opened

    desk = page.context.new_page()  # the review desk in a second tab
    desk.goto(live_server.url + "/review/")
    confirm = reverse("review_confirm", args=[card_and_item.pk])
    desk.locator(f"form[action='{confirm}'] button[type=submit]").first.click()
    expect(desk.locator("li.item.done")).to_have_count(1)
    assert "refresh_cards" in run_scheduled()  # the live refresh, seconds later
    assert "偏好简洁的中文回答" in cards.read("user")

    editor = page.locator("#id_content")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("\n" + NOTES + "\n")
    page.keyboard.press("Control+s")

    message = page.locator(".message.success")
    expect(message).to_contain_text("merged")
    expect(message).to_contain_text("the live refresh")
    assert page.locator("#conflict").count() == 0
    text = cards.read("user")
    assert "偏好简洁的中文回答" in text and "Prefers pytest" in text
    assert text.rstrip().endswith(NOTES)
    assert "偏好简洁的中文回答" in page.input_value("#id_content")  # the editor shows both
    page.screenshot(path=str(screenshot_dir / "cards-merged-refresh-en.png"), full_page=True)
