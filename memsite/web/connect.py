"""The snippets that connect an agent, with its new token filled in (shown once, on creation).

Four ways in: an MCP client that starts the server itself (stdio: Claude Desktop, Cursor,
Claude Code), an MCP client that talks to the running server (streamable HTTP at /mcp), a
`curl` call and the bundled Python client. The stdio command is the one that works on this
install: the `memory-curator` command beside this Python when the app was installed as a
package, else this checkout's manage.py. The data directory goes along, so the stdio server
reads and writes the same memory as the running one.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

SERVER_NAME = "memory-curator"


@dataclass(frozen=True)
class Snippet:
    key: str
    title: str | Promise
    hint: str | Promise
    text: str

    @property
    def rows(self) -> int:
        return self.text.count("\n") + 2


def stdio_command() -> tuple[str, list[str]]:
    """(command, args) that start the stdio MCP server on this machine."""
    installed = Path(sys.executable).with_name("memory-curator")
    if not settings.IN_CHECKOUT and installed.exists():
        return str(installed), ["mcp"]
    return sys.executable, [str(Path(settings.BASE_DIR) / "manage.py"), "mcp"]


def snippets(base_url: str, token: str) -> list[Snippet]:
    base = base_url.rstrip("/")
    command, args = stdio_command()
    env = {"MEMSITE_API_TOKEN": token, "MEMSITE_DATA_DIR": str(settings.DATA_DIR)}
    stdio = {"mcpServers": {SERVER_NAME: {"command": command, "args": args, "env": env}}}
    http = {
        "mcpServers": {
            SERVER_NAME: {
                "type": "http",
                "url": f"{base}/mcp",
                "headers": {"Authorization": f"Bearer {token}"},
            }
        }
    }
    curl = (
        f"curl -s -X POST {base}/api/v1/context \\\n"
        f"  -H 'Authorization: Bearer {token}' \\\n"
        "  -H 'Content-Type: application/json' \\\n"
        """  -d '{"query": "What do you know about me?"}'"""
    )
    python = (
        "from memsite.client import MemoryClient\n\n"
        f'memory = MemoryClient("{base}", token="{token}")\n'
        'memory.record_turn("chat-1", 0, "user", "I prefer short answers.")\n'
        'print(memory.context("How should you answer me?", session_id="chat-1")["text"])'
    )
    return [
        Snippet(
            "mcp-stdio",
            _("Claude Desktop / Cursor (MCP, the client starts the server)"),
            _(
                "Add to claude_desktop_config.json or .cursor/mcp.json. That is all it needs: "
                "when this app is not running, the server runs the background jobs itself "
                "(indexing, extraction, episodes, cards)."
            ),
            _json(stdio),
        ),
        Snippet(
            "mcp-http",
            _("MCP over HTTP (to this running server)"),
            _("For clients that connect to a URL (Cursor, Claude Code, the OpenAI Agents SDK)."),
            _json(http),
        ),
        Snippet(
            "curl",
            _("curl"),
            _("The context for a message, from a terminal."),
            curl,
        ),
        Snippet(
            "python",
            _("Python"),
            _("The client ships with the app: memsite.client."),
            python,
        ),
    ]


def _json(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)
