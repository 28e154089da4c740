"""Settings → Guardrails pages without JavaScript: the list and its switches, a new rule tried
on sample text before it is saved, applying it to what is stored, and the Blocked log."""

import pytest
from django.utils import translation

from curator import conversations
from curator import writepath as wp
from curator.guard import rules as guard
from curator.models import ConversationTurn, Fact, GuardHit, GuardRule, MemoryEvent
from memsite.core.tokens import create_token

pytestmark = pytest.mark.django_db
KEY = "sk-proj-pLIix6MEOLeMa61EqJomTEI1JEzO3joOj37HyVaQXekW9Lct"


def text(response) -> str:
    return response.content.decode()


def test_settings_lead_to_the_guardrails(client_in):
    page = text(client_in.get("/settings/"))
    assert 'href="/settings/guardrails/"' in page


def test_the_list_shows_secrets_blocking_and_personal_data_sent_to_review(client_in):
    page = text(client_in.get("/settings/guardrails/"))
    assert "API keys and access tokens" in page and "Chinese resident ID numbers" in page
    guard.all_rules()
    email = GuardRule.objects.get(detector="email")
    row = page[page.index(f'id="rule-{email.pk}"') :]
    row = row[: row.index("</tr>")]
    assert ">on<" in row and "to review" in row and "Block instead" in row


