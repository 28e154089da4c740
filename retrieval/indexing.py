"""Keeping search_fts and search_vec in step with the searchable items.

Every searchable item has one SearchDoc; its id is the FTS5 rowid and the vec0 key. Text
is hashed so re-indexing an unchanged item costs nothing and stale vectors can be found.
Vectors are only written while the configured embedder matches the recorded
EmbeddingSpace: vectors of two models are never mixed (see `vector_state`).
"""

import hashlib
import re
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from curator.models import Attachment, ConversationTurn, Episode, Fact
from retrieval import text as seg
from retrieval.embedders import get_embedder
from retrieval.models import EmbeddingSpace, Kind, SearchDoc

MODELS = {
    Kind.FACT: Fact,
    Kind.EPISODE: Episode,
    Kind.TURN: ConversationTurn,
    Kind.ATTACHMENT: Attachment,
}


def document_text(kind: str, obj) -> str:
    """The text a person would search an item by."""
    if kind == Kind.FACT:
        parts = [obj.subject, obj.predicate, obj.content, " ".join(obj.tags or [])]
    elif kind == Kind.EPISODE:
        parts = [obj.summary, obj.goal, " ".join(obj.entities or []), " ".join(obj.tags or [])]
    elif kind == Kind.TURN:
        parts = [obj.content]
    else:
        parts = [
            obj.original_name,
            obj.description,
            obj.transcription,
            obj.extracted_text,
            " ".join(obj.tags or []),
        ]
    return "\n".join(p for p in parts if p)


def owner_of(kind: str, obj) -> int:
    return obj.session.owner_id if kind == Kind.TURN else obj.owner_id


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class VectorState:
    ok: bool
    model: str
    dimension: int
    reason: str = ""


def table_dimension() -> int:
    """The dimension search_vec was created with (read from its CREATE statement)."""
    with connection.cursor() as cur:
        cur.execute("SELECT sql FROM sqlite_master WHERE name = 'search_vec'")
        row = cur.fetchone()
    match = re.search(r"float\[(\d+)\]", row[0] if row else "")
    return int(match.group(1)) if match else 0


def vector_state() -> VectorState:
    """Whether vectors can be written and searched with the configured embedder."""
    emb = get_embedder()
    space = EmbeddingSpace.objects.first()
    if space and space.model_name != emb.name:
        reason = f"vectors were made by {space.model_name}; reindex to use {emb.name}"
        return VectorState(False, emb.name, emb.dimension, reason)
    if (held := table_dimension()) != emb.dimension:
        reason = f"the vector table holds {held}-d vectors, {emb.name} makes {emb.dimension}-d"
        return VectorState(False, emb.name, emb.dimension, reason)
    return VectorState(True, emb.name, emb.dimension)


def _record_space(state: VectorState) -> None:
    if not EmbeddingSpace.objects.exists():
        EmbeddingSpace.objects.create(model_name=state.model, dimension=state.dimension)


def _write_fts(doc_id: int, body: str) -> None:
    with connection.cursor() as cur:
        cur.execute("DELETE FROM search_fts WHERE rowid = %s", [doc_id])
        cur.execute(
            "INSERT INTO search_fts(rowid, tokens) VALUES (%s, %s)", [doc_id, seg.segment(body)]
        )


def _write_vec(doc: SearchDoc, vector) -> None:
    # vec0 has no INSERT OR REPLACE: delete, then insert.
    with connection.cursor() as cur:
        cur.execute("DELETE FROM search_vec WHERE doc_id = %s", [doc.id])
        cur.execute(
            "INSERT INTO search_vec(doc_id, embedding, kind, owner_id) VALUES (%s, %s, %s, %s)",
            [doc.id, vector.astype("float32").tobytes(), doc.kind, doc.owner_id],
        )


def index_items(kind: str, objects: list, embed: bool = True) -> int:
    """(Re)index items whose text changed; returns how many documents were written."""
    state = vector_state() if embed else None
    todo = []
    with transaction.atomic():
        for obj in objects:
            body = document_text(kind, obj)
            doc, _ = SearchDoc.objects.get_or_create(
                kind=kind,
                object_id=obj.pk,
                defaults={"owner_id": owner_of(kind, obj), "content_hash": ""},
            )
            digest = text_hash(body)
            if doc.content_hash != digest or doc.fts_at is None:
                _write_fts(doc.id, body)
                doc.content_hash, doc.fts_at = digest, timezone.now()
                doc.save(update_fields=["content_hash", "fts_at"])
            if state and state.ok and doc.vector_stale:
                todo.append((doc, body))
    if todo:
        _embed(todo, state)
    return len(objects)


def _embed(todo: list, state: VectorState) -> None:
    # The model runs outside the transaction so a slow embedder never holds the write lock.
    vectors = get_embedder().passages([body for _, body in todo])
    with transaction.atomic():
        _record_space(state)
        for (doc, _), vector in zip(todo, vectors, strict=True):
            _write_vec(doc, vector)
            doc.embedded_hash, doc.embedded_at = doc.content_hash, timezone.now()
            doc.save(update_fields=["embedded_hash", "embedded_at"])


def remove_item(kind: str, object_id: int) -> None:
    doc = SearchDoc.objects.filter(kind=kind, object_id=object_id).first()
    if doc is None:
        return
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("DELETE FROM search_fts WHERE rowid = %s", [doc.id])
        cur.execute("DELETE FROM search_vec WHERE doc_id = %s", [doc.id])
        doc.delete()


def index_all(embed: bool = True, batch: int = 64) -> int:
    """Index every searchable item (unchanged ones are skipped cheaply)."""
    total = 0
    for kind, model in MODELS.items():
        queryset = model.objects.select_related("session") if kind == Kind.TURN else model.objects
        objs = list(queryset.order_by("pk"))
        for start in range(0, len(objs), batch):
            total += index_items(kind, objs[start : start + batch], embed=embed)
    return total


def stored_vector_count() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM search_vec")
        return cur.fetchone()[0]


def reindex_one(kind: str, object_id: int) -> None:
    """Bring one item's index rows up to date; a vanished item leaves the indexes."""
    obj = MODELS[Kind(kind)].objects.filter(pk=object_id).first()
    if obj is None:
        remove_item(kind, object_id)
    else:
        index_items(kind, [obj])


def schedule(kind: str, object_id: int) -> None:
    """Queue re-indexing once the surrounding transaction commits (never for rolled-back rows)."""
    from lifecycle.tasks import index_item

    transaction.on_commit(lambda: index_item(kind, object_id))
