"""The chat proxy with the npm `openai` package, run by node: what a JavaScript chat app
(LobeChat, Chatbox, a script) does. The package is installed once into .cache/node (ignored
by git) with npm; without node or npm the test fails and says what to install."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from curator.models import ConversationTurn
from memsite.api.ratelimit import limiter
from memsite.core.tokens import create_token
from memsite.proxy import upstream as upstreams
from tests.test_proxy import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
NODE_DIR = Path(__file__).resolve().parent.parent / ".cache" / "node"
PACKAGE = "openai@6"

SCRIPT = r"""
const { OpenAI } = require("openai");
const base = { baseURL: process.env.BASE_URL, maxRetries: 0 };
const client = new OpenAI({ ...base, apiKey: process.env.TOKEN });
(async () => {
  const history = [{ role: "user", content: "I am allergic to peanuts" }];
  const whole = await client.chat.completions.create({ model: "fake-model", messages: history });
  history.push(whole.choices[0].message);
  history.push({ role: "user", content: "Suggest a dish" });
  const stream = await client.chat.completions.create({
    model: "fake-model", messages: history, stream: true,
  });
  let streamed = "";
  let chunks = 0;
  for await (const chunk of stream) {
    streamed += chunk.choices[0]?.delta?.content || "";
    chunks += 1;
  }
  let failure = null;
  try {
    await new OpenAI({ ...base, apiKey: "mc_wrong" })
      .chat.completions.create({ model: "fake-model", messages: history });
  } catch (err) { failure = { status: err.status, code: err.code }; }
  const answer = whole.choices[0].message.content;
  console.log(JSON.stringify({ whole: answer, streamed, chunks, failure }));
})().catch((err) => { console.error(err); process.exit(1); });
"""


def node_openai() -> Path:
    """The installed package's folder (installing it on first use)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are needed for this test: apt-get install nodejs npm")
    if not (NODE_DIR / "node_modules" / "openai").is_dir():
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", PACKAGE],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode:
            pytest.fail(f"npm install {PACKAGE} failed: {done.stderr[-2000:]}")
    return NODE_DIR / "node_modules"


def test_the_npm_openai_package_chats_through_the_proxy(live_server, fake_openai, tmp_path):
    modules = node_openai()
    limiter.reset()
    upstreams.save(None, base_url=fake_openai.base_url, api_key="sk-up", model_map="")
    _agent, raw = create_token("node app")
    fake_openai.chat_replies = ["Noted.", "Tomato and egg, no peanuts."]
    script = tmp_path / "chat.js"
    script.write_text(SCRIPT)

    done = subprocess.run(
        ["node", str(script)],
        env={
            "PATH": os.environ.get("PATH", ""),
            "NODE_PATH": str(modules),
            "BASE_URL": live_server.url + "/llm/v1",
            "TOKEN": raw,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["whole"] == "Noted."
    assert result["streamed"] == "Tomato and egg, no peanuts." and result["chunks"] > 2
    assert result["failure"] == {"status": 401, "code": "invalid_api_key"}
    sent = [r["body"] for r in fake_openai.requests if r["path"].endswith("/chat/completions")]
    assert sent[-1]["messages"][-1] == {"role": "user", "content": "Suggest a dish"}
    assert wait_for(lambda: ConversationTurn.objects.count() == 4)  # recorded after the stream
    turns = ConversationTurn.objects.order_by("turn_index").values_list("role", "content")
    assert list(turns) == [
        ("user", "I am allergic to peanuts"),
        ("assistant", "Noted."),
        ("user", "Suggest a dish"),
        ("assistant", "Tomato and egg, no peanuts."),
    ]
