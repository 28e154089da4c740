"""Segmentation and FTS query building: Chinese is split, user text never becomes syntax."""

import sqlean
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.text import fts_query, segment, tokens


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
