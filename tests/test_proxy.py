"""The chat proxy (/llm/v1): the real `openai` client against the live app, which forwards to
the fake OpenAI-compatible upstream (tests/fake_openai.py). What a person relies on: the
memory reaches the model, the conversation is recorded once, and the chat keeps working when
the curator's part cannot (docs/proxy.md)."""

import asyncio
import http.client
import json
import logging
import time
from urllib.parse import urlsplit

import openai
import pytest
from django.db import OperationalError
from django.test import override_settings
from openai import AsyncOpenAI, OpenAI

from curator.models import ConversationTurn, Fact, Owner, Session
from memsite.api.ratelimit import limiter
from memsite.core import agents
from memsite.core.tokens import create_token, revoke_token
from memsite.models import ProxyExchange, TokenScope
from memsite.proxy import upstream as upstreams
from retrieval import context as contexts
from tests.fake_openai import FakeOpenAI
from tests.queue_helpers import run_scheduled
from tests.search_helpers import fact

pytestmark = pytest.mark.django_db(transaction=True)
UPSTREAM_KEY = "sk-upstream-0123456789-abcd"


@pytest.fixture
def proxy(live_server, fake_openai):
    """The default upstream is the fake server; returns (an agent, its token, the proxy URL)."""
    limiter.reset()
    upstreams.save(None, base_url=fake_openai.base_url, api_key=UPSTREAM_KEY, model_map="")
    agent, raw = create_token("chat client")
    return agent, raw, live_server.url + "/llm/v1"


def client(proxy, **kwargs) -> OpenAI:
    _agent, raw, url = proxy
    return OpenAI(base_url=url, api_key=kwargs.pop("api_key", raw), max_retries=0, **kwargs)


def chats(fake) -> list[dict]:
    return [r for r in fake.requests if r["path"].endswith("/chat/completions")]


def turns_of(key: str) -> list[tuple]:
    found = ConversationTurn.objects.filter(session__external_id=key).order_by("turn_index")
    return [(t.turn_index, t.role, t.content) for t in found]


