"""search_fts gets a third column, `context`: for a conversation turn, the jieba tokens of
the turn before it (retrieval.indexing.keyword_context), searched at a lower weight.

FTS5 tables cannot gain a column, so the table is rebuilt: rows are carried over and each
turn's context is filled from the turn before it, so search needs no reindex after upgrading.
"""

from django.db import migrations

FTS_V3 = (
    "CREATE VIRTUAL TABLE search_fts USING fts5(tokens, grams, context, tokenize='porter unicode61')"
)
FTS_V2 = "CREATE VIRTUAL TABLE search_fts USING fts5(tokens, grams, tokenize='porter unicode61')"
CONTEXT_CHARS = 1000

# Each turn's document with the content of the turn before it in the same session.
TURN_CONTEXT = """
SELECT d.id, (
    SELECT p.content FROM curator_conversationturn p
    WHERE p.session_id = t.session_id AND p.turn_index < t.turn_index
    ORDER BY p.turn_index DESC LIMIT 1
)
FROM retrieval_searchdoc d JOIN curator_conversationturn t ON t.id = d.object_id
WHERE d.kind = 'turn'
"""


def _rebuild(cur, ddl: str) -> None:
    cur.execute("CREATE TEMP TABLE fts_copy AS SELECT rowid AS id, tokens, grams FROM search_fts")
    cur.execute("DROP TABLE search_fts")
    cur.execute(ddl)
    cur.execute("INSERT INTO search_fts(rowid, tokens, grams) SELECT id, tokens, grams FROM fts_copy")
    cur.execute("DROP TABLE fts_copy")


def forward(apps, schema_editor):
    # The segmentation the live index uses, with the person's dictionary words.
    from retrieval import userdict
    from retrieval.text import segment

    userdict.ensure_loaded()
    with schema_editor.connection.cursor() as cur:
        _rebuild(cur, FTS_V3)
        cur.execute(TURN_CONTEXT)
        for doc_id, before in cur.fetchall():
            if before:
                cur.execute(
                    "UPDATE search_fts SET context = %s WHERE rowid = %s",
                    [segment(before[:CONTEXT_CHARS]), doc_id],
                )


def backward(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        _rebuild(cur, FTS_V2)


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0004_search_tables_v2")]

    operations = [migrations.RunPython(forward, backward)]
