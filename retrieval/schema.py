"""The current DDL of the vector tables, for rebuilding them under a new embedding model.

Migrations keep their own frozen copies (a migration must not change when this file does);
this is what `reset_vectors` runs when a reindex switches models or dimensions.
"""

VECF_SQL = "CREATE TABLE search_vecf (doc_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)"


def vec_sql(dimension: int) -> str:
    return (
        "CREATE VIRTUAL TABLE search_vec USING vec0("
        "doc_id integer primary key, owner_id integer partition key, "
        f"embedding float[{int(dimension)}] distance_metric=cosine, bits bit[{int(dimension)}], "
        "kind text, live integer, expires integer, ts integer, session_id integer)"
    )
