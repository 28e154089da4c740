import pytest
from django.contrib.auth import get_user_model

from tests.api_helpers import anon_api, api, fresh_limits, read_api  # noqa: F401  (API fixtures)


@pytest.fixture
def owner_user(db):
    return get_user_model().objects.create_superuser("li", "", "correct horse battery")


@pytest.fixture
def client_in(client, owner_user):
    """A browser-like client logged in as the owner account."""
    client.force_login(owner_user)
    return client
