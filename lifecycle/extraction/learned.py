"""The learned extractor in the product: the turn's vector from the index, the model's
decision, a candidate for the write path.

The vector is the one indexing stores for the turn (search_vecf): when extraction runs first,
the turn is indexed now, so it is embedded once either way (the index job later finds it
current). With an embedding endpoint configured instead of the bundled e5, the stored vectors
are another model's: the turn is embedded with the bundled e5 engine for the model alone.
"""

from __future__ import annotations

import logging

import numpy as np
from django.db import connection
from django.utils import timezone

from curator.models import ConversationTurn, FactType, Scope, Source
from curator.writepath import Candidate
from lifecycle.extraction import model
from retrieval import indexing
from retrieval.embedders import EmbeddingError, LocalEmbedder, get_embedder
from retrieval.models import Kind, SearchDoc

log = logging.getLogger(__name__)
HEDGES = ("可能", "也许", "大概", "或许", "好像", "maybe", "perhaps", "probably", "i think",
          "i guess", "might")  # fmt: skip


def _stored(turn_id: int) -> np.ndarray | None:
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT v.embedding FROM search_vecf v JOIN {SearchDoc._meta.db_table} d "
            "ON d.id = v.doc_id WHERE d.kind = %s AND d.object_id = %s "
            "AND d.embedded_hash = d.content_hash",
            [Kind.TURN, turn_id],
        )
        row = cur.fetchone()
    if row is None:
        return None
    vector = np.frombuffer(bytes(row[0]), dtype=np.float32)
    return vector if vector.shape == (model.DIMENSION,) else None


def turn_vector(turn: ConversationTurn) -> np.ndarray | None:
    """The turn's e5 passage vector, reusing the index's; None when nothing can embed."""
    if get_embedder().name.startswith(LocalEmbedder.family):  # the index holds e5 vectors
        vector = _stored(turn.pk)
        if vector is not None:
            return vector
        try:
            indexing.reindex_one(Kind.TURN, turn.pk)  # what the index job would do next
        except EmbeddingError as exc:
            log.info("turn %s: not embedded (%s)", turn.pk, exc)
        vector = _stored(turn.pk)
        if vector is not None:
            return vector
    try:
        return LocalEmbedder().passages([turn.content])[0]
    except EmbeddingError as exc:
        log.info("turn %s: the learned extractor has no vector (%s)", turn.pk, exc)
        return None


def candidates(turn: ConversationTurn, vector: np.ndarray | None = None) -> list[Candidate]:
    """The learned extractor's candidate for the turn, or [] (not accepted, no model)."""
    found = model.load()
    if found is None:
        return []
    vector = turn_vector(turn) if vector is None else vector
    if vector is None:
        return []
    decision = found.decide(vector.reshape(1, -1), [turn.content])[0]
    if not decision.confidence:
        return []
    said_at = timezone.localtime(turn.timestamp)
    content = model.memory_text(turn.content, said_at, turn.session.owner.display_name)
    if not content:
        return []  # only questions, hypotheticals or small talk were said
    return [
        Candidate(
            content=content,
            type=decision.type if decision.type in FactType.values else FactType.FACT,
            scope=Scope.USER,
            confidence=_hedged(turn.content, decision.confidence, found),
            importance=0.5,
            source=Source.LEARNED,
            source_turn_id=turn.pk,
        )
    ]


def _hedged(text: str, confidence: float, found: model.Model) -> float:
    """ "Maybe I'll move to Berlin" waits for the person, as the rules' hedges do."""
    low = text.lower()
    if any(h in low for h in HEDGES):
        return min(confidence, model.CONFIDENCE_AT_WRITE - 0.01)
    return confidence
