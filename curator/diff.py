"""Highlighted differences between two texts, for conflicts and history (no Django models).

Chinese has no spaces, so the diff works on tokens: one token per CJK character, whole
words for Latin script, runs of spaces and single punctuation marks.
"""

import re
from difflib import SequenceMatcher

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|\w+|\s+|[^\w\s]", re.UNICODE)
_LATIN_END, _LATIN_START = (
    re.compile(r"[^\W\u3400-\u9fff\uf900-\ufaff]$"),
    re.compile(r"^[^\W\u3400-\u9fff\uf900-\ufaff]"),
)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text or "")


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """SequenceMatcher's opcodes, with a blank kept between two changes folded into them:
    "Switched from VS Code" -> "Now uses" is one removal and one addition, not word by word
    interleaved around the shared spaces."""
    codes = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    out: list[tuple[str, int, int, int, int]] = []
    for n, (op, i1, i2, j1, j2) in enumerate(codes):
        blank = op == "equal" and not "".join(a[i1:i2]).strip()
        next_changes = n + 1 < len(codes) and codes[n + 1][0] != "equal"
        if out and out[-1][0] != "equal" and (op != "equal" or (blank and next_changes)):
            out[-1] = ("replace", out[-1][1], i2, out[-1][3], j2)
        else:
            out.append((op, i1, i2, j1, j2))
    return out


def _gap(removed: str, added: str) -> str:
    """A space between a removed and an added Latin word, so they never read as one."""
    return " " if _LATIN_END.search(removed) and _LATIN_START.search(added) else ""


def diff_pair(old: str, new: str) -> tuple[SafeString, SafeString]:
    """(old with removals marked <del>, new with additions marked <ins>), HTML-escaped."""
    a, b = tokens(old), tokens(new)
    left, right = [], []
    for op, i1, i2, j1, j2 in _opcodes(a, b):
        old_part, new_part = escape("".join(a[i1:i2])), escape("".join(b[j1:j2]))
        if op == "equal":
            left.append(old_part)
            right.append(new_part)
            continue
        if old_part:
            left.append(f"<del>{old_part}</del>")
        if new_part:
            right.append(f"<ins>{new_part}</ins>")
    return mark_safe("".join(left)), mark_safe("".join(right))


def inline_diff(old: str, new: str) -> SafeString:
    """One line: removals and additions interleaved, for timelines."""
    a, b = tokens(old), tokens(new)
    out = []
    for op, i1, i2, j1, j2 in _opcodes(a, b):
        removed, added = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            out.append(escape(removed))
            continue
        if removed:
            out.append(f"<del>{escape(removed)}</del>")
        if removed and added:
            out.append(_gap(removed, added))
        if added:
            out.append(f"<ins>{escape(added)}</ins>")
    return mark_safe("".join(out))
