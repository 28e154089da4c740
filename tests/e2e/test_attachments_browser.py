"""Attachments and episodes in a real browser: an image uploaded through the plain file input
is found by its description; a fact's provenance links lead to its turn, session and episode."""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from curator.models import ConversationTurn, Episode, Fact, Owner, Session
from tests.e2e.helpers import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


@pytest.fixture
def person():
    get_user_model().objects.create_superuser("li", "", "a long pass phrase 42")


def test_an_uploaded_image_is_found_by_its_description(
    page, live_server, person, tmp_path, screenshot_dir
):
    image = Path(tmp_path) / "cat.png"
    image.write_bytes(PNG)
    log_in(page, live_server, "/attachments/")
    page.set_input_files("#upload-form input[type=file]", str(image))
    page.fill("#upload-form textarea[name=description]", "一只橘猫")
    page.locator("#upload-form button.primary").click()
    expect(page.locator("h1")).to_have_text("cat.png")
    preview = page.locator("img.attachment-preview")
    expect(preview).to_be_visible()
    assert preview.evaluate("img => img.naturalWidth") == 1  # served by the protected view

    page.goto(f"{live_server.url}/attachments/")
    page.fill(".attachment-filters input[name=q]", "那张猫的照片")
    page.press(".attachment-filters input[name=q]", "Enter")
    rows = page.locator("table.attachments-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("cat.png")
    page.screenshot(path=str(screenshot_dir / "attachments-search.png"), full_page=True)


def test_a_fact_leads_to_its_turn_session_and_episode(page, live_server, person, screenshot_dir):
    owner = Owner.default()
    session = Session.objects.create(owner=owner, external_id="chat-orchard", title="orchard 排查")
    turn = ConversationTurn.objects.create(
        session=session, turn_index=0, role="user", content="orchard 跑在 4G 内存的机器上"
    )
    episode = Episode.objects.create(
        owner=owner,
        session=session,
        summary="排查 orchard 内存不足",
        action_nodes=[
            {"tool_name": "run_shell", "key_params": {"cmd": "free -m"}, "success": True}
        ],
    )
    turn.episode = episode
    turn.save()
    fact = Fact.objects.create(
        owner=owner, content="orchard 跑在 4G 内存的机器上", source_turn=turn
    )

    log_in(page, live_server, f"/facts/{fact.pk}/")
    provenance = page.locator("section#provenance")
    provenance.locator("a.prov-turn").click()
    expect(page.locator(f"#turn-{turn.pk}")).to_be_visible()
    page.go_back()
    provenance.locator("a.prov-session").click()
    page.wait_for_url(f"{live_server.url}/sessions/{session.pk}/")
    page.go_back()
    provenance.locator("a.prov-episode").click()
    page.wait_for_url(f"{live_server.url}/episodes/{episode.pk}/")
    expect(page.locator("h1")).to_have_text("排查 orchard 内存不足")
    expect(page.locator(".action-timeline")).to_contain_text("run_shell")
    expect(page.locator("#linked-facts")).to_contain_text("orchard 跑在 4G 内存的机器上")
    page.screenshot(path=str(screenshot_dir / "episode-detail.png"), full_page=True)
    page.locator("#episode-session").click()
    page.wait_for_url(f"{live_server.url}/sessions/{session.pk}/")
