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


def test_the_add_page_is_refused(client_in):
    assert client_in.get("/admin/curator/fact/add/").status_code == 403


def test_a_fact_cannot_be_edited_or_deleted_in_the_admin(client_in):
    from curator.models import Fact, MemoryEvent, Owner

    owner = Owner.default()
    fact = Fact.objects.create(owner=owner, content="喜欢喝茶")
    url = f"/admin/curator/fact/{fact.pk}/change/"
    page = client_in.get(url)
    assert page.status_code == 200 and b'name="_save"' not in page.content  # view only
    response = client_in.post(url, {"content": "喜欢喝咖啡", "owner": owner.pk})
    assert response.status_code == 403
    assert (
        client_in.post(f"/admin/curator/fact/{fact.pk}/delete/", {"post": "yes"}).status_code == 403
    )
    fact.refresh_from_db()
    assert fact.content == "喜欢喝茶" and not MemoryEvent.objects.exists()
