"""Segmentation and FTS query building: Chinese is split, user text never becomes syntax."""

import re

import jieba
import pytest
import sqlean
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.text import (
    MAX_QUERY_TERMS,
    fts_query,
    grams,
    match_expression,
    segment,
    segment_grams,
    shared_tokens,
    tokens,
    use_words,
    user_words,
    words,
)


def test_chinese_is_segmented_into_words():
    assert segment("我明天在杭州面试") == "明天 杭州 面试"


def test_stopwords_and_punctuation_are_dropped():
    assert tokens("The user's 的、了！ editor?") == ["user", "editor"]


def test_queries_are_quoted_tokens_joined_by_or():
    assert fts_query('C++ end: value "abc *') == '"c++" OR "end" OR "value" OR "abc"'


def test_nothing_searchable_gives_an_empty_query():
    assert fts_query("") == fts_query("的了吗？") == fts_query("*") == ""


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_input_is_a_valid_fts5_query(text):
    conn = sqlean.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(tokens)")
    conn.execute("INSERT INTO t VALUES ('hello 世界')")
    query = fts_query(text)
    if query:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", [query]).fetchall()


# ------------------------------------------------------------------------------------------
# The two-column MATCH (jieba tokens + CJK grams) against hostile input
# ------------------------------------------------------------------------------------------

HOSTILE = [
    '"',
    '""',
    "'",
    "*",
    "-",
    "+",
    "^",
    ":",
    "NEAR(",
    "NEAR(a b, 3)",
    "a NEAR/2 b",
    "AND",
    "OR",
    "NOT",
    "a AND OR b",
    "tokens: x",
    "{tokens grams}: x",
    "grams : 杭州",
    "col:*",
    "(",
    ")",
    "((()))",
    "rowid = 1",
    "x* y*",
    "^abc",
    "'; DROP TABLE search_fts; --",
    "C++",
    "end: value",
    "😀🔥 emoji 表情😀",
    "\x00",
    "\u200b",
    "a" * 10_000,
    "杭" * 10_000,
    "测试 " * 3000,
]


def _fts_table():
    conn = sqlean.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(tokens, grams, context, tokenize='porter unicode61')"
    )
    conn.execute("INSERT INTO t VALUES ('hello world 杭州 面试', '杭 州 面 试 杭州 面试', '')")
    return conn


def test_chinese_text_also_gets_character_grams():
    assert grams("住在杭州") == ["住", "杭", "州", "住在", "在杭", "杭州"]
    assert grams("plain english") == []


def test_match_searches_tokens_with_turn_context_and_grams_in_their_own_columns():
    assert match_expression("杭州面试") == (
        '{tokens context} : ("杭州" OR "面试") OR '
        'grams : ("杭" OR "州" OR "面" OR "试" OR "杭州" OR "州面" OR "面试")'
    )
    assert match_expression("the editor") == '{tokens context} : ("editor")'
    assert match_expression("的了吗") == ""


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_input_never_breaks_the_match(text):
    query = match_expression(text)
    if query:
        _fts_table().execute("SELECT rowid FROM t WHERE t MATCH ?", [query]).fetchall()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))) | st.sampled_from(HOSTILE))
def test_any_input_is_a_valid_two_column_match(text):
    query = match_expression(text)
    if query:
        _fts_table().execute("SELECT rowid FROM t WHERE t MATCH ?", [query]).fetchall()


def test_query_terms_are_capped():
    query = match_expression(" ".join(f"word{i}" for i in range(1000)))
    assert query.count('"') == 2 * MAX_QUERY_TERMS


def test_shared_tokens_are_what_the_index_matched_on():
    assert shared_tokens("杭州 面试 editor", "他在杭州参加面试") == ["杭州", "面试"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "杭州", "面试"]), min_size=1),
    st.lists(
        st.sampled_from(["alpha", "beta", "gamma", "delta", "杭州", "面试"]), min_size=1, max_size=4
    ),
    st.sampled_from(["alpha", "beta", "gamma", "delta", "杭州", "面试"]),
)
def test_adding_a_matching_token_never_lowers_bm25_relevance(doc_words, query_words, extra):
    """The keyword channel's raw relevance (-bm25) of a document that contains `extra`."""
    conn = sqlean.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(tokens, grams, context)")
    body = " ".join([*doc_words, extra])
    conn.execute("INSERT INTO t VALUES (?, ?, '')", [segment(body), segment_grams(body)])
    conn.execute("INSERT INTO t VALUES ('other words here', '', '')")

    def relevance(text):
        query = match_expression(text)
        row = conn.execute(
            "SELECT -bm25(t, 1.0, 0.5, 0.6) FROM t WHERE t MATCH ? AND rowid = 1", [query]
        ).fetchone()
        return row[0] if row else 0.0

    base = " ".join(query_words)
    assert relevance(f"{base} {extra}") >= relevance(base) - 1e-9


# ------------------------------------------------------------------------------------------
# Segmenting each distinct block once (words are remembered) changes nothing jieba says
# ------------------------------------------------------------------------------------------


def _jieba_words(text: str) -> list[str]:
    """What words() returned before blocks were remembered: jieba over the whole text."""
    cut = (w.strip().lower() for w in jieba.cut_for_search(text))
    return [w for w in cut if w and re.search(r"\w", w)]


MIXED = st.text(
    alphabet=st.sampled_from(list("我明天在杭州面试北京大学生活李雷 abcXY12_.+#-，。!?\n\té")),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(MIXED, min_size=1, max_size=4))
def test_remembered_blocks_cut_every_text_as_jieba_does(texts):
    for text in texts + texts:  # the second pass reads every block from memory
        assert words(text) == _jieba_words(text)


def test_a_dictionary_word_applies_to_text_already_segmented():
    text, kept = "我们在蓝鲸湾科技园开会", user_words()
    before = words(text)
    assert "蓝鲸湾科技园" not in before
    try:
        use_words(["蓝鲸湾科技园"])
        assert "蓝鲸湾科技园" in words(text)
    finally:
        use_words(kept)
    assert words(text) == before
