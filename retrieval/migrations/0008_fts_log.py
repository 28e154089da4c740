"""search_fts_log: every change to the keyword index, in commit order, so each process's
in-memory keyword index (retrieval.keywords) can follow the database like the vector matrix
follows search_vec_log (retrieval.changelog).

FTS5 tables take no triggers, but FTS5 writes each row's text to its shadow table
search_fts_content with ordinary statements, whose triggers fire whatever process or code path
writes. The table is created with its epoch token; the index loads from search_fts itself.
"""

import secrets

from django.db import migrations

LOG = "CREATE TABLE search_fts_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, doc_id INTEGER)"
EPOCH = "CREATE TABLE search_fts_epoch (token TEXT NOT NULL)"
TRIGGERS = [
    "CREATE TRIGGER search_fts_added AFTER INSERT ON search_fts_content "
    "BEGIN INSERT INTO search_fts_log(doc_id) VALUES (new.id); END",
    "CREATE TRIGGER search_fts_removed AFTER DELETE ON search_fts_content "
    "BEGIN INSERT INTO search_fts_log(doc_id) VALUES (old.id); END",
    "CREATE TRIGGER search_fts_changed AFTER UPDATE ON search_fts_content "
    "BEGIN INSERT INTO search_fts_log(doc_id) VALUES (new.id); END",
]


def forward(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        cur.execute(LOG)
        cur.execute(EPOCH)
        cur.execute("INSERT INTO search_fts_epoch(token) VALUES (%s)", [secrets.token_hex(8)])
        for sql in TRIGGERS:
            cur.execute(sql)


def backward(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        for name in ("search_fts_added", "search_fts_removed", "search_fts_changed"):
            cur.execute(f"DROP TRIGGER IF EXISTS {name}")
        cur.execute("DROP TABLE search_fts_log")
        cur.execute("DROP TABLE search_fts_epoch")


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0007_fts_vocab")]
    operations = [migrations.RunPython(forward, backward)]
