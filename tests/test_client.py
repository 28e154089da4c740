"""memsite.client.MemoryClient against the live app: each method does what its endpoint does,
errors carry the API's code, and busy answers are retried after their Retry-After."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from curator.models import ConversationTurn, Fact, PendingItem
from memsite.api.ratelimit import limiter
from memsite.client import MemoryClient, MemoryCuratorError
from memsite.core import agents
from memsite.core.tokens import create_token
from memsite.models import TokenScope

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def memory(live_server):
    limiter.reset()
    token, raw = create_token("python agent")
    client = MemoryClient(live_server.url, token=raw)
    client.agent = token
    return client


def test_it_records_turns_and_reads_them_back_in_the_context(memory):
    first = memory.record_turn("py-1", 0, "user", "我在学 Rust")
    assert first["turn_index"] == 0
    assert memory.record_turn("py-1", 0, "user", "我在学 Rust")["id"] == first["id"]  # retry
    assert "我在学 Rust" in memory.context("继续", session_id="py-1")["text"]
    assert ConversationTurn.objects.get().agent == memory.agent
    assert memory.end_session("py-1")["job_id"]


def test_remember_search_pending_and_confirm(memory):
    written = memory.remember("住在杭州西湖区", confidence=0.95, subject="user", predicate="home")
    assert written["outcome"] == "written"
    found = memory.search("杭州", kinds=["fact"])["results"]
    assert found[0]["id"] == written["fact"]["id"]
    unsure = memory.remember("可能养了一只猫", confidence=0.7)
    assert unsure["outcome"] == "pending"
    waiting = memory.pending()["items"]
    assert [i["id"] for i in waiting] == [unsure["pending"]["id"]]
    confirmed = memory.confirm(unsure["pending"]["id"])
    assert confirmed["fact"]["verified"] is True


def test_forget_files_a_request(memory):
    fact = memory.remember("住在杭州西湖区", confidence=0.95)["fact"]
    assert memory.forget(fact["id"], "搬家了")["outcome"] == "pending"
    assert Fact.objects.get().status == "active"
    assert PendingItem.objects.get().reason == "deletion"


def test_a_refusal_raises_with_the_apis_code(memory, live_server):
    agents.set_paused(memory.agent, writes=True)
    with pytest.raises(MemoryCuratorError) as refused:
        memory.record_turn("py-1", 0, "user", "hi")
    assert refused.value.status == 423 and refused.value.code == "agent_paused"
    _token, raw = create_token("reader", TokenScope.READ)
    with pytest.raises(MemoryCuratorError) as read_only:
        MemoryClient(live_server.url, token=raw).remember("x", confidence=0.95)
    assert read_only.value.code == "read_only_token"
    with pytest.raises(MemoryCuratorError) as invalid:
        MemoryClient(live_server.url, token=raw).search("")
    assert invalid.value.status == 422 and "query" in invalid.value.fields


class Busy(BaseHTTPRequestHandler):
    """Answers 503 with Retry-After: 0 `failures` times, then 201."""

    failures = 2
    seen = 0

    def do_POST(self):  # noqa: N802 (the stdlib's name)
        type(self).seen += 1
        self.rfile.read(int(self.headers["Content-Length"]))
        busy = type(self).seen <= type(self).failures
        body = {"detail": "busy", "code": "database_busy"} if busy else {"id": 1}
        data = json.dumps(body).encode()
        self.send_response(503 if busy else 201)
        if busy:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_busy_answers_are_retried_after_retry_after():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = MemoryClient(f"http://127.0.0.1:{server.server_address[1]}", token="t")
        assert client.record_turn("s", 0, "user", "hi") == {"id": 1}
        assert Busy.seen == 3
        Busy.seen, Busy.failures = 0, 10
        with pytest.raises(MemoryCuratorError, match="database_busy"):
            client.record_turn("s", 0, "user", "hi")
        assert Busy.seen == client.retries + 1
    finally:
        server.shutdown()
        server.server_close()
