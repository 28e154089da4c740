"""Start-up checks of the search index: the configured model against the stored vectors."""

from django.conf import settings
from django.core.checks import Error, Warning, register
from django.db import DatabaseError

from retrieval.indexing import stored_vector_count, vector_state
from retrieval.models import EmbeddingSpace


@register()
def stored_vectors_match(app_configs, **kwargs):
    """Same model, other dimension = a typo in the settings; another model = reindex needed."""
    if settings.EMBEDDING_MODEL and settings.EMBEDDING_DIM <= 0:
        return []  # memsite.E002 already says what to set
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
