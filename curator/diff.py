"""Highlighted differences between two texts, for conflicts and history (no Django models).

Chinese has no spaces, so the diff works on tokens: one token per CJK character, whole
words for Latin script, runs of spaces and single punctuation marks.
"""

import re
from difflib import SequenceMatcher

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|\w+|\s+|[^\w\s]", re.UNICODE)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text or "")


def diff_pair(old: str, new: str) -> tuple[SafeString, SafeString]:
    """(old with removals marked <del>, new with additions marked <ins>), HTML-escaped."""
    a, b = tokens(old), tokens(new)
    left, right = [], []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
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
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape("".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return mark_safe("".join(out))
