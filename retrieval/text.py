"""Segmentation for the keyword index and safe FTS5 query building (no Django here).

Chinese has no spaces, so unicode61 alone would index whole sentences as one token.
Both the indexed text and the query go through jieba's search mode, and the query is
rebuilt from quoted tokens so user input can never be parsed as FTS5 syntax.

A second column holds CJK character unigrams and bigrams: it finds Chinese words jieba cut
differently in the text and in the query (names, new words), which measured 3-5 points of
recall on Chinese beside jieba words (docs/retrieval.md). A third, `context`, holds a
conversation turn's previous turn in jieba tokens; the query's tokens search it too.
"""

import functools
import hashlib
import logging
import multiprocessing
import re
import threading
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import jieba

jieba.setLogLevel(logging.INFO)

# Bump when tokens(), grams() or the stopwords change: every FTS row is then out of date.
SEGMENTER_REV = "2"

# Small lists measured in notes/retrieval.md: they help BM25 and keep OR queries short.
STOPWORDS = frozenset(
    "我 你 他 她 它 的 了 是 在 和 与 及 或 也 都 就 而 但 呢 吗 吧 啊 呀 着 过 "
    "把 被 让 给 对 从 向 这 那 "
    "这个 那个 一个 我们 你们 他们 什么 怎么 还 又 很 会 要 能 有 没有 不 之 其 "
    # Words about recalling, not about the thing recalled (they trigger long-term memory).
    "之前 以前 上次 上回 那次 记得 还记得 曾经 说过 提过 聊过 remember recall previously "
    "a an the and or but if of to in on at by for with from as is are was were be been being "
    "it its this that these those i you he she we they me my your our their his her them "
    "do does did have has had will would can could should shall may might must not no "
    "so than too very just also about into over under up down out off then there here what "
    "which who whom when where why how all any some such only own same other each few more "
    "most s t don now am".split()
)
# Single characters too common to say anything as a unigram (bigrams keep them).
STOPCHARS = frozenset(
    "我你他她它的了是在和与及或也都就而但呢吗吧啊呀着过把被让给对从向这那之其有不么个们"
)
# A query is cut to this many distinct terms per column: beyond it BM25 gains nothing
# measurable and an OR over hundreds of posting lists only costs time.
MAX_QUERY_TERMS = 256

_WORD = re.compile(r"\w", re.UNICODE)
# jieba cuts a text one block at a time (a run of CJK/Latin word characters, or what lies
# between two runs), each block on its own, so a block always cuts the same way. Blocks
# repeat (every English word is one), so cutting each distinct block once gives jieba's
# output exactly: 5 times as fast on LoCoMo's English turns, about the same on Chinese
# dialogue (docs/performance.md#indexing-a-history).
_BLOCK = jieba.re_han_default
# Distinct blocks remembered: at most about 6 MB (the bench's long Chinese blocks; English
# words take far less); 2,000 kept most of the gain (docs/performance.md).
BLOCK_CACHE = 10_000
# Bumped after each dictionary change: a block cut while the change was under way is
# remembered under the old number, so it is never read again.
_generation = 0
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff]+")
_lock = threading.Lock()
_user_words: dict[str, None] = {}


def configure(cache_dir: Path, user_dict: Path | None = None) -> None:
    """Point jieba's cache at an existing folder (or it silently never writes it)."""
    if not str(cache_dir):
        return
    with _lock:
        cache_dir.mkdir(parents=True, exist_ok=True)
        jieba.dt.tmp_dir = str(cache_dir)
    if user_dict is not None and user_dict.exists():
        use_words(user_dict.read_text(encoding="utf-8").split("\n"))


def use_words(lines: Iterable[str]) -> None:
    """Make jieba keep exactly these words whole (earlier user words not listed are dropped)."""
    wanted = dict.fromkeys(w for w in (line.split()[0] for line in lines if line.split()) if w)
    with _lock:
        for word in _user_words.keys() - wanted.keys():
            jieba.del_word(word)
        for word in wanted.keys() - _user_words.keys():
            jieba.add_word(word)
        if wanted.keys() != _user_words.keys():
            _forget_blocks()
        _user_words.clear()
        _user_words.update(wanted)


def _forget_blocks() -> None:
    """Blocks cut with the old dictionary are cut again (called after jieba changed)."""
    global _generation
    _generation += 1
    _block_words.cache_clear()


def user_words() -> list[str]:
    """The person's dictionary words jieba keeps whole now."""
    with _lock:
        return list(_user_words)


def segment_pairs(texts: list[str], words: list[str] | None = None) -> list[tuple[str, str]]:
    """(segment, segment_grams) of each text; with `words`, the user dictionary they are cut
    with (a helper process checks it on every call: a dictionary edited meanwhile applies)."""
    if words is not None and set(words) != set(user_words()):
        use_words(words)
    return [(segment(t), segment_grams(t)) for t in texts]


