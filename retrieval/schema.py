"""The current DDL of the search tables that code rebuilds: the vector tables, which
`reset_vectors` recreates when a reindex switches models or dimensions, and the keyword
index's change-log triggers.

Migrations keep their own frozen copies (a migration must not change when this file does);
tests/test_keywords.py checks that these still match what the migrations created.
"""

VECF_SQL = "CREATE TABLE search_vecf (doc_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)"
# search_vecf's changes go to search_vec_log (migration 0006), for retrieval.matrix.
VECF_TRIGGERS = [
    "CREATE TRIGGER search_vecf_added AFTER INSERT ON search_vecf "
    "BEGIN INSERT INTO search_vec_log(doc_id) VALUES (new.doc_id); END",
    "CREATE TRIGGER search_vecf_removed AFTER DELETE ON search_vecf "
    "BEGIN INSERT INTO search_vec_log(doc_id) VALUES (old.doc_id); END",
    "CREATE TRIGGER search_vecf_changed AFTER UPDATE ON search_vecf "
    "BEGIN INSERT INTO search_vec_log(doc_id) VALUES (new.doc_id); END",
]
RELOAD_ALL = "INSERT INTO search_vec_log(doc_id) VALUES (NULL)"
# search_fts's changes go to search_fts_log (migration 0008), for retrieval.keywords; a
# recreated search_fts (bench/recall.py's tokenizer experiments) needs them again.
FTS_TRIGGERS = [
    "CREATE TRIGGER search_fts_added AFTER INSERT ON search_fts_content "
    "BEGIN INSERT INTO search_fts_log(doc_id) VALUES (new.id); END",
    "CREATE TRIGGER search_fts_removed AFTER DELETE ON search_fts_content "
    "BEGIN INSERT INTO search_fts_log(doc_id) VALUES (old.id); END",
    "CREATE TRIGGER search_fts_changed AFTER UPDATE ON search_fts_content "
    "BEGIN INSERT INTO search_fts_log(doc_id) VALUES (new.id); END",
]


def vec_sql(dimension: int) -> str:
    return (
        "CREATE VIRTUAL TABLE search_vec USING vec0("
        "doc_id integer primary key, owner_id integer partition key, "
        f"embedding float[{int(dimension)}] distance_metric=cosine, bits bit[{int(dimension)}], "
        "kind text, live integer, expires integer, ts integer, session_id integer)"
    )