def wait_for(condition, seconds: float = 10.0):
    """Streams are recorded once they have gone to the client: poll briefly."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    return condition()


# -- the acceptance ------------------------------------------------------------------------------


def test_an_allergy_told_in_one_chat_reaches_the_upstream_in_the_next(
    proxy, fake_openai, live_queue
):
    chat = client(proxy)
    fake_openai.chat_replies = ["好的，我记住了。", "推荐番茄炒蛋。"]
    chat.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "我对花生过敏"}]
    )
    assert Fact.objects.filter(content__contains="花生").exists()
    run_scheduled()  # what the consumer does next: the user card now says it

    reply = chat.chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "推荐一道菜"}]
    )

    assert reply.parse().choices[0].message.content == "推荐番茄炒蛋。"
    sent = chats(fake_openai)[-1]["body"]["messages"]
    assert sent[0]["role"] == "system" and "花生" in sent[0]["content"]
    assert sent[1:] == [{"role": "user", "content": "推荐一道菜"}]
    assert int(reply.headers["X-Memory-Context-Tokens"]) > 0
    exchange = ProxyExchange.objects.get(uid=reply.headers["X-Memory-Recall-Id"])
    assert "花生" in exchange.context["text"]


# -- the clients ---------------------------------------------------------------------------------


def test_sync_async_and_streaming_clients_get_the_upstreams_answer(proxy, fake_openai):
    fake_openai.chat_replies = ["one", "two", "three streamed"]
    question = [{"role": "user", "content": "hello"}]
    sync = client(proxy).chat.completions.create(model="fake-model", messages=question)

    async def ask():
        _agent, raw, url = proxy
        async with AsyncOpenAI(base_url=url, api_key=raw, max_retries=0) as chat:
            return await chat.chat.completions.create(model="fake-model", messages=question)

    asynchronous = asyncio.run(ask())
    streamed = client(proxy).chat.completions.create(
        model="fake-model", messages=question, stream=True
    )
    pieces = [c.choices[0].delta.content for c in streamed if c.choices and c.choices[0].delta]

    assert sync.choices[0].message.content == "one"
    assert asynchronous.choices[0].message.content == "two"
    assert "".join(p for p in pieces if p) == "three streamed"
    assert len([p for p in pieces if p]) > 1  # chunk by chunk, as the upstream sent them


def test_tools_and_tool_results_pass_through_unchanged_and_are_recorded(proxy, fake_openai):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "The weather in a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    fake_openai.chat_replies = [{"content": None, "tool_calls": [call]}, "It is sunny in Hangzhou."]
    chat = client(proxy)
    first = chat.chat.completions.create(
        model="fake-model", tools=tools, messages=[{"role": "user", "content": "Weather?"}]
    )
    calls = first.choices[0].message.tool_calls
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in calls]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "sunny"}'},
    ]
    second = chat.chat.completions.create(
        model="fake-model", tools=tools, messages=history, stream=True
    )
    answer = "".join(c.choices[0].delta.content or "" for c in second if c.choices)

    assert calls[0].function.name == "weather" and answer == "It is sunny in Hangzhou."
    sent = chats(fake_openai)[-1]["body"]
    assert sent["tools"] == tools
    assert [m["role"] for m in sent["messages"] if m["role"] != "system"] == [
        "user",
        "assistant",
        "tool",
    ]
    assert sent["messages"][-1]["tool_call_id"] == "call_1"
    key = ProxyExchange.objects.order_by("-id").first().session_key
    rows = wait_for(lambda: len(turns_of(key)) == 4 and turns_of(key))
    assert [r[1] for r in rows] == ["user", "assistant", "tool", "assistant"]
    stored = ConversationTurn.objects.filter(session__external_id=key).order_by("turn_index")
    assert stored[1].tool_calls[0]["function"]["name"] == "weather"
    assert stored[2].tool_results == [{"tool_call_id": "call_1"}]
    assert stored[2].content == '{"sky": "sunny"}'


# -- recording -----------------------------------------------------------------------------------


def test_turns_are_recorded_once_however_often_the_history_is_resent(proxy, fake_openai):
    chat = client(proxy)
    history = []
    for i, reply in enumerate(["A0", "A1", "A2"]):
        fake_openai.chat_replies = [reply]
        history.append({"role": "user", "content": f"question {i}"})
        answer = chat.chat.completions.create(model="fake-model", messages=history)
        history.append({"role": "assistant", "content": answer.choices[0].message.content})
    fake_openai.chat_replies = ["A2 again"]
    chat.chat.completions.create(model="fake-model", messages=history[:-1])  # a retry

    sessions = Session.objects.exclude(external_id__contains="~")
    assert sessions.count() == 1
    assert turns_of(sessions.get().external_id) == [
        (0, "user", "question 0"),
        (1, "assistant", "A0"),
        (2, "user", "question 1"),
        (3, "assistant", "A1"),
        (4, "user", "question 2"),
        (5, "assistant", "A2"),
    ]
    # The regenerated answer parted from the recorded one: it went to a fork, counted from there.
    fork = Session.objects.filter(external_id__startswith=sessions.get().external_id + "~")
    assert [(t.turn_index, t.content) for t in fork.get().turns.order_by("turn_index")] == [
        (0, "A2 again")
    ]


def test_the_x_memory_session_header_names_the_conversation(proxy, fake_openai):
    agent, _raw, _url = proxy
    chat = client(proxy, default_headers={"X-Memory-Session": "kitchen chat"})
    fake_openai.chat_replies = ["yes"]
    reply = chat.chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.headers["X-Memory-Session"] == f"llm:{agent.pk}:kitchen chat"
    assert turns_of(f"llm:{agent.pk}:kitchen chat") == [(0, "user", "hi"), (1, "assistant", "yes")]


def test_a_stream_cut_by_the_client_leaves_a_partial_answer(proxy, fake_openai, client_in):
    _agent, raw, url = proxy
    fake_openai.chat_replies = ["x" * 400]
    fake_openai.chunk_interval = 0.05  # 100 chunks: five seconds when read to the end
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    body = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    conn.request(
        "POST",
        parts.path + "/chat/completions",
        json.dumps(body),
        {"Authorization": f"Bearer {raw}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    key = response.getheader("X-Memory-Session")
    assert response.status == 200 and response.read1(100)
    response.close()  # the person closed the chat window
    conn.close()

    answer = wait_for(lambda: ConversationTurn.objects.filter(role="assistant").first())
    assert answer is not None and answer.partial
    assert 0 < len(answer.content) < 400
    assert turns_of(key)[0] == (0, "user", "go")
    assert wait_for(lambda: ProxyExchange.objects.filter(session_key=key, partial=True).exists())
    page = client_in.get(f"/sessions/{answer.session_id}/").content.decode()
    assert "data-partial" in page  # the person sees the answer was cut off


# -- rights and pauses ---------------------------------------------------------------------------


def test_a_paused_agent_still_gets_its_answer_and_nothing_is_recorded(proxy, fake_openai):
    agent, _raw, _url = proxy
    agents.set_paused(agent, writes=True)
    fake_openai.chat_replies = ["still here"]
    reply = client(proxy).chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "我对花生过敏"}]
    )
    assert reply.parse().choices[0].message.content == "still here"
    assert reply.headers["X-Memory-Recording"] == "agent_paused"
    assert not ConversationTurn.objects.exists()

    agents.set_paused(agent, writes=True, reads=True)
    fake_openai.chat_replies = ["still here"]
    reply = client(proxy).chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.headers["X-Memory-Status"] == "paused"
    assert reply.headers["X-Memory-Context-Tokens"] == "0"
    assert chats(fake_openai)[-1]["body"]["messages"] == [{"role": "user", "content": "hi"}]


def test_the_persons_global_pause_keeps_chats_working_and_records_nothing(proxy, fake_openai):
    agents.set_writes_paused(True)
    fake_openai.chat_replies = ["ok"]
    reply = client(proxy).chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "hello"}]
    )
    assert reply.headers["X-Memory-Recording"] == "memory_paused"
    assert not ConversationTurn.objects.exists()


def test_a_read_only_token_chats_with_memory_and_records_nothing(proxy, fake_openai):
    _token, raw = create_token("reader", TokenScope.READ)
    fake_openai.chat_replies = ["ok"]
    reply = client(proxy, api_key=raw).chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "hello"}]
    )
    assert reply.headers["X-Memory-Recording"] == "read_only_token"
    assert reply.headers["X-Memory-Status"] == "ok"
    assert not ConversationTurn.objects.exists()


@pytest.mark.parametrize("key", ["", "mc_wrong", "revoked"])
def test_a_missing_wrong_or_revoked_token_gets_401_and_nothing_is_recorded(proxy, fake_openai, key):
    if key == "revoked":
        token, key = create_token("gone")
        revoke_token(token.pk)
    with pytest.raises(openai.AuthenticationError) as caught:
        client(proxy, api_key=key or "x").chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hello"}]
        )
    assert caught.value.status_code == 401
    assert caught.value.body["code"] == "invalid_api_key"
    assert not chats(fake_openai) and not ConversationTurn.objects.exists()


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("{not json", "not valid JSON"),
        ('{"messages": [{"role": "user", "content": "x"}]}', "'model'"),
        ('{"model": "m", "messages": []}', "'messages'"),
        ('{"model": "m", "messages": ["hi"]}', "messages[0]"),
        ("[1, 2]", "JSON object"),
    ],
)
def test_a_request_the_proxy_cannot_read_gets_an_openai_shaped_400(proxy, fake_openai, body, named):
    _agent, raw, url = proxy
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request(
        "POST",
        parts.path + "/chat/completions",
        body.encode(),
        {"Authorization": f"Bearer {raw}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    error = json.loads(response.read())["error"]
    assert response.status == 400
    assert named in error["message"] and error["type"] == "invalid_request_error"
    assert not chats(fake_openai)


def test_a_killed_upstream_gives_an_openai_shaped_502_naming_it(proxy, fake_openai):
    address = fake_openai.base_url
    fake_openai.stop()
    for stream in (False, True):
        with pytest.raises(openai.APIStatusError) as caught:
            client(proxy).chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": "hello"}], stream=stream
            )
        assert caught.value.status_code == 502
        assert address in caught.value.body["message"]
        assert caught.value.body["code"] == "upstream_unreachable"
    assert not ConversationTurn.objects.exists()


def test_upstream_errors_come_back_with_their_status_and_an_openai_shaped_body(proxy, fake_openai):
    fake_openai.fail_next(
        429, body={"error": {"message": "slow down", "type": "rate_limit", "code": "rate"}}
    )
    fake_openai.fail_next(500, body={"oops": True})
    with pytest.raises(openai.RateLimitError) as limited:
        client(proxy).chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hello"}]
        )
    with pytest.raises(openai.InternalServerError) as broken:
        client(proxy).chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hello"}], stream=True
        )
    assert limited.value.body["message"] == "slow down" and limited.value.body["code"] == "rate"
    assert broken.value.status_code == 500 and "500" in broken.value.body["message"]


def test_when_the_curator_fails_the_chat_goes_on_without_memory(proxy, fake_openai, monkeypatch):
    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(contexts, "assemble", locked)
    fake_openai.chat_replies = ["answered anyway"]
    reply = client(proxy).chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "hello"}]
    )
    assert reply.parse().choices[0].message.content == "answered anyway"
    assert reply.headers["X-Memory-Status"] == "degraded"
    assert chats(fake_openai)[-1]["body"]["messages"] == [{"role": "user", "content": "hello"}]


def test_no_upstream_configured_gives_503_saying_how_to_set_one(live_server):
    limiter.reset()
    _agent, raw = create_token("early")
    chat = OpenAI(base_url=live_server.url + "/llm/v1", api_key=raw, max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 503
    assert "MEMSITE_PROXY_UPSTREAM_URL" in caught.value.body["message"]


# -- the upstream and its secret -----------------------------------------------------------------


def test_only_the_upstream_key_reaches_the_upstream_never_the_curator_token(
    proxy, fake_openai, caplog
):
    _agent, raw, _url = proxy
    caplog.set_level(logging.DEBUG)
    fake_openai.chat_replies = ["ok"]
    client(proxy).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hello"}]
    )
    sent = chats(fake_openai)[-1]
    assert sent["headers"]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert raw not in json.dumps(sent)
    assert UPSTREAM_KEY not in caplog.text and raw not in caplog.text


def test_the_upstream_key_is_never_shown_in_full_on_settings(proxy, client_in):
    page = client_in.get("/settings/").content.decode()
    assert UPSTREAM_KEY not in page and "…abcd" in page
    client_in.post(
        "/settings/chat-proxy/",
        {"agent": "", "base_url": upstreams.default_row().base_url, "api_key": "", "model_map": ""},
    )
    assert upstreams.default_row().api_key == UPSTREAM_KEY  # an empty field keeps the key


def test_model_mapping_merged_placement_and_the_models_list(proxy, fake_openai, client_in):
    fake_openai.models = ["qwen-14b"]
    client_in.post(
        "/settings/chat-proxy/",
        {
            "agent": "",
            "base_url": fake_openai.base_url,
            "model_map": "gpt-4o = qwen-14b",
            "placement": "merged",
            "context_tokens": "800",
        },
    )
    fact(Owner.default(), "The person is allergic to peanuts.", predicate="allergy")
    fake_openai.chat_replies = ["ok"]
    chat = client(proxy)
    chat.chat.completions.create(
        model="gpt-4o",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Are peanuts allergic food for me?"},
        ],
    )
    sent = chats(fake_openai)[-1]["body"]
    assert sent["model"] == "qwen-14b"
    systems = [m for m in sent["messages"] if m["role"] == "system"]
    assert len(systems) == 1 and systems[0]["content"].endswith("Be brief.")
    assert "peanuts" in systems[0]["content"]
    assert sorted(m.id for m in chat.models.list()) == ["gpt-4o", "qwen-14b"]


def test_an_agent_can_have_its_own_upstream(proxy, fake_openai):
    agent, _raw, _url = proxy
    own = FakeOpenAI().start()
    try:
        upstreams.save(agent, base_url=own.base_url, api_key="sk-own", model_map="")
        own.chat_replies = ["from my own upstream"]
        reply = client(proxy).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content == "from my own upstream"
        assert own.requests[-1]["headers"]["authorization"] == "Bearer sk-own"
        assert not chats(fake_openai)
    finally:
        own.stop()


def test_the_environment_names_the_upstream_when_settings_do_not(live_server, fake_openai):
    limiter.reset()
    _agent, raw = create_token("env client")
    fake_openai.chat_replies = ["from the environment's upstream"]
    with override_settings(
        PROXY_UPSTREAM_URL=fake_openai.base_url, PROXY_UPSTREAM_KEY="sk-env-key"
    ):
        chat = OpenAI(base_url=live_server.url + "/llm/v1", api_key=raw, max_retries=0)
        reply = chat.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert reply.choices[0].message.content == "from the environment's upstream"
    assert chats(fake_openai)[-1]["headers"]["authorization"] == "Bearer sk-env-key"


def test_browser_based_clients_may_call_it_from_another_origin(proxy, fake_openai):
    _agent, raw, url = proxy
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request(
        "OPTIONS",
        parts.path + "/chat/completions",
        headers={
            "Origin": "http://localhost:3000",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    preflight = conn.getresponse()
    preflight.read()
    assert preflight.status == 204
    assert preflight.getheader("Access-Control-Allow-Origin") == "*"
    assert "authorization" in preflight.getheader("Access-Control-Allow-Headers")
    fake_openai.chat_replies = ["ok"]
    reply = client(proxy).chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert "X-Memory-Recall-Id" in reply.headers["Access-Control-Expose-Headers"]


def test_guardrails_mask_a_password_before_it_is_stored_and_a_resend_is_the_same_turn(
    proxy, fake_openai
):
    chat = client(proxy)
    fake_openai.chat_replies = ["Noted.", "Sure."]
    history = [{"role": "user", "content": "我的密码是 abc123456"}]
    chat.chat.completions.create(model="m", messages=history)
    history += [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": "thanks"}]
    chat.chat.completions.create(model="m", messages=history)

    assert chats(fake_openai)[0]["body"]["messages"][-1]["content"] == "我的密码是 abc123456"
    assert [t.content for t in ConversationTurn.objects.order_by("turn_index")] == [
        "我的密码是 ████",
        "Noted.",
        "thanks",
        "Sure.",
    ]
    assert Session.objects.count() == 1  # the masked turn was recognised, no fork


def test_an_agent_limited_to_some_scopes_gets_only_their_memory(proxy, fake_openai):
    agent, _raw, _url = proxy
    fact(Owner.default(), "The person is allergic to peanuts.", predicate="allergy")
    agents.set_scopes(agent, read=["project"], write=[])
    fake_openai.chat_replies = ["ok"]
    client(proxy).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Are peanuts allergic food for me?"}]
    )
    sent = chats(fake_openai)[-1]["body"]["messages"]
    assert "peanuts" not in json.dumps([m for m in sent if m["role"] == "system"])


def test_over_the_rate_limit_a_client_gets_an_openai_shaped_429(proxy, fake_openai, settings):
    settings.API_RATE_LIMIT = 1
    fake_openai.chat_replies = ["first"]
    chat = client(proxy)
    chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.RateLimitError) as caught:
        chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["code"] == "rate_limit_exceeded"
    assert caught.value.response.headers["Retry-After"]
    assert len(chats(fake_openai)) == 1
