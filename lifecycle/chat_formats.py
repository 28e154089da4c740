"""Reading chat history exports: ChatGPT's, Claude's, and a generic JSONL (no Django models).

Every reader turns a file into conversations of turns (role, text, time, tool calls and
results) or refuses it whole with a reason a person can act on: not JSON, not this format
(and which format it looks like), a conversation without messages. Nothing is stored here;
lifecycle.chat_import stores what a reader returned.

- ChatGPT (`conversations.json` of Settings → Data controls → Export): a list of
  conversations, each a tree of messages (`mapping`, node id -> {message, parent, children});
  an edited message starts a sibling branch, and `current_node` is the leaf of the branch on
  screen: we follow it up to the root, so only the current branch is imported.
- Claude (`conversations.json` of Settings → Privacy → Export data): a list of conversations
  with `chat_messages` (sender human / assistant, text or content blocks, tool use and tool
  results); when messages carry `parent_message_uuid`, the branch ending with the latest
  message is the one imported.
- JSONL: one turn per line, `{"session_id", "role", "content", "timestamp", "tool_calls"?,
  "tool_results"?, "turn_index"?, "title"?}` (the app's own conversation backup reads back).
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from memsite.core import strictjson

CHATGPT, CLAUDE, JSONL = "chatgpt", "claude", "jsonl"
FORMATS = (CHATGPT, CLAUDE, JSONL)
ROLES = ("user", "assistant", "system", "tool")
MAX_TITLE = 200
MAX_SESSION_ID = 200
# ChatGPT content that is not what was said: custom instructions, its memory, hidden reasoning.
_CHATGPT_SKIP = {"user_editable_context", "model_editable_context", "thoughts", "reasoning_recap"}


class ImportRefused(Exception):
    """The file cannot be imported; the message says why (nothing was stored)."""


@dataclass
class Turn:
    role: str
    content: str
    timestamp: datetime
    tool_calls: list | None = None
    tool_results: list | None = None
    index: int | None = None  # the turn_index a JSONL line gave, else its position


@dataclass
class Conversation:
    key: str  # the session id it is stored under
    title: str
    turns: list[Turn] = field(default_factory=list)

    @property
    def started(self) -> datetime:
        return self.turns[0].timestamp


# --------------------------------------------------------------------------------------
# Opening the file
# --------------------------------------------------------------------------------------


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes; a zip (as ChatGPT and Claude send their exports) gives its
    conversations.json."""
    path = Path(path)
    try:
        if zipfile.is_zipfile(path):
            return _from_zip(path)
        return path.read_bytes()
    except OSError as exc:
        raise ImportRefused(_("The file cannot be read: %(error)s") % {"error": exc}) from None


