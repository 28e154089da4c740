"""Small filters for the debugger: highlight matched tokens, show fractions as widths."""

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def highlight(text: str, tokens) -> str:
    """Escape the text and wrap every (case-insensitive) occurrence of a token in <mark>."""
    text = str(text or "")
    words = sorted({t for t in (tokens or []) if t and t.strip()}, key=len, reverse=True)
    if not words:
        return escape(text)
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    out, last = [], 0
    for m in pattern.finditer(text):
        out += [escape(text[last : m.start()]), "<mark>", escape(m.group(0)), "</mark>"]
        last = m.end()
    out.append(escape(text[last:]))
    return mark_safe("".join(out))


@register.filter
def percent(value, total=1) -> str:
    """A fraction as a CSS percentage (0-100, two decimals, never negative)."""
    try:
        share = float(value) / float(total or 1)
    except (TypeError, ValueError):
        return "0"
    return f"{max(0.0, min(1.0, share)) * 100:.2f}"


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None
