"""Search tables, second shape: filter columns in the vector index, CJK grams, float copies.

- search_fts gets a second column, `grams`: the CJK character unigrams and bigrams of the
  text (measured to help Chinese recall beside jieba words; see README "Retrieval"), and
  the porter stemmer over unicode61 (English "meetings" finds "meeting"; +3 points of R@5
  on LoCoMo; it leaves CJK tokens alone).
- search_vec is partitioned by owner and carries the filter columns (kind, live, expires,
  ts, session_id) so KNN filters before its k; a `bits` column (sign bits) serves the fast
  approximate path for large collections.
- search_vecf keeps a plain float copy of each vector: rescoring the approximate path's
  candidates needs point lookups, which vec0 answers slowly (it scans).

Existing rows are carried over (vectors keep their model; their filter columns are
refreshed by the next `manage.py reindex`, which `reindex --check` reports as stale).
"""

import re

from django.db import migrations

FTS_V2 = "CREATE VIRTUAL TABLE search_fts USING fts5(tokens, grams, tokenize='porter unicode61')"
FTS_V1 = "CREATE VIRTUAL TABLE search_fts USING fts5(tokens, tokenize='unicode61')"
VECF = "CREATE TABLE search_vecf (doc_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)"


def vec_v2(dimension: int) -> str:
    return (
        "CREATE VIRTUAL TABLE search_vec USING vec0("
        "doc_id integer primary key, owner_id integer partition key, "
        f"embedding float[{dimension}] distance_metric=cosine, bits bit[{dimension}], "
        "kind text, live integer, expires integer, ts integer, session_id integer)"
    )


def vec_v1(dimension: int) -> str:
    return (
        "CREATE VIRTUAL TABLE search_vec USING vec0("
        f"doc_id integer primary key, embedding float[{dimension}] distance_metric=cosine, "
        "kind text, owner_id integer)"
    )


def _dimension(cur) -> int:
    cur.execute("SELECT sql FROM sqlite_master WHERE name = 'search_vec'")
    row = cur.fetchone()
    match = re.search(r"float\[(\d+)\]", row[0] if row else "")
    return int(match.group(1)) if match else 384


NEVER = 2**62  # "expires" of items that never expire: KNN filters with expires > now


def forward(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        dim = _dimension(cur)
        cur.execute("SELECT rowid, tokens FROM search_fts")
        fts_rows = cur.fetchall()
        cur.execute("SELECT doc_id, embedding, kind, owner_id FROM search_vec")
        vec_rows = cur.fetchall()
        cur.execute("DROP TABLE search_fts")
        cur.execute("DROP TABLE search_vec")
        cur.execute(FTS_V2)
        cur.execute(vec_v2(dim))
        cur.execute(VECF)
        for rowid, tokens in fts_rows:
            cur.execute(
                "INSERT INTO search_fts(rowid, tokens, grams) VALUES (%s, %s, '')", [rowid, tokens]
            )
        for doc_id, embedding, kind, owner_id in vec_rows:
            cur.execute(
                "INSERT INTO search_vec(doc_id, owner_id, embedding, bits, kind, live, expires, "
                "ts, session_id) VALUES (%s, %s, %s, vec_quantize_binary(%s), %s, 1, %s, 0, 0)",
                [doc_id, owner_id, embedding, embedding, kind, NEVER],
            )
            cur.execute(
                "INSERT INTO search_vecf(doc_id, embedding) VALUES (%s, %s)", [doc_id, embedding]
            )
    # Carried-over rows were segmented without grams: mark them for the next reindex.
    apps.get_model("retrieval", "SearchDoc").objects.update(fts_version="")


def backward(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        dim = _dimension(cur)
        cur.execute("SELECT rowid, tokens FROM search_fts")
        fts_rows = cur.fetchall()
        cur.execute("SELECT doc_id, embedding FROM search_vecf")
        vec_rows = cur.fetchall()
        cur.execute("DROP TABLE search_fts")
        cur.execute("DROP TABLE search_vec")
        cur.execute("DROP TABLE search_vecf")
        cur.execute(FTS_V1)
        cur.execute(vec_v1(dim))
        docs = apps.get_model("retrieval", "SearchDoc").objects.in_bulk(
            [doc_id for doc_id, _ in vec_rows]
        )
        for rowid, tokens in fts_rows:
            cur.execute("INSERT INTO search_fts(rowid, tokens) VALUES (%s, %s)", [rowid, tokens])
        for doc_id, embedding in vec_rows:
            if doc := docs.get(doc_id):
                cur.execute(
                    "INSERT INTO search_vec(doc_id, embedding, kind, owner_id) "
                    "VALUES (%s, %s, %s, %s)",
                    [doc_id, embedding, doc.kind, doc.owner_id],
                )


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0003_recall_log_and_filters")]

    operations = [migrations.RunPython(forward, backward)]
