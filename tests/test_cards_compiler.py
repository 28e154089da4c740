"""Compiling the persona and user cards for injection: rules on messy cards, budgets, cache,
and the LLM path against a fake OpenAI-compatible server on 127.0.0.1."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from curator import cards, compiler

MESSY_PERSONA = """\
# 十一

<!-- 这里写十一的人设。编辑后会重新编译。 -->
十一是一个务实的工程搭档。

## 语气
- 直接、温和，先给结论
- 一条很长很长的原则：{long}

## 禁区
- [待学习]
-->

## 空标题

### 也是空的

## 优先行为
- **先查证**：
- 不确定时直说
""".format(
    long="在回答任何技术问题之前，先确认用户所在的项目与上下文，"
    "再给出可以直接执行的步骤，而不是泛泛而谈的建议，这条原则必须保留"
)

MESSY_USER = """\
# 用户

- **称呼**: 小李
- **职业**: [待学习]
- **时区**: {{timezone}}
- 技术栈:
  - Python
  - Django

## 偏好
- [TBD]

---
"""


@pytest.fixture(autouse=True)
def dirs(settings, tmp_path):
    settings.MEMORY_DIR = tmp_path / "memory"
    settings.CACHE_DIR = tmp_path / "cache"
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""


def test_rules_strip_comments_placeholders_and_empty_headings():
    out = compiler.clean(MESSY_PERSONA)
    assert "<!--" not in out and "-->" not in out and "[待学习]" not in out
    assert "## 禁区" not in out and "## 空标题" not in out and "### 也是空的" not in out
    assert "- 直接、温和，先给结论" in out and "这条原则必须保留" in out  # long bullets stay
    assert "先查证" not in out  # a label with nothing after it
    assert "- 不确定时直说" in out and "\n\n" not in out


def test_rules_keep_a_label_that_groups_nested_bullets():
    out = compiler.clean(MESSY_USER)
    assert "- **称呼**: 小李" in out and "职业" not in out and "{{" not in out
    assert "- 技术栈:\n  - Python\n  - Django" in out
    assert "## 偏好" not in out and "---" not in out


def test_fit_drops_prose_before_bullets_and_respects_the_budget():
    text = "# T\nprose one two three four five six\n- keep this bullet\n- and this one"
    out = compiler.fit(text, compiler.estimate_tokens("# T\n- keep this bullet\n- and this one"))
    assert "prose" not in out and "- keep this bullet" in out
    for budget in (0, 1, 5, 12, 40):
        assert compiler.estimate_tokens(compiler.compile_rules(MESSY_PERSONA, budget)) <= budget


def test_token_estimates_count_cjk_characters_one_each():
    assert compiler.estimate_tokens("") == 0
    assert compiler.estimate_tokens("十一") == 2
    assert compiler.estimate_tokens("abcd efgh") == 2  # the one estimate: a token per word


@pytest.mark.parametrize(
    ("persona", "user", "total", "expected"),
    [
        (100, 100, 600, (300, 300)),
        (500, 50, 600, (525, 75)),
        (50, 900, 600, (50, 550)),
        (900, 900, 600, (300, 300)),
    ],
)
def test_the_budget_is_shared_and_spare_room_moves_over(persona, user, total, expected):
    assert compiler.split_budget(persona, user, total) == expected
    assert sum(compiler.split_budget(persona, user, total)) == total


def test_the_profile_fits_the_budget_and_is_cached(db, settings):
    cards.save("persona", MESSY_PERSONA * 20, "person")
    cards.save("user", MESSY_USER, "person")
    first = compiler.compiled_profile()
    assert first.tokens <= settings.CARDS_TOKEN_BUDGET == first.budget
    assert not first.persona.cached and first.persona.method == "rules"
    again = compiler.compiled_profile()
    assert again.persona.cached and again.persona.text == first.persona.text
    cards.save("user", MESSY_USER + "- 新偏好\n", "person")
    assert not compiler.compiled_profile().user.cached  # new content, new hash
    data = again.to_dict()
    assert set(data) >= {"persona_card", "user_card", "tokens", "budget"}


def test_an_explicit_budget_wins(db):
    cards.save("persona", MESSY_PERSONA * 20, "person")
    assert compiler.compiled_profile(budget=100).tokens <= 100


class _FakeOpenAI(BaseHTTPRequestHandler):
    reply = "- 名字：十一\n- 语气：直接"
    status = 200
    requests: list = []

    def do_POST(self):  # noqa: N802 - the stdlib's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        payload = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": type(self).reply},
                }
            ],
        }
        data = json.dumps(payload).encode()
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_llm(settings):
    _FakeOpenAI.requests, _FakeOpenAI.status = [], 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.LLM_BASE_URL = f"http://127.0.0.1:{server.server_port}/v1"
    settings.LLM_API_KEY = "test"
    settings.LLM_MODEL = "fake-model"
    yield _FakeOpenAI
    server.shutdown()


def test_an_llm_compiles_when_configured_and_is_cached(db, fake_llm):
    cards.save("persona", MESSY_PERSONA, "person")
    result = compiler.compiled_profile().persona
    assert result.method == "llm:fake-model" and result.text == "- 名字：十一\n- 语气：直接"
    assert "[待学习]" in fake_llm.requests[0]["messages"][1]["content"]  # the card went out
    calls = len(fake_llm.requests)
    assert compiler.compiled_profile().persona.cached and len(fake_llm.requests) == calls


def test_an_llm_failure_falls_back_to_rules(db, fake_llm):
    fake_llm.status = 500
    cards.save("persona", MESSY_PERSONA, "person")
    result = compiler.compiled_profile().persona
    assert result.method == "rules" and result.error
    assert "- 不确定时直说" in result.text


def test_plain_openai_settings_without_a_base_url_compile_cards_with_the_llm_too(
    db, fake_llm, settings, monkeypatch
):
    # A key and a model, no base URL: the client goes where the OpenAI SDK is told to go
    # (here the fake server, through the SDK's own OPENAI_BASE_URL), as extraction does.
    monkeypatch.setenv("OPENAI_BASE_URL", settings.LLM_BASE_URL)
    settings.LLM_BASE_URL = ""
    cards.save("persona", MESSY_PERSONA, "person")
    assert compiler.compiled_profile().persona.method == "llm:fake-model"
    assert fake_llm.requests
