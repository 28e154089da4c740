import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import translation
from huey.contrib.djhuey import HUEY

from tests.api_helpers import anon_api, api, fresh_limits, read_api  # noqa: F401  (API fixtures)
from tests.fake_openai import fake_openai  # noqa: F401  (a fake OpenAI-compatible server)
from tests.queue_helpers import live_queue  # noqa: F401  (an empty queue, short card delay)


@pytest.fixture
def owner_user(db):
    return get_user_model().objects.create_superuser("li", "", "correct horse battery")


@pytest.fixture
def client_in(client, owner_user):
    """A browser-like client logged in as the owner account."""
    client.force_login(owner_user)
    return client


@pytest.fixture(autouse=True)
def _default_language():
    """Each test starts in the default language: a request in Chinese activates it for the
    thread (LocaleMiddleware never deactivates), which would leak into the next test."""
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture(autouse=True)
def _empty_queue():
    """Each test starts with an empty job queue: a refresh a test scheduled for later (live
    cards coalesce a few seconds) must not wait in the schedule of the next one."""
    yield
    HUEY.flush()


@pytest.fixture
def chinese_client(client_in):
    """The logged-in client asking for Simplified Chinese pages. Afterwards the thread's
    language goes back to the default: LocaleMiddleware leaves the last request's active."""
    from django.utils import translation

    client_in.cookies["django_language"] = "zh-hans"
    yield client_in
    translation.deactivate()


def pytest_collection_modifyitems(config, items):
    """Browser tests run last: Playwright's sync API keeps an event loop running in the main
    thread until the session ends, and code that calls async_to_sync there (the MCP endpoint,
    the proxy's async client) refuses to run inside a running loop."""
    items.sort(key=lambda item: "/e2e/" in str(item.path).replace("\\", "/"))