def _from_zip(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"]
        if not names:
            raise ImportRefused(_("The zip file holds no conversations.json."))
        return archive.read(min(names, key=len))


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportRefused(
            _("The file is not UTF-8 text (byte %(at)d).") % {"at": exc.start}
        ) from None


def _json(data: bytes) -> Any:
    try:
        return strictjson.loads(_text(data))
    except json.JSONDecodeError as exc:
        raise ImportRefused(
            _("The file is not JSON: %(error)s (line %(line)d, column %(col)d).")
            % {"error": exc.msg, "line": exc.lineno, "col": exc.colno}
        ) from None


def parse(data: bytes, fmt: str) -> list[Conversation]:
    """Every conversation of the file, oldest first, or ImportRefused."""
    if fmt not in FORMATS:
        raise ImportRefused(_("Unknown format “%(fmt)s”.") % {"fmt": fmt})
    if not data.strip():
        raise ImportRefused(_("The file is empty."))
    if fmt == JSONL:
        conversations = parse_jsonl(_text(data))
    else:
        found = _json(data)
        conversations = parse_chatgpt(found) if fmt == CHATGPT else parse_claude(found)
    if not conversations:
        raise ImportRefused(_("The file holds no conversations."))
    return sorted(conversations, key=lambda c: (c.started, c.key))


def read(path: str | Path, fmt: str) -> list[Conversation]:
    return parse(read_bytes(path), fmt)


def guess(data: Any) -> str | None:
    """Which export a parsed JSON value looks like (for "this is not ... but ..." messages)."""
    first = data[0] if isinstance(data, list) and data else data
    if isinstance(first, dict):
        if "mapping" in first:
            return CHATGPT
        if "chat_messages" in first:
            return CLAUDE
    return None


_NAMES = {CHATGPT: "ChatGPT", CLAUDE: "Claude", JSONL: "JSONL"}


def _wrong_format(expected: str, data: Any, detail: str) -> ImportRefused:
    looks = guess(data)
    message = _("This is not a %(name)s export: %(detail)s") % {
        "name": _NAMES[expected],
        "detail": detail,
    }
    if looks and looks != expected:
        message += " " + _("It looks like a %(name)s export: choose that format.") % {
            "name": _NAMES[looks]
        }
    return ImportRefused(message)


def _list_of_conversations(data: Any, fmt: str, needs: str) -> list[dict]:
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    if not isinstance(data, list):
        raise _wrong_format(fmt, data, _("the file must hold a list of conversations."))
    for number, item in enumerate(data, start=1):
        if not isinstance(item, dict) or needs not in item:
            raise _wrong_format(
                fmt,
                data,
                _("conversation %(n)d has no “%(field)s”.") % {"n": number, "field": needs},
            )
    return data


def _title(value: Any, number: int) -> str:
    title = " ".join(str(value or "").split())[:MAX_TITLE]
    return title or _("Conversation %(n)d") % {"n": number}


def _no_messages(number: int, title: str) -> ImportRefused:
    return ImportRefused(
        _("Conversation %(n)d (“%(title)s”) has no messages.") % {"n": number, "title": title}
    )


def _moment(value: Any) -> datetime | None:
    """Unix seconds (ChatGPT) or ISO 8601 text (Claude, JSONL), as an aware datetime."""
    if isinstance(value, bool) or value in (None, ""):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            moment = parse_datetime(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment is not None and moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment
    return None


# --------------------------------------------------------------------------------------
# ChatGPT
# --------------------------------------------------------------------------------------


def parse_chatgpt(data: Any) -> list[Conversation]:
    conversations = []
    for number, raw in enumerate(_list_of_conversations(data, CHATGPT, "mapping"), start=1):
        title = _title(raw.get("title"), number)
        mapping = raw.get("mapping")
        if not isinstance(mapping, dict):
            raise _wrong_format(
                CHATGPT,
                data,
                _("“mapping” of conversation %(n)d is not an object.") % {"n": number},
            )
        start = _moment(raw.get("create_time"))
        turns = _chatgpt_turns(_current_branch(mapping, raw.get("current_node")), start)
        if not turns:
            raise _no_messages(number, title)
        ident = raw.get("conversation_id") or raw.get("id") or f"{start:%Y%m%d%H%M%S}-{number}"
        conversations.append(Conversation(f"chatgpt:{ident}"[:MAX_SESSION_ID], title, turns))
    return conversations


def _current_branch(mapping: dict, current: Any) -> list[dict]:
    """The nodes from the root down to `current_node` (else the newest leaf)."""
    if current not in mapping:
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        current = max(leaves, key=lambda k: _node_time(mapping[k]), default=None)
    path, seen = [], set()
    while current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current]
        if not isinstance(node, dict):
            break
        path.append(node)
        current = node.get("parent")
    return path[::-1]


def _node_time(node: dict) -> float:
    message = node.get("message") if isinstance(node, dict) else None
    value = message.get("create_time") if isinstance(message, dict) else None
    return value if isinstance(value, int | float) else 0.0


def _chatgpt_text(content: dict) -> str:
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        parts = []
        for part in content.get("parts") or []:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if part.get("text"):  # an audio transcription
                    parts.append(str(part["text"]))
                elif str(part.get("content_type", "")).startswith("image"):
                    parts.append("[image]")
        return "\n".join(p for p in parts if p)
    if kind == "tether_quote":
        return "\n".join(str(content.get(k) or "") for k in ("title", "text")).strip()
    if kind == "tether_browsing_display":
        return str(content.get("result") or content.get("summary") or "")
    return str(content.get("text") or "")


def _chatgpt_turns(branch: list[dict], start: datetime | None) -> list[Turn]:
    turns: list[Turn] = []
    last_call: str | None = None
    for node in branch:
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content") if isinstance(message.get("content"), dict) else {}
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        if content.get("content_type") in _CHATGPT_SKIP or metadata.get(
            "is_visually_hidden_from_conversation"
        ):
            continue
        author = message.get("author") if isinstance(message.get("author"), dict) else {}
        role = author.get("role") if author.get("role") in ROLES else "assistant"
        text = _chatgpt_text(content).strip()
        when = _moment(message.get("create_time")) or (turns[-1].timestamp if turns else start)
        recipient = message.get("recipient") or "all"
        if not text or when is None or (role == "system" and not text):
            continue
        if role == "assistant" and recipient != "all":  # a call of a tool (python, browser)
            last_call = str(message.get("id") or node.get("id") or len(turns))
            call = {"id": last_call, "function": {"name": recipient, "arguments": text}}
            turns.append(Turn("assistant", "", when, tool_calls=[call]))
        elif role == "tool":
            result = {"tool_call_id": last_call, "name": author.get("name"), "output": text}
            turns.append(Turn("tool", text, when, tool_results=[result]))
        else:
            turns.append(Turn(role, text, when))
    return turns


# --------------------------------------------------------------------------------------
# Claude
# --------------------------------------------------------------------------------------


def parse_claude(data: Any) -> list[Conversation]:
    conversations = []
    for number, raw in enumerate(_list_of_conversations(data, CLAUDE, "chat_messages"), start=1):
        title = _title(raw.get("name"), number)
        messages = raw.get("chat_messages")
        if not isinstance(messages, list):
            raise _wrong_format(
                CLAUDE,
                data,
                _("“chat_messages” of conversation %(n)d is not a list.") % {"n": number},
            )
        start = _moment(raw.get("created_at"))
        turns: list[Turn] = []
        for message in _claude_branch([m for m in messages if isinstance(m, dict)]):
            turn = _claude_turn(message, turns[-1].timestamp if turns else start)
            if turn is not None:
                turns.append(turn)
        if not turns:
            raise _no_messages(number, title)
        ident = raw.get("uuid") or f"{turns[0].timestamp:%Y%m%d%H%M%S}-{number}"
        conversations.append(Conversation(f"claude:{ident}"[:MAX_SESSION_ID], title, turns))
    return conversations


def _claude_branch(messages: list[dict]) -> list[dict]:
    """Messages in order; with parent links, only the branch ending in the newest message."""
    by_id = {m.get("uuid"): m for m in messages if m.get("uuid")}
    if not any(m.get("parent_message_uuid") in by_id for m in messages):
        return messages
    newest = max(
        enumerate(messages),
        key=lambda pair: (
            _moment(pair[1].get("created_at")) or datetime.min.replace(tzinfo=UTC),
            pair[0],
        ),
    )[1]
    path, seen, current = [], set(), newest
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        path.append(current)
        current = by_id.get(current.get("parent_message_uuid"))
    return path[::-1]


def _block_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_block_text(v) for v in value if v)
    if isinstance(value, dict):
        return str(value.get("text") or "")
    return ""


