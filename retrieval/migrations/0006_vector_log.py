"""search_vec_log: every change to search_vecf, in commit order, so each process's in-memory
vector matrix (retrieval.matrix) can follow the database without re-reading it.

Triggers fill it whatever process or code path writes a vector; a NULL doc_id means "reload
everything" (written after the tables are rebuilt for a new model). search_vec_epoch holds a
random token per log: a process holding a matrix built from another log (this migration
rolled back and forth) reloads instead of trusting sequence numbers that started over.
"""

import secrets


from django.db import migrations

LOG = "CREATE TABLE search_vec_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, doc_id INTEGER)"
EPOCH = "CREATE TABLE search_vec_epoch (token TEXT NOT NULL)"
TRIGGERS = [
    "CREATE TRIGGER search_vecf_added AFTER INSERT ON search_vecf "
    "BEGIN INSERT INTO search_vec_log(doc_id) VALUES (new.doc_id); END",
    "CREATE TRIGGER search_vecf_removed AFTER DELETE ON search_vecf "
    "BEGIN INSERT INTO search_vec_log(doc_id) VALUES (old.doc_id); END",
    "CREATE TRIGGER search_vecf_changed AFTER UPDATE ON search_vecf "
    "BEGIN INSERT INTO search_vec_log(doc_id) VALUES (new.doc_id); END",
]


def forward(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        cur.execute(LOG)
        cur.execute(EPOCH)
        cur.execute("INSERT INTO search_vec_epoch(token) VALUES (%s)", [secrets.token_hex(8)])
        for sql in TRIGGERS:
            cur.execute(sql)


def backward(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        for name in ("search_vecf_added", "search_vecf_removed", "search_vecf_changed"):
            cur.execute(f"DROP TRIGGER IF EXISTS {name}")
        cur.execute("DROP TABLE search_vec_log")
        cur.execute("DROP TABLE search_vec_epoch")


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0005_fts_turn_context")]
    operations = [migrations.RunPython(forward, backward)]
