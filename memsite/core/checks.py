"""Start-up checks that turn bad configuration into one plain sentence."""

import sqlean
from django.conf import settings
from django.core.checks import Error, Warning, register
from django.db import DatabaseError

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
    return _stored_vectors_match()


def _stored_vectors_match():
    """Same model, other dimension = a typo in the settings; another model = reindex needed."""
    from retrieval.indexing import stored_vector_count, vector_state
    from retrieval.models import EmbeddingSpace

    try:
        space = EmbeddingSpace.objects.first()
        state = vector_state()
        count = stored_vector_count()
    except DatabaseError:  # not migrated yet: nothing stored, nothing to compare
        return []
    if state.ok or not space or not count:
        return []
    if space.model_name == state.model:
        return [
            Error(
                f"MEMSITE_EMBEDDING_DIM is {state.dimension} but the {count} stored vectors of "
                f"{space.model_name} have {space.dimension} dimensions.",
                hint=f"Set MEMSITE_EMBEDDING_DIM={space.dimension}.",
                id="memsite.E003",
            )
        ]
    return [
        Warning(
            f"Search runs on keywords only: {state.reason}.",
            hint="Run `python manage.py reindex` (or use the button on the home page).",
            id="memsite.W001",
        )
    ]