def test_the_page_reads_in_chinese(client_in):
    client_in.cookies["django_language"] = "zh-hans"
    with translation.override("zh-hans"):
        page = text(client_in.get("/settings/guardrails/", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "防护规则" in page and "API 密钥和访问令牌" in page


def test_a_switch_makes_a_detector_block_instead_of_review(client_in):
    guard.all_rules()
    email = GuardRule.objects.get(detector="email")
    assert wp.propose(wp.Candidate(content="han@example.com"), actor="agent").outcome == "pending"
    response = client_in.post(
        f"/settings/guardrails/{email.pk}/switch/", {"field": "action", "value": "block"}
    )
    assert response.status_code == 302
    email.refresh_from_db()
    assert email.action == "block"
    assert wp.propose(wp.Candidate(content="li@example.com"), actor="agent").outcome == "blocked"


def test_the_edit_form_sets_a_rule_to_review(client_in):
    response = client_in.post(
        "/settings/guardrails/new/",
        {"name": "health", "words": "health, 健康", "on_match": "review", "enabled": "on",
         "action": "save"},
    )  # fmt: skip
    assert response.status_code == 302
    assert GuardRule.objects.get(name="health").action == "review"
    result = wp.propose(wp.Candidate(content="最近健康不好"), actor="agent")
    assert result.outcome == "pending" and result.pending.reason == "personal_data"


def test_trying_a_rule_shows_the_masked_sample_and_saves_nothing(client_in):
    response = client_in.post(
        "/settings/guardrails/new/",
        {"name": "health", "words": "health, 健康", "sample": "最近健康不好", "action": "test"},
    )
    assert response.status_code == 200
    assert "最近████不好" in text(response) and "1 match" in text(response)
    assert not GuardRule.objects.filter(detector="").exists()


def test_the_trial_answers_htmx_with_its_part_only(client_in):
    response = client_in.post(
        "/settings/guardrails/new/",
        {"name": "", "words": "健康", "sample": "健康", "action": "test"},
        HTTP_HX_REQUEST="true",
    )
    body = text(response)
    assert response.status_code == 200 and 'id="trial"' in body and "<html" not in body


def test_a_bad_regex_is_refused_on_the_page(client_in):
    response = client_in.post(
        "/settings/guardrails/new/", {"name": "bad", "pattern": "(oops", "action": "save"}
    )
    assert response.status_code == 400
    assert "not a valid regular expression" in text(response)


def test_a_new_rule_offers_to_apply_itself_to_what_is_stored(client_in):
    wp.propose(wp.Candidate(content="小李最近健康状况不好"), actor="agent")
    conversations.record_turn("s", 0, "user", "我的健康出了问题")
    response = client_in.post(
        "/settings/guardrails/new/",
        {"name": "健康", "words": "健康", "enabled": "on", "action": "save"},
    )
    rule = GuardRule.objects.get(name="健康")
    assert response["Location"] == f"/settings/guardrails/{rule.pk}/apply/"
    page = text(client_in.get(response["Location"]))
    assert "小李最近████状况不好" in page and "我的████出了问题" in page
    assert "健康状况" not in page  # matches are never shown in clear

    done = client_in.post(f"/settings/guardrails/{rule.pk}/apply/", {"mode": "redact"})
    assert done["Location"].startswith("/settings/guardrails/?batch=guard-")
    assert Fact.objects.get().content == "小李最近████状况不好"
    assert ConversationTurn.objects.get().content == "我的████出了问题"
    listing = text(client_in.get(done["Location"]))
    assert "Undo all" in listing and "Forget the originals for good" in listing

    batch = done["Location"].split("batch=")[1]
    client_in.post(f"/settings/guardrails/{rule.pk}/forget/{batch}/")
    assert "健康状况" not in str(list(MemoryEvent.objects.values_list("payload", flat=True)))


def test_a_detector_can_be_limited_to_agents_but_not_renamed(client_in):
    token, _raw = create_token("chat")
    guard.all_rules()
    key = GuardRule.objects.get(detector="api_key")
    page = text(client_in.get(f"/settings/guardrails/{key.pk}/"))
    assert 'name="words"' not in page and 'name="agents"' in page
    client_in.post(
        f"/settings/guardrails/{key.pk}/",
        {"agents": [str(token.pk)], "enabled": "on", "redact_turns": "on", "action": "save"},
    )
    key.refresh_from_db()
    assert key.agents == [token.pk] and key.detector == "api_key"


def test_an_own_rule_can_be_deleted(client_in):
    rule = guard.create_rule({"name": "ex", "words": ["前任"]})
    client_in.post(f"/settings/guardrails/{rule.pk}/delete/")
    assert not GuardRule.objects.filter(pk=rule.pk).exists()


def test_the_blocked_log_counts_per_rule_and_agent_with_masked_excerpts(client_in):
    token, _raw = create_token("chat")
    wp.propose(wp.Candidate(content=f"my key is {KEY}"), actor="agent", agent_id=token.pk)
    conversations.record_turn("s", 0, "user", "我的密码是 abc123456")
    page = text(client_in.get("/settings/guardrails/blocked/"))
    assert GuardHit.objects.count() == 2
    assert "my key is ████" in page and "我的密码是 ████" in page
    assert KEY not in page and "abc123456" not in page
    by_agent = page[page.index('id="by-agent"') :]
    assert "chat" in by_agent[: by_agent.index("</table>")]


def test_a_blocked_confirmation_on_the_review_desk_says_why(client_in):
    item = wp.propose(wp.Candidate(content="担心健康", confidence=0.7), actor="agent").pending
    guard.create_rule({"name": "健康", "words": ["健康"]})
    response = client_in.post(f"/review/{item.pk}/confirm/", follow=True)
    assert "Blocked by the guardrail “健康”" in text(response)
    assert not Fact.objects.exists()


def test_editing_a_fact_into_a_match_is_refused_on_the_page(client_in):
    fact = wp.propose(wp.Candidate(content="喜欢喝茶"), actor="agent").fact
    guard.create_rule({"name": "医疗", "words": ["医院"]})
    fields = {
        "content": "喜欢在医院旁边喝茶",
        "type": fact.type,
        "scope": fact.scope,
        "priority": fact.priority,
        "importance": fact.importance,
        "expected_updated_at": fact.updated_at.isoformat(),
    }
    response = client_in.post(
        f"/facts/{fact.pk}/edit/", {f"f{fact.pk}-{k}": v for k, v in fields.items()}
    )
    assert "医疗" in text(response)
    fact.refresh_from_db()
    assert fact.content == "喜欢喝茶"


@pytest.mark.parametrize(
    ("language", "says"),
    [("en", "Holds personal data (“Phone numbers”)"), ("zh-hans", "含个人信息（“电话号码”）")],
)
def test_the_review_desk_says_why_personal_data_waits(client_in, language, says):
    wp.propose(wp.Candidate(content="李雷的电话是13812345678"), actor="agent")
    client_in.cookies["django_language"] = language
    page = text(client_in.get("/review/", HTTP_ACCEPT_LANGUAGE=language))
    assert says in page and "13812345678" in page
