"""Segmentation for the keyword index and safe FTS5 query building (no Django here).

Chinese has no spaces, so unicode61 alone would index whole sentences as one token.
Both the indexed text and the query go through jieba's search mode, and the query is
rebuilt from quoted tokens so user input can never be parsed as FTS5 syntax.
"""

import logging
import re
import threading
from pathlib import Path

import jieba

jieba.setLogLevel(logging.INFO)

# Small lists measured in notes/retrieval.md: they help BM25 and keep OR queries short.
STOPWORDS = frozenset(
    "我 你 他 她 它 的 了 是 在 和 与 及 或 也 都 就 而 但 呢 吗 吧 啊 呀 着 过 "
    "把 被 让 给 对 从 向 这 那 "
    "这个 那个 一个 我们 你们 他们 什么 怎么 还 又 很 会 要 能 有 没有 不 之 其 "
    "a an the and or but if of to in on at by for with from as is are was were be been being "
    "it its this that these those i you he she we they me my your our their his her them "
    "do does did have has had will would can could should shall may might must not no "
    "so than too very just also about into over under up down out off then there here what "
    "which who whom when where why how all any some such only own same other each few more "
    "most s t don now am".split()
)
_WORD = re.compile(r"\w", re.UNICODE)
_lock = threading.Lock()


def configure(cache_dir: Path, user_dict: Path | None = None) -> None:
    """Point jieba's cache at an existing folder (or it silently never writes it)."""
    with _lock:
        cache_dir.mkdir(parents=True, exist_ok=True)
        jieba.dt.tmp_dir = str(cache_dir)
        if user_dict is not None and user_dict.exists():
            jieba.load_userdict(str(user_dict))


def tokens(text: str) -> list[str]:
    """Lower-cased search tokens without punctuation or stopwords."""
    words = (w.strip().lower() for w in jieba.cut_for_search(text or ""))
    return [w for w in words if w and _WORD.search(w) and w not in STOPWORDS]


def segment(text: str) -> str:
    """The space-joined token string stored in the FTS5 column."""
    return " ".join(tokens(text))


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression built only from quoted tokens ('' when nothing is left)."""
    unique = dict.fromkeys(tokens(text))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)
