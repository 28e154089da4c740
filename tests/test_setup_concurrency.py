"""Concurrent first-run submissions, as real HTTP requests against a live server."""

import http.cookiejar
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from memsite.web.accounts import SetupForm

SUBMISSIONS = 8


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # the 302 itself is the answer we look at


def _submit(base: str, username: str) -> str:
    """GET /setup/ for a CSRF cookie, then POST the form; the redirect's target."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
    opener.open(base + "/setup/", timeout=20).read()
    token = next(c.value for c in jar if c.name == "csrftoken")
    body = urllib.parse.urlencode(
        {
            "username": username,
            "password1": "a long pass phrase 42",
            "password2": "a long pass phrase 42",
            "csrfmiddlewaretoken": token,
        }
    ).encode()
    try:
        opener.open(base + "/setup/", data=body, timeout=20)
    except urllib.error.HTTPError as exc:
        return exc.headers.get("Location", str(exc.code))
    return "200"  # the form again: not expected here


@pytest.mark.django_db(transaction=True)
def test_eight_concurrent_first_run_submissions_create_exactly_one_account(
    live_server, monkeypatch
):
    # Every request passes the page's first "no user yet?" check before any creates the
    # account: they all wait for each other in the form's validation (a barrier), which is
    # what a slow password hash does to real concurrent submissions.
    barrier = threading.Barrier(SUBMISSIONS, timeout=10)
    clean = SetupForm.clean

    def clean_together(self):
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass
        return clean(self)

    monkeypatch.setattr(SetupForm, "clean", clean_together)
    results = [None] * SUBMISSIONS

    def run(i):
        results[i] = _submit(live_server.url, f"owner{i}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(SUBMISSIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert get_user_model().objects.count() == 1
    # the winner goes home, logged in; every other submission is sent to the login page
    assert sorted(results) == [reverse("home")] + [reverse("login")] * (SUBMISSIONS - 1)
