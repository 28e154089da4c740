"""`manage.py serve` gives chat streams threads of their own: a stream holds its thread while
the model answers, and must neither wait behind pages and API calls nor take their threads."""

import threading
import time

from memsite.management.commands.serve import StreamLanes


def slow_app(environ, start_response):
    time.sleep(0.3)
    start_response("200 OK", [])
    return [b"done"]


def run(app, path, finished, name):
    app({"PATH_INFO": path}, lambda *a: None)
    finished.append((name, time.monotonic()))


def test_pages_and_api_calls_run_at_most_the_limit_at_once_and_streams_skip_the_queue():
    lanes = StreamLanes(slow_app, limit=1)
    finished = []
    started = time.monotonic()
    threads = [
        threading.Thread(target=run, args=(lanes, "/api/v1/search", finished, "api 1")),
        threading.Thread(target=run, args=(lanes, "/facts/", finished, "page")),
        threading.Thread(target=run, args=(lanes, "/llm/v1/chat/completions", finished, "chat")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    took = {name: at - started for name, at in finished}
    assert took["chat"] < 0.5  # beside the first API call, not after it
    assert max(took["api 1"], took["page"]) >= 0.55  # the second waited for the first
