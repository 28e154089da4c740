"""Compile the persona and user cards into the compact text injected into every turn.

Seed 003 section 6: the cards are written for people (headings, examples, comments,
placeholders such as [待学习]); the agent needs a compact list within a token budget
(seed 000: 600 tokens for both by default). The rules compiler always works offline; when
an OpenAI-compatible endpoint is configured an LLM condenses the card first and the rules
still enforce the budget. Results are cached by content hash, so an unchanged card is never
compiled twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import asdict, dataclass

from django.conf import settings

from curator import cards
from curator.tokencount import estimate_tokens
from memsite.core import llm

log = logging.getLogger(__name__)

RULES_VERSION = "1"  # bump when the rules change, so cached results are not reused

# --------------------------------------------------------------------------------------
# Tokens (estimated locally: tiktoken downloads its encodings at run time)
# --------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------
# The rules compiler
# --------------------------------------------------------------------------------------

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_STRAY_COMMENT = re.compile(r"^\s*(?:<!--|-->).*$", re.M)
_PLACEHOLDER = re.compile(
    r"\[(?:待学习|待补充|待填写|待定|待确认|未知|暂无|TBD|TODO|to learn|unknown|n/?a|placeholder)\]"
    r"|\{\{[^{}\n]*\}\}|<(?:placeholder|待填写)>",
    re.I,
)
_HEADING = re.compile(r"^(#{1,6})\s+\S")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_RULES = {"---", "***", "___", ">"}


def _label_only(line: str) -> bool:
    """A bullet or "label:" with nothing to say (typically once a placeholder is gone)."""
    rest = _BULLET.sub("", line.strip(), count=1).replace("**", "").strip()
    return rest in {"", "-", "*", "+"} or (rest.endswith((":", "：")) and len(rest) <= 40)


def _has_children(line: str, nxt: str | None) -> bool:
    """Is the next line nested under this one (so a bare label still groups something)?"""
    if nxt is None or _HEADING.match(nxt):
        return False
    if len(nxt) - len(nxt.lstrip()) > len(line) - len(line.lstrip()):
        return True
    return not _BULLET.match(line) and bool(_BULLET.match(nxt))


def _drop_empty_headings(lines: list[str]) -> list[str]:
    """A heading with nothing under it (before the next heading of its level or higher)."""
    keep: list[str] = []
    for index, line in enumerate(lines):
        if m := _HEADING.match(line):
            has_body = False
            for later in lines[index + 1 :]:
                if (h := _HEADING.match(later)) and len(h[1]) <= len(m[1]):
                    break
                if not h and later.strip():
                    has_body = True
                    break
            if not has_body:
                continue
        keep.append(line)
    return keep


def clean(text: str) -> str:
    """Strip what only a human reader needs: comments, placeholders, empty entries and headings.

    Bullets are kept whatever their length (seed 003: long principles were lost to a
    length filter); blank lines go, since the compact form is for a model.
    """
    text = cards.normalise(text)
    text = _COMMENT.sub("", text)
    text = _STRAY_COMMENT.sub("", text)
    text = _PLACEHOLDER.sub("", text)
    lines = [
        line.rstrip() for line in text.splitlines() if line.strip() and line.strip() not in _RULES
    ]
    kept = [
        line
        for index, line in enumerate(lines)
        if _HEADING.match(line)
        or not _label_only(line)
        or _has_children(line, lines[index + 1] if index + 1 < len(lines) else None)
    ]
    return "\n".join(_drop_empty_headings(kept))


def fit(text: str, budget: int) -> str:
    """Cut to the budget: narrative lines go first (from the end), then bullets, then headings."""
    lines = text.splitlines()

    def size() -> int:
        return estimate_tokens("\n".join(lines))

    for kind in ("prose", "bullet", "any"):
        while size() > budget:
            index = _last_of_kind(lines, kind)
            if index is None:
                break
            del lines[index]
            lines = _drop_empty_headings(lines)
    result = "\n".join(lines)
    while result and estimate_tokens(result) > budget:  # one very long line left
        result = result[: max(0, len(result) - max(1, len(result) // 10))].rstrip() + "…"
        if len(result) <= 1:
            return ""
    return result


def _last_of_kind(lines: list[str], kind: str) -> int | None:
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        heading, bullet = bool(_HEADING.match(line)), bool(_BULLET.match(line))
        if kind == "any" or (kind == "prose" and not heading and not bullet):
            return index
        if kind == "bullet" and bullet:
            return index
    return None


def compile_rules(text: str, budget: int) -> str:
    return fit(clean(text), budget)


# --------------------------------------------------------------------------------------
# The LLM compiler (only when an endpoint is configured)
# --------------------------------------------------------------------------------------

PROMPTS = {
    "persona": (
        "将以下 AI 身份文档精简为核心原则摘要。\n要求:\n- 保留名字、定位、语气和所有核心行为原则\n"
        "- 保留关键的“做/不做”清单（边界、禁区、优先行为）\n- 删除叙事性段落、示例和比喻\n"
        "- 删除 HTML 注释和格式噪声\n"
        "- 输出纯 Markdown，使用紧凑的列表格式，不超过 {budget} tokens\n"
        "- 保持原文的语言\n\n原文:\n{content}"
    ),
    "user": (
        "从以下用户档案中提取已知信息。\n要求:\n"
        "- 只保留有实际内容的字段（跳过“[待学习]”等占位符）\n"
        "- 保留用户称呼、职业背景、技术栈、偏好、工作习惯等已知信息\n"
        "- 输出紧凑的列表格式，不超过 {budget} tokens\n- 保持原文的语言\n"
        "- 如果没有任何已知信息，输出空字符串\n\n原文:\n{content}"
    ),
}


def compile_llm(kind: str, text: str, budget: int) -> str:
    """Ask the configured model to condense the card; the rules then enforce the budget."""
    reply = llm.client(timeout=30).chat.completions.create(
        model=settings.LLM_MODEL,
        messages=[
            {"role": "system", "content": "你是一个文本精简专家。"},
            {"role": "user", "content": PROMPTS[kind].format(budget=budget, content=text)},
        ],
        temperature=0,
    )
    output = (reply.choices[0].message.content or "").strip()
    output = re.sub(r"^```(?:markdown|md)?\s*\n(.*?)\n```$", r"\1", output, flags=re.S)
    return fit(clean(output), budget)


# --------------------------------------------------------------------------------------
# Cache and the public entry points
# --------------------------------------------------------------------------------------


@dataclass
class Compiled:
    kind: str
    text: str
    tokens: int
    source_tokens: int
    budget: int
    method: str  # "rules" or "llm:<model>"
    cached: bool = False
    error: str = ""  # why the LLM was not used, when it failed

    def to_dict(self) -> dict:
        return asdict(self)


def _cache_path(key: str):
    folder = settings.CACHE_DIR / "compiled"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{key}.json"


def _cache_key(kind: str, text: str, budget: int, method: str) -> str:
    raw = json.dumps([RULES_VERSION, kind, budget, method, cards.normalise(text)])
    return hashlib.sha256(raw.encode()).hexdigest()


def _cached(key: str) -> dict | None:
    try:
        return json.loads(_cache_path(key).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def compile_card(kind: str, text: str, budget: int, *, refresh: bool = False) -> Compiled:
    """The compact form of one card (kind: persona or user), from the cache when possible."""
    source_tokens = estimate_tokens(text)
    method = f"llm:{settings.LLM_MODEL}" if llm.configured() else "rules"
    key = _cache_key(kind, text, budget, method)
    if not refresh and (hit := _cached(key)):
        return Compiled(kind, hit["text"], hit["tokens"], source_tokens, budget, method, True)
    error = ""
    if method == "rules" or not clean(text):
        output = compile_rules(text, budget)
    else:
        try:
            output = compile_llm(kind, text, budget)
        except Exception as exc:  # any endpoint failure: the rules still give a usable card
            log.warning("LLM card compile failed, using rules: %s", exc)
            output, error, method = compile_rules(text, budget), str(exc)[:300], "rules"
    result = Compiled(kind, output, estimate_tokens(output), source_tokens, budget, method)
    result.error = error
    if not error:  # a failure is not cached: the next call tries the endpoint again
        cards.atomic_write(_cache_path(key), json.dumps({"text": output, "tokens": result.tokens}))
    return result


def split_budget(persona_need: int, user_need: int, total: int) -> tuple[int, int]:
    """Half each; what one card does not need, the other may use."""
    if persona_need + user_need <= total:
        persona = persona_need + (total - persona_need - user_need) // 2
        return persona, total - persona
    half = total // 2
    if persona_need <= half:
        return persona_need, total - persona_need
    if user_need <= half:
        return total - user_need, user_need
    return total - half, half


@dataclass
class Profile:
    persona: Compiled
    user: Compiled
    budget: int

    @property
    def tokens(self) -> int:
        return self.persona.tokens + self.user.tokens

    def to_dict(self) -> dict:
        return {
            "persona_card": self.persona.text,
            "user_card": self.user.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "persona": self.persona.to_dict(),
            "user": self.user.to_dict(),
        }


def compiled_profile(
    budget: int | None = None, *, refresh: bool = False, texts: dict | None = None
) -> Profile:
    """The persona and user cards as injected: what /api/v1/profile and context assembly use.
    `texts` gives the cards' text instead of reading them (the cards as they were once)."""
    total = budget if budget is not None else settings.CARDS_TOKEN_BUDGET
    if texts is None:
        texts = {"persona": cards.read("persona"), "user": cards.read("user")}
    persona_text, user_text = texts["persona"], texts["user"]
    persona_budget, user_budget = split_budget(
        estimate_tokens(clean(persona_text)), estimate_tokens(clean(user_text)), total
    )
    return Profile(
        compile_card("persona", persona_text, persona_budget, refresh=refresh),
        compile_card("user", user_text, user_budget, refresh=refresh),
        total,
    )
