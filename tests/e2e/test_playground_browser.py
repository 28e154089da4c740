"""The playground in a real browser: the answer streams into the page, and beside it the
memory that was injected (linked, with scores) and the turns that were recorded."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from openai import OpenAI
from playwright.sync_api import expect

from curator.models import ConversationTurn
from memsite.api.ratelimit import limiter
from memsite.core.tokens import create_token
from memsite.proxy import upstream as upstreams
from tests.e2e.helpers import PASSWORD, USERNAME, log_in, switch_language
from tests.queue_helpers import run_scheduled

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner():
    get_user_model().objects.create_superuser(USERNAME, "", PASSWORD)
    limiter.reset()
    yield
    with connection.cursor() as cur:  # flush() does not empty virtual tables
        for table in ("search_fts", "search_vec", "search_vecf"):
            cur.execute(f"DELETE FROM {table}")


def test_an_allergy_told_elsewhere_shows_beside_the_streamed_answer(
    page, live_server, fake_openai, owner, live_queue, screenshot_dir
):
    upstreams.save(None, base_url=fake_openai.base_url, api_key="sk-up", model_map="")
    _agent, raw = create_token("phone app")
    phone = OpenAI(base_url=live_server.url + "/llm/v1", api_key=raw, max_retries=0)
    fake_openai.chat_replies = ["好的，记住了。", "番茄炒蛋。"]
    phone.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "我对花生过敏"}]
    )
    run_scheduled()  # the consumer's card refresh: the user card now names the allergy
    phone.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "推荐一道菜"}]
    )

    log_in(page, live_server, "/playground/")  # why the phone app's answer avoided peanuts
    page.locator(".recent-exchanges li a").first.click()
    expect(page.locator("pre.context-text")).to_contain_text("花生")
    page.go_back()
    answer = "推荐番茄炒蛋，" + "不含花生。" * 30
    fake_openai.chat_replies = [answer]
    fake_openai.chunk_interval = 0.03  # about 40 chunks: visibly streaming

    page.select_option("select[name=agent]", label="phone app")
    page.fill("#chat-message", "推荐一道菜")
    page.click("#chat-form button[type=submit]")

    bubble = page.locator(".message-assistant .message-text").last
    expect(bubble).to_contain_text("推荐番茄炒蛋")  # the first chunks, before the answer ends
    assert len(bubble.inner_text()) < len(answer)
    expect(bubble).to_have_text(answer)
    panel = page.locator(".exchange").last
    expect(panel.locator("pre.context-text")).to_contain_text("花生")
    # The user card carries the allergy (the persona card may be there too, from earlier tests).
    user_card = panel.locator("[data-item^='card:'] a", has_text="User.md")
    expect(user_card).to_have_attribute("href", "/cards/")
    expect(panel.locator("[data-turn]")).to_have_count(2)  # the question and the answer
    sent = fake_openai.requests[-1]["body"]["messages"]
    assert sent[0]["role"] == "system" and "花生" in sent[0]["content"]
    assert ConversationTurn.objects.filter(content=answer).exists()
    page.screenshot(path=str(screenshot_dir / "playground-en.png"), full_page=True)


def test_with_no_upstream_it_shows_what_would_be_injected_in_chinese(page, live_server, owner):
    log_in(page, live_server, "/playground/")
    switch_language(page, "zh-hans")
    expect(page.locator("[data-no-upstream]")).to_contain_text("MEMSITE_PROXY_UPSTREAM_URL")
    page.fill("#chat-message", "推荐一道菜")
    page.click("#chat-form button[type=submit]")
    expect(page.locator("[data-dry-run]")).to_be_visible()
    expect(page.locator("[data-dry-run] a")).to_have_attribute("href", "/settings/#chat-proxy")
    assert not ConversationTurn.objects.exists()
