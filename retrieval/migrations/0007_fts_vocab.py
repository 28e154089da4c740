"""search_fts_vocab: how many documents hold each term, read by backends.prune_terms to leave
the commonest terms out of keyword queries on large collections."""

from django.db import migrations

CREATE = "CREATE VIRTUAL TABLE search_fts_vocab USING fts5vocab(search_fts, 'row')"
DROP = "DROP TABLE IF EXISTS search_fts_vocab"


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0006_vector_log")]
    operations = [migrations.RunSQL(CREATE, DROP)]
