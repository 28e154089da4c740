"""The wizard through the Django client: steps, draft, errors in place, HTMX, confirm, reset."""

import pytest

from curator import cards, onboarding
from curator.models import Fact, Owner, Source

STEP1 = {
    "step": "1",
    "action": "next",
    "assistant_name": "十一",
    "positioning": "务实的工程搭档",
    "tone": "直接",
    "boundaries": "",
    "taboos": "<script>alert(1)</script>",
    "priorities": "",
}
STEP2 = {
    "step": "2",
    "action": "next",
    "address": "小李",
    "background": "后端工程师",
    "tech": "Python",
    "collaboration": "",
    "notes": "",
}
HX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def memory_dir(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    return settings.MEMORY_DIR


def _owner() -> Owner:
    return Owner.objects.get(key="global")


def test_the_home_page_leads_to_the_wizard_until_it_is_done(client_in):
    page = client_in.get("/").content.decode()
    assert 'href="/onboarding/"' in page
    client_in.post("/onboarding/", STEP1)
    client_in.post("/onboarding/", STEP2)
    client_in.post("/onboarding/", {"step": "3", "action": "confirm"})
    assert 'href="/onboarding/"' not in client_in.get("/").content.decode()


def test_step_one_shows_progress_and_the_default_name(client_in):
    page = client_in.get("/onboarding/").content.decode()
    assert 'aria-current="step"' in page and "Step 1 of 3" in page
    assert 'name="assistant_name" value="Shiyi"' in page
    assert "Example:" in page


def test_next_without_required_answers_shows_errors_in_place(client_in):
    response = client_in.post("/onboarding/", {**STEP1, "positioning": " "})
    page = response.content.decode()
    assert response.status_code == 200 and "Step 1 of 3" in page
    assert 'aria-invalid="true"' in page and "Please fill this in." in page
    assert "直接" in page  # what was typed stays


def test_next_redirects_and_the_draft_survives_a_reload(client_in):
    response = client_in.post("/onboarding/", STEP1)
    assert response.status_code == 302 and response["Location"] == "/onboarding/"
    page = client_in.get("/onboarding/").content.decode()
    assert "Step 2 of 3" in page
    assert onboarding.answers(_owner())["tone"] == "直接"


def test_back_keeps_what_was_typed_without_validating(client_in):
    client_in.post("/onboarding/", STEP1)
    client_in.post("/onboarding/", {**STEP2, "address": "", "action": "back"})
    page = client_in.get("/onboarding/").content.decode()
    assert "Step 1 of 3" in page and "务实的工程搭档" in page
    assert onboarding.answers(_owner())["background"] == "后端工程师"


def test_htmx_swaps_the_next_step_in_place(client_in):
    response = client_in.post("/onboarding/", STEP1, headers=HX)
    page = response.content.decode()
    assert response.status_code == 200 and "<html" not in page
    assert "Step 2 of 3" in page and 'name="address"' in page


def test_a_reached_step_can_be_opened_from_the_progress_bar(client_in):
    client_in.post("/onboarding/", STEP1)
    client_in.post("/onboarding/", STEP2)
    assert "Step 1 of 3" in client_in.get("/onboarding/?step=1").content.decode()
    onboarding.reset(_owner())
    assert "Step 1 of 3" in client_in.get("/onboarding/?step=3").content.decode()


def test_the_summary_shows_both_cards_rendered_and_escaped(client_in):
    client_in.post("/onboarding/", STEP1)
    page = client_in.post("/onboarding/", STEP2, follow=True).content.decode()
    assert "Step 3 of 3" in page
    assert "<h1>十一</h1>" in page and "<h1>小李</h1>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert 'value="confirm"' in page and "Go back and change" in page
    assert "system/ShiYi.md" in page and "shared/User.md" in page


def test_change_from_the_summary_opens_that_step(client_in):
    client_in.post("/onboarding/", STEP1)
    client_in.post("/onboarding/", STEP2)
    client_in.post("/onboarding/", {"step": "3", "action": "goto:2"})
    assert "Step 2 of 3" in client_in.get("/onboarding/").content.decode()


def test_confirm_saves_everything_and_the_wizard_never_shows_again(client_in, memory_dir):
    client_in.post("/onboarding/", STEP1)
    client_in.post("/onboarding/", STEP2)
    response = client_in.post("/onboarding/", {"step": "3", "action": "confirm"}, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    assert "Welcome, 小李!" in response.content.decode()
    owner = _owner()
    assert owner.identity_confirmed and owner.display_name == "小李"
    assert Fact.objects.filter(source=Source.ONBOARDING, verified=True).count() == 7
    assert (memory_dir / "system" / "ShiYi.md").exists()
    again = client_in.get("/onboarding/")
    assert again.status_code == 302 and again["Location"] == "/settings/"


def test_htmx_confirm_asks_for_a_full_page_redirect(client_in):
    client_in.post("/onboarding/", STEP1)
    client_in.post("/onboarding/", STEP2)
    response = client_in.post("/onboarding/", {"step": "3", "action": "confirm"}, headers=HX)
    assert response["HX-Redirect"] == "/"
    assert "Welcome" in client_in.get("/").content.decode()  # the message waited for the page


def test_a_failing_confirm_says_nothing_was_saved(client_in, monkeypatch):
    client_in.post("/onboarding/", STEP1)
    client_in.post("/onboarding/", STEP2)

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cards, "write_files", broken)
    page = client_in.post("/onboarding/", {"step": "3", "action": "confirm"}).content.decode()
    assert "Nothing was saved" in page and "No space left on device" in page
    assert not _owner().identity_confirmed and not Fact.objects.exists()


def test_confirm_with_a_missing_answer_returns_to_its_step(client_in):
    client_in.post("/onboarding/", STEP1)
    client_in.post("/onboarding/", STEP2)
    owner = _owner()
    onboarding.save_draft(owner, {"positioning": ""}, 3)
    page = client_in.post("/onboarding/", {"step": "3", "action": "confirm"}).content.decode()
    assert "Step 1 of 3" in page and "Please fill this in." in page
    assert not Fact.objects.exists()


def test_reset_from_settings_opens_the_wizard_again(client_in):
    client_in.post("/onboarding/", STEP1)
    client_in.post("/onboarding/", STEP2)
    client_in.post("/onboarding/", {"step": "3", "action": "confirm"})
    response = client_in.post("/settings/onboarding/reset/")
    assert response.status_code == 302 and response["Location"] == "/onboarding/"
    page = client_in.get("/onboarding/").content.decode()
    assert "Step 1 of 3" in page and "务实的工程搭档" in page
    assert 'href="/onboarding/"' in client_in.get("/").content.decode()
