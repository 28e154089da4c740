import pytest
from django.contrib.auth import get_user_model

from tests.api_helpers import anon_api, api, fresh_limits, read_api  # noqa: F401  (API fixtures)
from tests.fake_openai import fake_openai  # noqa: F401  (a fake OpenAI-compatible server)


@pytest.fixture
def owner_user(db):
    return get_user_model().objects.create_superuser("li", "", "correct horse battery")


@pytest.fixture
def client_in(client, owner_user):
    """A browser-like client logged in as the owner account."""
    client.force_login(owner_user)
    return client


@pytest.fixture
def chinese_client(client_in):
    """The logged-in client asking for Simplified Chinese pages. Afterwards the thread's
    language goes back to the default: LocaleMiddleware leaves the last request's active."""
    from django.utils import translation

    client_in.cookies["django_language"] = "zh-hans"
    yield client_in
    translation.deactivate()