def _start_helper(cache_dir: str, words: list[str]) -> None:
    configure(Path(cache_dir))
    use_words(words)
    segment("预热 warm-up")  # jieba's dictionary, before the first batch


def helper() -> ProcessPoolExecutor:
    """A process that segments beside this one, for bulk indexing: jieba is pure Python, so
    on two cores the second one is otherwise idle. Spawned, not forked: the caller may run
    threads (the task consumer does), and a fork copies their locks mid-use."""
    return ProcessPoolExecutor(
        1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_helper,
        initargs=(str(jieba.dt.tmp_dir or ""), user_words()),
    )


def version() -> str:
    """Names the segmentation in use: the rules revision plus the person's dictionary."""
    raw = SEGMENTER_REV + "\n" + "\n".join(sorted(_user_words))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def words(text: str) -> list[str]:
    """jieba's search-mode cut, lower-cased, with punctuation and spaces dropped."""
    out: list[str] = []
    for block in _BLOCK.split(text or ""):
        if block:
            out.extend(_block_words(block, _generation))
    return out


@functools.lru_cache(maxsize=BLOCK_CACHE)
def _block_words(block: str, generation: int) -> tuple[str, ...]:
    """words() of one block: what jieba.cut_for_search makes of it alone, which is what it
    makes of it inside any text (jieba splits texts into these blocks first)."""
    cut = (w.strip().lower() for w in jieba.cut_for_search(block))
    return tuple(w for w in cut if w and _WORD.search(w))


def tokens(text: str) -> list[str]:
    """Lower-cased search tokens without punctuation or stopwords."""
    return [w for w in words(text) if w not in STOPWORDS]


def grams(text: str) -> list[str]:
    """CJK character unigrams and bigrams in text order (minus the commonest characters)."""
    out: list[str] = []
    for run in _CJK_RUN.findall(text or ""):
        out.extend(ch for ch in run if ch not in STOPCHARS)
        pairs = (run[i : i + 2] for i in range(len(run) - 1))
        out.extend(p for p in pairs if not (p[0] in STOPCHARS and p[1] in STOPCHARS))
    return out


def segment(text: str) -> str:
    """The space-joined token string stored in the FTS5 `tokens` column."""
    return " ".join(tokens(text))


def segment_grams(text: str) -> str:
    """The space-joined grams stored in the FTS5 `grams` column."""
    return " ".join(grams(text))


def query_terms(terms: Iterable[str]) -> list[str]:
    """The distinct terms a query keeps, in order (at most MAX_QUERY_TERMS)."""
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


def _quoted(terms: Iterable[str]) -> list[str]:
    return ['"' + t.replace('"', '""') + '"' for t in query_terms(terms)]


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression built only from quoted tokens ('' when nothing is left)."""
    return " OR ".join(_quoted(tokens(text)))


def match_expression(text: str, use_grams: bool = True) -> str:
    """The MATCH for every column: jieba tokens against `tokens` and `context` (a turn's
    previous turn), grams against `grams`.

    Every term is quoted, so no input can be read as FTS5 syntax; '' when nothing is left.
    """
    return match_terms(tokens(text), grams(text) if use_grams else [])


def match_terms(token_list: list[str], gram_list: list[str]) -> str:
    """match_expression for terms already chosen (see backends.prune_terms)."""
    parts = []
    if quoted := _quoted(token_list):
        parts.append("{tokens context} : (" + " OR ".join(quoted) + ")")
    if quoted := _quoted(gram_list):
        parts.append("grams : (" + " OR ".join(quoted) + ")")
    return " OR ".join(parts)


_ASCII = re.compile(r"[a-z0-9_]+")


def shared_tokens(query: str, text: str, query_tokens: list[str] | None = None) -> list[str]:
    """The query's tokens that occur in the text (what the keyword index matched on).

    A substring test, not a second segmentation: cheap enough for every result, and it
    finds a Chinese word wherever jieba cut the text. Latin tokens must start a word.
    """
    return _token_finder(tuple(query_tokens if query_tokens is not None else tokens(query)))(text)


@functools.lru_cache(maxsize=64)
def _token_finder(query_tokens: tuple[str, ...]):
    """shared_tokens for one query's tokens, their patterns compiled once: a search asks it of
    each of its results, and looking each pattern up in re's cache was most of its cost."""
    checks = [
        (token, re.compile(r"(?<![a-z0-9_])" + re.escape(token)).search
         if _ASCII.fullmatch(token) else None)
        for token in dict.fromkeys(query_tokens)
    ]  # fmt: skip

    def found(text: str) -> list[str]:
        haystack = (text or "").lower()
        return [t for t, search in checks if (search(haystack) if search else t in haystack)]

    return found