def _claude_turn(message: dict, previous: datetime | None) -> Turn | None:
    role = {"human": "user", "user": "user", "assistant": "assistant"}.get(message.get("sender"))
    if role is None:
        return None
    texts, calls, results = [], [], []
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            calls.append(
                {
                    "id": block.get("id"),
                    "function": {"name": block.get("name"), "arguments": arguments},
                }
            )
        elif kind == "tool_result":
            result = {
                "tool_call_id": block.get("tool_use_id"),
                "output": _block_text(block.get("content")),
            }
            if block.get("is_error"):
                result["error"] = result["output"] or True
            results.append(result)
    text = "\n".join(t for t in texts if t.strip()) or str(message.get("text") or "")
    for attachment in message.get("attachments") or []:
        if isinstance(attachment, dict) and attachment.get("extracted_content"):
            name = attachment.get("file_name") or _("attachment")
            text += f"\n\n[{name}]\n{attachment['extracted_content']}"
    text = text.strip()
    when = _moment(message.get("created_at")) or previous
    if when is None or not (text or calls or results):
        return None
    return Turn(role, text, when, tool_calls=calls or None, tool_results=results or None)


# --------------------------------------------------------------------------------------
# JSONL
# --------------------------------------------------------------------------------------


def _jsonl_line(line: str, number: int) -> dict:
    try:
        record = strictjson.loads(line)
    except json.JSONDecodeError as exc:
        raise ImportRefused(
            _("Line %(n)d is not JSON: %(error)s.") % {"n": number, "error": exc.msg}
        ) from None
    if not isinstance(record, dict):
        raise ImportRefused(_("Line %(n)d is not a JSON object.") % {"n": number})
    missing = [k for k in ("session_id", "role", "content", "timestamp") if k not in record]
    if missing:
        if guess(record):
            raise _wrong_format(
                JSONL,
                record,
                _("line %(n)d is a whole conversation, not one turn.") % {"n": number},
            )
        raise ImportRefused(
            _("Line %(n)d has no %(fields)s.") % {"n": number, "fields": ", ".join(missing)}
        )
    return record


