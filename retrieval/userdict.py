"""The person's dictionary: words jieba should keep whole (names, projects, new words).

It is a plain text file in the data dir (`userdict.txt`, one word per line, jieba's format),
so it can also be edited by hand. Every process (web, consumer, command) reloads it when
the file changes; the keyword index is re-segmented by the next reindex, which `reindex
--check` reports as needed (the FTS rows remember which dictionary made them).
"""

import math
import re
import threading
import time
from pathlib import Path

from django.conf import settings
from django.utils.translation import gettext as _

from retrieval import text

MAX_WORD = 40
# How stale another process's edit may be when a search looks. A stat is cheap, but it
# releases the GIL, and getting it back behind the query-embedding worker cost searches
# 1.1 ms on average (bench/search.py at 10k).
SEARCH_MAX_AGE = 1.0
_lock = threading.Lock()
_loaded_mtime: float | None = None
_looked_at = -math.inf


class InvalidWord(ValueError):
    pass


def path() -> Path:
    return settings.DATA_DIR / "userdict.txt"


def words() -> list[str]:
    try:
        lines = path().read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return list(dict.fromkeys(line.split()[0] for line in lines if line.split()))


def ensure_loaded(max_age: float = 0.0) -> None:
    """Apply the file to this process's jieba if it changed since the last look (a stat),
    unless the last look is under max_age seconds old."""
    global _loaded_mtime, _looked_at
    if time.monotonic() - _looked_at < max_age:
        return
    _looked_at = time.monotonic()
    try:
        mtime = path().stat().st_mtime_ns
    except FileNotFoundError:
        mtime = 0
    if mtime == _loaded_mtime:
        return
    with _lock:
        text.use_words(words())
        _loaded_mtime = mtime


def clean_word(word: str) -> str:
    word = (word or "").strip()
    if not word or len(word) > MAX_WORD or re.search(r"\s", word) or not re.search(r"\w", word):
        raise InvalidWord(
            _("A dictionary word is one to %(max)d characters, with no spaces.") % {"max": MAX_WORD}
        )
    return word


def add(word: str) -> bool:
    """Add a word; False when it was already there."""
    word = clean_word(word)
    with _lock:
        current = words()
        if word in current:
            return False
        _write_unlocked([*current, word])
    ensure_loaded()
    return True


def remove(word: str) -> bool:
    with _lock:
        current = words()
        if word not in current:
            return False
        _write_unlocked([w for w in current if w != word])
    ensure_loaded()
    return True


def _write_unlocked(items: list[str]) -> None:
    target = path()
    tmp = target.with_suffix(".tmp")
    tmp.write_text("".join(f"{w}\n" for w in items), encoding="utf-8")
    tmp.replace(target)
