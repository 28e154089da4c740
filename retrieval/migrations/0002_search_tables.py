"""The two search indexes live beside the data, keyed by SearchDoc.id.

search_fts holds jieba-segmented tokens (space-joined) so unicode61 can split Chinese;
search_vec holds one L2-normalised embedding per document (cosine distance), with kind and
owner as metadata columns so KNN can filter without a join. 384 is the dimension of the
default local embedder (multilingual-e5-small); a reindex under another model rebuilds it.
"""

from django.db import migrations

DEFAULT_DIMENSION = 384

FTS_SQL = "CREATE VIRTUAL TABLE search_fts USING fts5(tokens, tokenize='unicode61')"
VEC_SQL = (
    "CREATE VIRTUAL TABLE search_vec USING vec0("
    f"doc_id integer primary key, embedding float[{DEFAULT_DIMENSION}] distance_metric=cosine, "
    "kind text, owner_id integer)"
)


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0001_initial")]

    operations = [
        migrations.RunSQL(FTS_SQL, "DROP TABLE search_fts"),
        migrations.RunSQL(VEC_SQL, "DROP TABLE search_vec"),
    ]