def _jsonl_turn(record: dict, number: int) -> Turn:
    session = str(record["session_id"] or "").strip()
    if not session or len(session) > MAX_SESSION_ID:
        raise ImportRefused(
            _("Line %(n)d: session_id must be 1 to %(max)d characters.")
            % {"n": number, "max": MAX_SESSION_ID}
        )
    if record["role"] not in ROLES:
        raise ImportRefused(
            _("Line %(n)d: role must be one of %(roles)s.")
            % {"n": number, "roles": ", ".join(ROLES)}
        )
    if not isinstance(record["content"], str):
        raise ImportRefused(_("Line %(n)d: content must be text.") % {"n": number})
    when = _moment(record["timestamp"])
    if when is None:
        raise ImportRefused(
            _(
                "Line %(n)d: the timestamp must be ISO 8601 (2024-05-01T09:30:00+08:00) "
                "or Unix seconds."
            )
            % {"n": number}
        )
    extras = {}
    for name in ("tool_calls", "tool_results"):
        value = record.get(name)
        if isinstance(value, dict):
            value = [value]
        if value is not None and not isinstance(value, list):
            raise ImportRefused(
                _("Line %(n)d: %(field)s must be a list.") % {"n": number, "field": name}
            )
        extras[name] = value or None
    index = record.get("turn_index")
    if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
        raise ImportRefused(
            _("Line %(n)d: turn_index must be a whole number from 0.") % {"n": number}
        )
    return Turn(record["role"], record["content"], when, index=index, **extras)


def parse_jsonl(text: str) -> list[Conversation]:
    """Turns grouped by session_id in file order. With turn_index on every turn of a session
    they are stored under those numbers (so the app's own backup reads back onto the turns it
    came from); without, under their order in the file."""
    sessions: dict[str, Conversation] = {}
    for number, line in enumerate(io.StringIO(text), start=1):
        if not line.strip():
            continue
        record = _jsonl_line(line, number)
        turn = _jsonl_turn(record, number)
        key = str(record["session_id"]).strip()
        conversation = sessions.setdefault(key, Conversation(key, ""))
        if record.get("title"):
            conversation.title = " ".join(str(record["title"]).split())[:MAX_TITLE]
        conversation.turns.append(turn)
    for conversation in sessions.values():
        _order_by_index(conversation)
    return list(sessions.values())


def _order_by_index(conversation: Conversation) -> None:
    given = [t.index for t in conversation.turns if t.index is not None]
    if not given:
        return
    if len(given) != len(conversation.turns):
        raise ImportRefused(
            _("Session “%(id)s”: give turn_index on every turn or on none.")
            % {"id": conversation.key}
        )
    if len(set(given)) != len(given):
        raise ImportRefused(
            _("Session “%(id)s” has two turns with the same turn_index.") % {"id": conversation.key}
        )
    conversation.turns.sort(key=lambda t: t.index)
