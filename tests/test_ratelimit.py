"""The per-token rate limit holds across processes: every process serving one data directory
takes from the same bucket (memsite/ratelimit.py)."""

import concurrent.futures
import json
import logging
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from memsite.api.ratelimit import RateLimiter
from tests.test_serve import MANAGE, REPO, _start_serve, _wait_for_ready_line

LIMIT = 60


def _hit_many(path, key, per_minute, times, now) -> int:
    """How many of `times` requests one process lets through."""
    limiter = RateLimiter(path)
    return sum(limiter.hit(key, per_minute, now=now) == 0 for _ in range(times))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_processes_take_from_one_bucket_and_never_overshoot_it(tmp_path):
    path = tmp_path / "ratelimit.sqlite3"
    parent = RateLimiter(path)
    assert parent.hit(7, 150, now=0.0) == 0  # opened before the fork: children open their own
    pids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:  # a child reports its count in its exit code
            code = 255
            try:
                code = _hit_many(path, 7, 150, 100, now=0.0)
            finally:
                os._exit(code)
        pids.append(pid)
    allowed = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    # 1 + 400 requests at one instant: exactly the 150 the bucket holds get through.
    assert 1 + sum(allowed) == 150, allowed
    assert parent.hit(7, 150, now=0.0) == pytest.approx(60 / 150)


def test_threads_of_one_process_share_its_connection_safely(tmp_path):
    limiter = RateLimiter(tmp_path / "ratelimit.sqlite3")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        waits = list(pool.map(lambda _: limiter.hit(1, 50, now=0.0), range(200)))
    assert waits.count(0.0) == 50


def test_a_clock_that_steps_back_refills_nothing(tmp_path):
    limiter = RateLimiter(tmp_path / "ratelimit.sqlite3")
    for _ in range(60):
        assert limiter.hit(1, 60, now=1000.0) == 0
    assert limiter.hit(1, 60, now=500.0) == pytest.approx(1.0)
    assert limiter.hit(1, 60, now=501.0) == 0  # a second after the new time, one came back


def test_a_lower_limit_applies_to_a_full_bucket_at_once(tmp_path):
    limiter = RateLimiter(tmp_path / "ratelimit.sqlite3")
    assert limiter.hit(1, 600, now=0.0) == 0
    assert [limiter.hit(1, 3, now=1.0) == 0 for _ in range(4)] == [True, True, True, False]


def test_it_lets_requests_through_and_warns_once_when_the_file_is_unusable(tmp_path, caplog):
    limiter = RateLimiter(tmp_path)  # a directory: SQLite cannot open it
    with caplog.at_level(logging.WARNING, logger="memsite.api.ratelimit"):
        assert [limiter.hit(1, 1, now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert len(caplog.records) == 1
    assert "rate limit not applied" in caplog.records[0].getMessage()


# Two real servers on one data directory ------------------------------------------------------


@pytest.fixture(scope="module")
def shared_data(tmp_path_factory):
    """A migrated data directory, a token, and the environment both servers start with."""
    data_dir = tmp_path_factory.mktemp("ratelimit-data")
    env = {**os.environ, "MEMSITE_DATA_DIR": str(data_dir), "MEMSITE_HOST": "127.0.0.1"}
    env.update(MEMSITE_API_RATE_LIMIT=str(LIMIT), MEMSITE_WEB_THREADS="2")
    # Not pytest's tests.settings, which makes a new data directory in every process.
    env["DJANGO_SETTINGS_MODULE"] = "memsite.settings"
    env.pop("MEMSITE_PORT", None)
    env.pop("MEMSITE_WEB_PROCESSES", None)
    manage = [sys.executable, MANAGE]
    run = {"env": env, "cwd": REPO, "check": True, "capture_output": True, "text": True}
    subprocess.run([*manage, "migrate", "--noinput"], **run)
    created = subprocess.run([*manage, "api_token", "create", "--name", "busy agent"], **run)
    return env, created.stdout.strip().splitlines()[-1]


def _get(url, raw):
    request = urllib.request.Request(
        url + "api/v1/traces", headers={"Authorization": f"Bearer {raw}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="serve forks")
def test_two_server_processes_let_one_token_through_about_the_limit_not_twice(
    shared_data, tmp_path
):
    env, raw = shared_data
    servers = []
    try:
        for n in range(2):
            with (tmp_path / f"serve{n}.err").open("w") as stderr_file:
                servers.append(_start_serve(env, stderr_file, port=0))
        urls = [_wait_for_ready_line(proc)[0] for proc in servers]
        started = time.monotonic()
        # 80 requests to each: separate in-memory limits would let 2 x 60 through.
        answers = [(url, *_get(url, raw)) for _ in range(80) for url in urls]
        elapsed = time.monotonic() - started
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=30)
    allowed = [url for url, status, _, _ in answers if status == 200]
    refused = [(url, headers, body) for url, status, headers, body in answers if status == 429]
    assert len(allowed) + len(refused) == len(answers)
    # The bucket starts full and refills one request a second (60 a minute).
    assert LIMIT <= len(allowed) <= LIMIT + elapsed + 1, (len(allowed), elapsed)
    assert set(allowed) == set(urls) and {url for url, _, _ in refused} == set(urls)
    for _, headers, body in refused:
        assert json.loads(body)["code"] == "rate_limited"
        assert int(headers["Retry-After"]) >= 1
