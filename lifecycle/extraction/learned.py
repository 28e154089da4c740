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


def turn_vector(turn: ConversationTurn) -> np.ndarray | None:
    """The turn's e5 passage vector, reusing the index's; None when nothing can embed."""
    if get_embedder().name.startswith(LocalEmbedder.family):  # the index holds e5 vectors
        if (vector := stored_vectors([turn.pk]).get(turn.pk)) is not None:
            return vector
        try:
            indexing.reindex_one(Kind.TURN, turn.pk)  # what the index job would do next
        except EmbeddingError as exc:
            log.info("turn %s: not embedded (%s)", turn.pk, exc)
        if (vector := stored_vectors([turn.pk]).get(turn.pk)) is not None:
            return vector
    try:
        return LocalEmbedder().passages([turn.content])[0]
    except EmbeddingError as exc:
        log.info("turn %s: the learned extractor has no vector (%s)", turn.pk, exc)
        return None


def stored_vectors(turn_ids: list[int]) -> dict[int, np.ndarray]:
    """The index's current e5 vectors of these turns (none unless it holds e5 vectors), in
    one statement."""
    if not turn_ids or not get_embedder().name.startswith(LocalEmbedder.family):
        return {}
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT d.object_id, v.embedding FROM search_vecf v JOIN {SearchDoc._meta.db_table} d "
            "ON d.id = v.doc_id WHERE d.kind = %s AND d.embedded_hash = d.content_hash "
            "AND d.object_id IN (SELECT value FROM json_each(%s))",
            [Kind.TURN, "[" + ",".join(str(int(i)) for i in turn_ids) + "]"],
        )
        rows = cur.fetchall()
    found = {pk: np.frombuffer(bytes(blob), dtype=np.float32) for pk, blob in rows}
    return {pk: v for pk, v in found.items() if v.shape == (model.DIMENSION,)}


def candidates(turn: ConversationTurn, vector: np.ndarray | None = None) -> list[Candidate]:
    """The learned extractor's candidate for the turn, or [] (not accepted, no model)."""
    found = model.load()
    if found is None:
        return []
    vector = turn_vector(turn) if vector is None else vector
    if vector is None:
        return []
    return _candidate(turn, found.decide(vector.reshape(1, -1), [turn.content])[0], found)


def batch_candidates(
    turns: list[ConversationTurn], known: dict[int, np.ndarray]
) -> dict[int, list[Candidate]]:
    """`candidates` for many turns with one decision over their matrix of vectors: `known`
    holds vectors indexing just made (turn id -> vector); the others are read from the index
    in one statement, and what neither has is embedded here in one call."""
    found = model.load()
    if found is None or not turns:
        return {}
    ours = get_embedder().name.startswith(LocalEmbedder.family)
    vectors = {pk: v for pk, v in known.items() if ours and v.shape == (model.DIMENSION,)}
    vectors.update(stored_vectors([t.pk for t in turns if t.pk not in vectors]))
    missing = [t for t in turns if t.pk not in vectors]
    if missing:
        try:
            made = LocalEmbedder().passages([t.content for t in missing])
            vectors.update((t.pk, v) for t, v in zip(missing, made, strict=True))
        except EmbeddingError as exc:
            log.info("%d turns: the learned extractor has no vector (%s)", len(missing), exc)
    ready = [t for t in turns if t.pk in vectors]
    if not ready:
        return {}
    matrix = np.vstack([vectors[t.pk] for t in ready])
    decisions = found.decide(matrix, [t.content for t in ready])
    return {t.pk: _candidate(t, d, found) for t, d in zip(ready, decisions, strict=True)}


def _candidate(turn: ConversationTurn, decision: model.Decision, found) -> list[Candidate]:
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
