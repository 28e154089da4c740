"""Every model is in the admin, and its list and add pages render."""

import pytest
from django.apps import apps
from django.contrib import admin

MODELS = [m for app in ("curator", "retrieval") for m in apps.get_app_config(app).get_models()]


def test_every_model_is_registered():
    missing = [m.__name__ for m in MODELS if m not in admin.site._registry]
    assert missing == []


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_changelist_renders(client_in, model):
    url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    assert client_in.get(url).status_code == 200
