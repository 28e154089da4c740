"""The Settings page: sections, and the onboarding reset that says what it changes."""

import pytest

from curator import onboarding
from curator.models import Owner

ANSWERS = {"assistant_name": "十一", "positioning": "搭档", "address": "小李", "tone": "直接"}


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"


def test_settings_has_an_onboarding_section(client_in):
    page = client_in.get("/settings/").content.decode()
    assert 'id="onboarding"' in page and "has not been done yet" in page
    assert 'href="/onboarding/"' in page


def test_settings_htmx_gets_the_partial(client_in):
    page = client_in.get("/settings/", headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in page and 'id="onboarding"' in page


def test_a_confirmed_onboarding_offers_a_reset(client_in):
    onboarding.submit(ANSWERS)
    page = client_in.get("/settings/").content.decode()
    assert "小李" in page and 'href="/settings/onboarding/reset/"' in page


def test_the_reset_confirmation_says_what_changes_and_what_stays(client_in):
    onboarding.submit(ANSWERS)
    page = client_in.get("/settings/onboarding/reset/").content.decode()
    assert "prefilled with your last answers" in page
    assert "The 4 facts from the onboarding stay active." in page
    assert "ShiYi.md, User.md" in page
    assert "stay in the revisions" in page
    assert Owner.default().identity_confirmed  # looking is not resetting


def test_reset_needs_a_post(client_in):
    onboarding.submit(ANSWERS)
    client_in.get("/settings/onboarding/reset/")
    assert Owner.default().identity_confirmed
    assert client_in.put("/settings/onboarding/reset/").status_code == 405


def test_a_draft_in_progress_can_be_started_over(client_in):
    owner = Owner.default()
    onboarding.save_draft(owner, {"tone": "calm"}, 2)
    page = client_in.get("/settings/").content.decode()
    assert "in progress" in page and "Start over" in page
    confirm = client_in.get("/settings/onboarding/reset/").content.decode()
    assert "draft answers are cleared" in confirm
    client_in.post("/settings/onboarding/reset/")
    owner.refresh_from_db()
    assert onboarding.current_step(owner) == 1 and onboarding.answers(owner)["tone"] == ""
