"""The current DDL of the vector tables, for rebuilding them under a new embedding model.

Migrations keep their own frozen copies (a migration must not change when this file does);
this is what `reset_vectors` runs when a reindex switches models or dimensions.
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


def vec_sql(dimension: int) -> str:
    return (
        "CREATE VIRTUAL TABLE search_vec USING vec0("
        "doc_id integer primary key, owner_id integer partition key, "
        f"embedding float[{int(dimension)}] distance_metric=cosine, bits bit[{int(dimension)}], "
        "kind text, live integer, expires integer, ts integer, session_id integer)"
    )
