"""Getting started: each step ticks itself when it has really happened."""

import re

from curator.models import Owner, PendingItem, PendingReason
from curator.writepath import confirm_pending
from memsite.core.tokens import create_token, revoke_token
from tests.api_helpers import Api


def _steps(page: str) -> dict[str, bool]:
    found = re.findall(r'data-step="(\w+)" data-done="(true|false)"', page)
    return {key: done == "true" for key, done in found}


def _home(client) -> str:
    return client.get("/").content.decode()


def test_a_fresh_install_lists_every_step_as_not_done(client_in):
    page = _home(client_in)
    assert _steps(page) == {
        "onboarding": False,
        "connect": False,
        "review": False,
        "search": False,
    }
    # First in the page content, so it is on the first screen.
    assert page.index('id="getting-started"') < page.index('class="stats"')
    assert "/agents/" in page  # the connect step leads to the Agents page


def test_a_token_alone_does_not_connect_an_agent(client_in):
    create_token("chat assistant")
    page = _home(client_in)
    assert _steps(page)["connect"] is False
    assert "no agent has called the API" in page
    assert "Authorization: Bearer" in page  # the connection snippet


def test_an_agent_calling_the_api_ticks_connect(client_in, client, fresh_limits):
    token, raw = create_token("chat assistant")
    assert Api(client, raw).get("/profile").status_code == 200
    assert _steps(_home(client_in))["connect"] is True


def test_a_revoked_token_that_was_used_still_counts(client_in, client, fresh_limits):
    token, raw = create_token("old agent")
    Api(client, raw).get("/profile")
    revoke_token(token.pk)
    assert _steps(_home(client_in))["connect"] is True


def test_confirming_an_item_ticks_the_first_review(client_in):
    item = PendingItem.objects.create(
        owner=Owner.default(),
        candidate={"content": "Likes tea", "subject": "", "predicate": ""},
        confidence=0.7,
        reason=PendingReason.LOW_CONFIDENCE,
    )
    confirm_pending(item.pk, actor="person")
    assert _steps(_home(client_in))["review"] is True


def test_a_debugger_search_ticks_the_first_search(client_in):
    client_in.get("/debugger/")  # opening the page is not a search
    assert _steps(_home(client_in))["search"] is False
    client_in.get("/debugger/", {"q": "tea"})
    assert _steps(_home(client_in))["search"] is True


def _finish_everything(client_in, client):
    owner = Owner.default()
    owner.identity_confirmed = True
    owner.first_search_at = owner.created_at
    owner.save()
    _token, raw = create_token("agent")
    Api(client, raw).get("/profile")
    item = PendingItem.objects.create(
        owner=owner,
        candidate={"content": "Likes tea", "subject": "", "predicate": ""},
        confidence=0.7,
        reason=PendingReason.LOW_CONFIDENCE,
    )
    confirm_pending(item.pk, actor="person")


def test_the_panel_folds_away_when_all_is_done_and_settings_reopens_it(
    client_in, client, fresh_limits
):
    _finish_everything(client_in, client)
    assert 'id="getting-started"' not in _home(client_in)
    settings_page = client_in.get("/settings/").content.decode()
    assert "Show the getting-started guide again" in settings_page

    response = client_in.post("/settings/guide/", {"show": "1"})
    assert response["Location"] == "/"
    page = _home(client_in)
    assert 'id="getting-started"' in page and all(_steps(page).values())

    client_in.post("/settings/guide/", {"show": "0"})
    assert 'id="getting-started"' not in _home(client_in)


def test_the_panel_stays_while_a_step_is_missing_even_if_hidden(client_in):
    Owner.objects.update(show_guide=False)
    assert 'id="getting-started"' in _home(client_in)
