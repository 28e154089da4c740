"""The playground and the chat proxy's Settings section without JavaScript: the form posts,
the page comes back with the answer, what was injected and what was recorded."""

import json

import pytest

from curator.models import ConversationTurn
from memsite.core.tokens import create_token
from memsite.models import ProxyExchange, ProxyUpstream
from memsite.proxy import upstream as upstreams


def say(client, message, history=(), agent="new", conversation="c1"):
    return client.post(
        "/playground/",
        {
            "message": message,
            "agent": agent,
            "model": "fake-model",
            "history": json.dumps(list(history)),
            "conversation": conversation,
        },
    )


def test_without_an_upstream_the_page_says_how_to_set_one_and_records_nothing(client_in):
    page = say(client_in, "推荐一道菜").content.decode()
    assert "data-no-upstream" in page and "MEMSITE_PROXY_UPSTREAM_URL" in page
    assert "data-dry-run" in page
    assert not ConversationTurn.objects.exists() and not ProxyExchange.objects.exists()


def test_a_message_is_answered_whole_with_what_was_injected_and_recorded(client_in, fake_openai):
    upstreams.save(None, base_url=fake_openai.base_url, api_key="sk-up", model_map="")
    fake_openai.chat_replies = ["Hello!", "Tomatoes."]
    first = say(client_in, "hi there").content.decode()
    assert "Hello!" in first and "data-exchange" in first
    history = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "Hello!"}]

    second = say(client_in, "what to cook?", history).content.decode()

    assert "Tomatoes." in second
    turns = ConversationTurn.objects.order_by("turn_index").values_list("content", flat=True)
    assert list(turns) == ["hi there", "Hello!", "what to cook?", "Tomatoes."]
    assert second.count("data-turn=") == 2  # only the new question and its answer
    agent = ProxyExchange.objects.first().agent
    assert agent.name == "Playground"  # made on first use, its secret never needed


def test_the_page_reads_in_chinese(chinese_client):
    page = chinese_client.get("/playground/").content.decode()
    assert "演练场" in page and "通过代理的最近对话" in page


def test_an_exchange_page_shows_the_injected_memory_and_404s_for_another(client_in):
    agent, _raw = create_token("app")
    ProxyExchange.objects.create(
        uid="abc123",
        agent=agent,
        context={
            "text": "## Who we are\n- allergic to peanuts",
            "sections": [{"name": "cards", "items": [{"kind": "card", "id": "user"}]}],
        },
        context_tokens=9,
    )
    page = client_in.get("/playground/exchanges/abc123/").content.decode()
    assert "allergic to peanuts" in page and 'href="/cards/"' in page
    assert client_in.get("/playground/exchanges/nope/").status_code == 404


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("base_url", "ftp://example.com", "must start with http"),
        ("model_map", "just a name", "Line 1"),
        ("context_tokens", "50", "between 200"),
    ],
)
def test_settings_refuse_bad_values_with_a_readable_message(client_in, field, value, message):
    data = {"agent": "", "base_url": "http://127.0.0.1:9/v1", "model_map": "", field: value}
    page = client_in.post("/settings/chat-proxy/", data, follow=True).content.decode()
    assert message in page
    assert not ProxyUpstream.objects.exists()


def test_an_agents_own_upstream_is_listed_with_a_masked_key_and_can_be_removed(client_in):
    agent, _raw = create_token("work laptop")
    client_in.post(
        "/settings/chat-proxy/",
        {"agent": agent.pk, "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-own-secret-9876"},
    )
    page = client_in.get("/settings/").content.decode()
    assert f'data-agent-upstream="{agent.pk}"' in page
    assert "sk-own-secret-9876" not in page and "…9876" in page
    client_in.post("/settings/chat-proxy/", {"agent": agent.pk, "remove": "1"})
    assert not ProxyUpstream.objects.filter(agent=agent).exists()
