"""Text normalisation for memory content (no Django here).

Two functions with different jobs:
- `normalise_text` is what gets stored and shown: trimmed, whitespace collapsed, full-width
  letters and digits folded, and punctuation given the width its neighbourhood expects
  (full-width after Chinese, half-width after Latin), so "住在杭州,在杭州工作" and
  "住在杭州，在杭州工作" are stored the same way.
- `content_key` is what gets compared: the normalised text with punctuation folded to one
  width, case folded and whitespace removed. Two candidates with the same key are "the same
  content" for duplicates (boost) and for "the person already rejected this".
"""

import re
import unicodedata

# half-width -> full-width for the punctuation that exists in both forms in running text
_PAIRS = {",": "，", ";": "；", ":": "：", "!": "！", "?": "？", "(": "（", ")": "）", ".": "。"}
_TO_HALF = {full: half for half, full in _PAIRS.items()}
_FOLD_KEY = str.maketrans({**_TO_HALF, "、": ",", "【": "[", "】": "]", "“": '"', "”": '"'})
_HSPACE = re.compile(r"[^\S\n]+")
_FINAL = ".!?;,"


def is_cjk(ch: str) -> bool:
    """Han, kana, hangul or CJK punctuation: text after it takes full-width punctuation."""
    if not ch:
        return False
    code = ord(ch)
    return (
        0x3000 <= code <= 0x303F
        or 0xFF00 <= code <= 0xFFEF
        or 0x3400 <= code <= 0x9FFF
        or 0xF900 <= code <= 0xFAFF
        or 0x3040 <= code <= 0x30FF
        or 0xAC00 <= code <= 0xD7AF
        or 0x20000 <= code <= 0x2FFFF
    )


def _fold_width(ch: str) -> str:
    """Full-width letters and digits and the ideographic space become their ASCII forms."""
    code = ord(ch)
    if 0xFF10 <= code <= 0xFF19 or 0xFF21 <= code <= 0xFF3A or 0xFF41 <= code <= 0xFF5A:
        return chr(code - 0xFEE0)
    return " " if ch == "\u3000" else ch


def _collapse(text: str) -> str:
    """Runs of spaces become one, lines are trimmed, blank lines go."""
    lines = (_HSPACE.sub(" ", line).strip() for line in text.replace("\r", "\n").split("\n"))
    return "\n".join(line for line in lines if line)


def _prev_char(chars: list[str], i: int) -> str:
    j = i - 1
    while j >= 0 and chars[j] == " ":
        j -= 1
    return chars[j][-1] if j >= 0 else ""


def _next_char(chars: list[str], i: int) -> str:
    return chars[i + 1] if i + 1 < len(chars) else ""


def _unify_punctuation(text: str) -> str:
    """Give each punctuation mark the width of the script it follows.

    Parentheses close in the width they opened with, and a period only turns into 。 where
    it ends a Chinese clause, so "3.12", "e.g." and URLs keep their dots.
    """
    chars = list(text)
    opened: list[str] = []
    for i, ch in enumerate(chars):
        half = _TO_HALF.get(ch, ch)
        if half not in _PAIRS:
            continue
        prev, nxt = _prev_char(chars, i), _next_char(chars, i)
        if half == ")":
            full = opened.pop() == "full" if opened else is_cjk(prev)
        elif half == ".":
            if ch == "." and is_cjk(prev) and (not nxt or nxt in " \n" or is_cjk(nxt)):
                full = True
            elif ch == "。" and prev and not is_cjk(prev) and (not nxt or not is_cjk(nxt)):
                full = False
            else:
                full = ch == "。"
        else:
            full = is_cjk(prev) or (half == "(" and not prev and is_cjk(nxt))
            if half == "(":
                opened.append("full" if full else "half")
        chars[i] = _PAIRS[half] if full else half
        if not full and ch != half and half in ",;:!?" and nxt.isalnum() and not is_cjk(nxt):
            chars[i] += " "  # a full-width mark carried its own space; the ASCII one needs one
    return "".join(chars)


def normalise_text(text: str, keep_punctuation: bool = False) -> str:
    """The stored form of a piece of memory text.

    `keep_punctuation`: text a person wrote keeps its marks as typed ("Python。" stays), so
    what is stored is what they approved; only an agent's text gets the widths unified.
    """
    folded = "".join(_fold_width(ch) for ch in unicodedata.normalize("NFC", text or ""))
    collapsed = _collapse(folded)
    return collapsed if keep_punctuation else _unify_punctuation(collapsed)


def normalise_label(text: str) -> str:
    """Subjects, predicates and tags: one line, trimmed, single spaces.

    They are keys, not running text: a colon is the ASCII separator ": " whatever script it
    follows, so "event: 团建活动: scale", "event: 团建活动：scale" and "event: 团建活动:scale"
    are one predicate (the write path finds what a statement supersedes by it)."""
    label = _HSPACE.sub(" ", normalise_text(text).replace("\n", " ")).strip()
    return re.sub(r"\s*：\s*", ": ", label).strip()


def content_key(text: str) -> str:
    """The comparison form: same key = same content, whatever the widths, case or spacing."""
    folded = normalise_text(text).translate(_FOLD_KEY).casefold()
    return re.sub(r"\s+", "", folded).rstrip(_FINAL)


def split_tags(text: str) -> list[str]:
    """'a, b，c' -> ['a', 'b', 'c'] (commas of either width)."""
    return [t.strip() for t in (text or "").replace("，", ",").split(",") if t.strip()]
