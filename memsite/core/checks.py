"""Start-up checks that turn bad configuration into one plain sentence."""

import sqlean
from django.conf import settings
from django.core.checks import Error, register

from memsite.core.db.base import load_vec


@register()
def sqlite_extensions(app_configs, **kwargs):
    """The app cannot search without sqlite-vec and FTS5 in the SQLite driver."""
    try:
        conn = sqlean.connect(":memory:")
        load_vec(conn)
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        conn.close()
    except Exception as exc:  # any failure here means the same thing to the person
        return [
            Error(
                f"SQLite cannot load the sqlite-vec extension or FTS5 ({exc}).",
                hint="Reinstall the dependencies with `make clean run` "
                "(they come from the sqlean-py and sqlite-vec packages).",
                id="memsite.E001",
            )
        ]
    return []


@register()
def embedding_settings(app_configs, **kwargs):
    if settings.EMBEDDING_MODEL and settings.EMBEDDING_DIM <= 0:
        return [
            Error(
                f"MEMSITE_EMBEDDING_MODEL is {settings.EMBEDDING_MODEL!r} "
                "but MEMSITE_EMBEDDING_DIM (its vector size) is not set.",
                hint="Set MEMSITE_EMBEDDING_DIM, e.g. 1536 for text-embedding-3-small.",
                id="memsite.E002",
            )
        ]
    return []
