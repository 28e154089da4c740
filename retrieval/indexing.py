"""Keeping search_fts, search_vec and search_vecf in step with the searchable items.

Every searchable item has one SearchDoc; its id is the FTS5 rowid and the vector key. Text
is hashed so re-indexing an unchanged item costs nothing and stale rows can be found; the
filter columns (status, expiry, time, session) are refreshed whenever they differ, even
when the text did not change, so whatever path changed an item, `reindex_one` after it
(or `schedule`) brings every index row up to date.

Vectors are only written while the configured embedder matches the recorded
EmbeddingSpace: vectors of two models are never mixed (see `vector_state`). Keywords are
committed before the embedder runs, so a slow or failing embedder never blocks keyword
search; `EmbeddingError` propagates so a queue can retry.
"""

import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone
from django.utils.translation import gettext as _

from curator.models import Attachment, ConversationTurn, Episode, Fact, Role, Session
from retrieval import schema, userdict
from retrieval import text as seg
from retrieval.embedders import LocalEmbedder, get_embedder
from retrieval.model_names import adopt_unversioned
from retrieval.models import EmbeddingSpace, Kind, SearchDoc
from retrieval.reindex import reindex

log = logging.getLogger(__name__)

MODELS = {
    Kind.FACT: Fact,
    Kind.EPISODE: Episode,
    Kind.TURN: ConversationTurn,
    Kind.ATTACHMENT: Attachment,
}
# Items that happened at a time and in a session: time and session filters apply to these.
EVENT_KINDS = (Kind.EPISODE, Kind.TURN, Kind.ATTACHMENT)
NEVER = 2**62  # the vector index's "expires" for items that never expire
CONTEXT_CHARS = 1000  # of the turn before, indexed with a turn (keyword_context)
ACTIVE = "active"


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


def item_time(kind: str, obj) -> datetime:
    """When an item happened (time filters) or last changed (facts)."""
    if kind == Kind.FACT:
        return obj.updated_at or obj.created_at
    if kind == Kind.TURN:
        return obj.timestamp
    if kind == Kind.EPISODE:
        return obj.started_at
    return obj.created_at


@dataclass(frozen=True)
class Meta:
    """The filter columns of an item as the indexes hold them."""

    owner_id: int
    status: str
    expires_at: datetime | None
    ts: datetime
    session_id: int | None

    @classmethod
    def of(cls, kind: str, obj) -> "Meta":
        fact = kind == Kind.FACT
        return cls(
            owner_of(kind, obj),
            obj.status if fact else ACTIVE,
            obj.expires_at if fact else None,
            item_time(kind, obj),
            None if fact else obj.session_id,
        )

    @classmethod
    def of_doc(cls, doc: SearchDoc) -> "Meta":
        return cls(doc.owner_id, doc.status, doc.expires_at, doc.ts, doc.session_id)

    def vec_params(self) -> list:
        """live, expires, ts, session_id as the vector index stores them (integers)."""
        expires = int(self.expires_at.timestamp()) if self.expires_at else NEVER
        return [int(self.status == ACTIVE), expires, _epoch(self.ts), self.session_id or 0]


def _epoch(value: datetime | None) -> int:
    return int(value.timestamp()) if value else 0


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class VectorState:
    ok: bool
    model: str
    dimension: int
    reason: str = ""
    broken: bool = False  # a failure (table missing), not a known state like a model change


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
    if space and space.model_name != emb.name and not adopt_unversioned(space, emb, _sample):
        reason = _("vectors were made by %(old)s; reindex to use %(new)s") % {
            "old": space.model_name,
            "new": emb.name,
        }
        return VectorState(False, emb.name, emb.dimension, reason)
    if (held := table_dimension()) == 0:
        return VectorState(False, emb.name, emb.dimension, "no such table: search_vec", True)
    if held != emb.dimension:
        reason = _("the vector table holds %(held)d-d vectors, %(name)s makes %(dim)d-d") % {
            "held": held,
            "name": emb.name,
            "dim": emb.dimension,
        }
        return VectorState(False, emb.name, emb.dimension, reason)
    return VectorState(True, emb.name, emb.dimension)


def _sample(limit: int = 8) -> list[tuple[str, np.ndarray]] | None:
    """Up to `limit` stored vectors with the text each was made from (model_names checks them
    against the model in use): [] when no vector is stored, None when none can be checked."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT doc_id, embedding FROM search_vecf ORDER BY doc_id LIMIT %s", [limit * 8]
        )
        rows = cur.fetchall()
    docs = SearchDoc.objects.in_bulk([doc_id for doc_id, _ in rows])
    pairs = []
    for doc_id, blob in rows:
        doc = docs.get(doc_id)
        obj = doc and queryset(doc.kind).filter(pk=doc.object_id).first()
        body = obj and document_text(doc.kind, obj)
        if body and text_hash(body) == doc.embedded_hash:  # the very text behind the vector
            pairs.append((body, np.frombuffer(bytes(blob), dtype=np.float32)))
            if len(pairs) == limit:
                break
    return pairs if pairs or not rows else None


_space_lock = threading.Lock()
_space_snapshot: tuple[float, VectorState, np.ndarray | None] | None = None


def search_space() -> tuple[VectorState, np.ndarray | None]:
    """vector_state() and the sign-bit centre for searching, re-read at most every
    SEARCH_STATE_TTL seconds. Both change only on a model switch (or once, when the centre is
    first computed), and reading them took about 1 ms of every search. A change made in this
    process clears the snapshot at once (signals below); one made by another process (a
    reindex in the task consumer) is seen within the TTL. Writes never use the snapshot."""
    global _space_snapshot
    now = time.monotonic()
    with _space_lock:
        snapshot = _space_snapshot
    if snapshot and now - snapshot[0] < settings.SEARCH_STATE_TTL:
        return snapshot[1], snapshot[2]
    state = vector_state()
    center = center_of(EmbeddingSpace.objects.only("center").first()) if state.ok else None
    with _space_lock:
        _space_snapshot = (now, state, center)
    return state, center


@receiver([post_save, post_delete], sender=EmbeddingSpace)
def forget_search_space(**kwargs) -> None:
    global _space_snapshot
    with _space_lock:
        _space_snapshot = None


def _record_space(state: VectorState) -> EmbeddingSpace:
    space = EmbeddingSpace.objects.first()
    if space is None:
        space = EmbeddingSpace.objects.create(model_name=state.model, dimension=state.dimension)
    return space


# Sign bits are taken after subtracting the mean vector (see EmbeddingSpace.center). The mean
# is computed once, when this many vectors exist (enough for a stable estimate; the bits are
# only searched far above it, see SEARCH_EXACT_MAX), and never changes until a model switch.
CENTER_MIN = 500


def center_of(space: EmbeddingSpace | None):
    if space is None or not space.center:
        return None
    return np.frombuffer(bytes(space.center), dtype=np.float32)


def sign_bits(vector, center) -> bytes:
    shifted = vector if center is None else vector - center
    return np.packbits(shifted > 0).tobytes()


def keyword_context(
    kind: str, obj, batch: dict | None = None, keys: dict[int, str] | None = None
) -> str:
    """For a conversation turn, the turn before it and its memory keys; '' for everything
    else.

    An answer ("Yes, last Friday!") rarely repeats the words it answers, so a turn is also
    found by the words of the turn before, in a column of its own at a lower weight
    (backends.CONTEXT_WEIGHT). On LoCoMo this took R@5 from .551 to .607 (docs/retrieval.md).
    `batch`: (session id, turn index) -> content of the turns indexed together, so a batch's
    turns find the one before among themselves instead of a query each. `keys`: turn_keys()
    of the batch (else read for this turn).
    """
    if kind != Kind.TURN:
        return ""
    before = (batch or {}).get((obj.session_id, obj.turn_index - 1))
    if before is None:
        before = (
            MODELS[Kind.TURN]
            .objects.filter(session_id=obj.session_id, turn_index__lt=obj.turn_index)
            .order_by("-turn_index")
            .values_list("content", flat=True)
            .first()
        )
    own = (keys if keys is not None else turn_keys([obj])).get(obj.pk, "")
    return _context(before or "", own)


def _context(before: str, own_keys: str) -> str:
    return "\n".join(p for p in (before[:CONTEXT_CHARS], own_keys) if p)


# Of the memories extracted from a turn, kept in its keyword row's context column.
MEMORY_KEY_CHARS = 1000
NAME_KEY = True  # the person's name keys their own turns


def turn_keys(turns: list) -> dict[int, str]:
    """turn id -> what the turn is found by beyond its own words and the turn before
    (memory keys, in the context column): the memories extracted from it (subject,
    predicate and content, where extraction wrote relative times as dates: "(last week:
    2023-05-08)") and, for the person's own turns, the name they go by (the owner's display
    name, which extraction writes their memories with: "Evan took their family to Jasper"
    keys "Last weekend I took my family ..."). Two statements for the whole batch."""
    if not turns:
        return {}
    sessions = {t.session_id for t in turns if t.role == Role.USER}
    names = dict(
        Session.objects.filter(pk__in=sessions).values_list("pk", "owner__display_name")
    ) if sessions else {}  # fmt: skip
    keys: dict[int, list[str]] = {}
    for t in turns:
        if NAME_KEY and t.role == Role.USER and (name := (names.get(t.session_id) or "").strip()):
            keys.setdefault(t.pk, []).append(name)
    facts = Fact.objects.filter(source_turn_id__in=[t.pk for t in turns]).order_by("pk")
    for fact in facts.only("source_turn_id", "subject", "predicate", "content", "tags"):
        keys.setdefault(fact.source_turn_id, []).append(document_text(Kind.FACT, fact))
    return {pk: "\n".join(parts)[:MEMORY_KEY_CHARS] for pk, parts in keys.items()}


def refresh_memory_keys(turn_ids: Iterable[int]) -> None:
    """Rewrite the keyword rows of these turns (their context: the turn before and their
    memory keys), after a memory extracted from them was written, changed or deleted. A turn
    not indexed yet gets its keys when it is."""
    turns = list(queryset(Kind.TURN).filter(pk__in=set(turn_ids)))
    docs = {
        d.object_id: d
        for d in SearchDoc.objects.filter(
            kind=Kind.TURN, object_id__in=[t.pk for t in turns], fts_at__isnull=False
        )
    }
    keys = turn_keys([t for t in turns if t.pk in docs])
    for turn in turns:
        if doc := docs.get(turn.pk):
            _write_fts(doc.id, document_text(Kind.TURN, turn), keyword_context(
                Kind.TURN, turn, keys=keys))  # fmt: skip


@receiver(post_delete, sender=Fact)
def _memory_deleted(sender, instance, **kwargs) -> None:
    """A deleted memory no longer keys its turn."""
    if instance.source_turn_id:
        refresh_memory_keys([instance.source_turn_id])


def _write_fts(doc_id: int, body: str, context: str = "") -> None:
    with connection.cursor() as cur:
        cur.execute("DELETE FROM search_fts WHERE rowid = %s", [doc_id])
        cur.execute(
            "INSERT INTO search_fts(rowid, tokens, grams, context) VALUES (%s, %s, %s, %s)",
            [doc_id, seg.segment(body), seg.segment_grams(body), seg.segment(context)],
        )


def _refresh_next_turn(turn) -> None:
    """A turn that arrived after the one following it (agents may send them out of order) is
    that one's context: rewrite its keyword row. In order, there is no next turn yet; a row
    that already holds this turn as its context (an import stores a conversation in order,
    each row written with its predecessor) is left as it is."""
    following = (
        MODELS[Kind.TURN]
        .objects.filter(session_id=turn.session_id, turn_index__gt=turn.turn_index)
        .order_by("turn_index")
        .first()
    )
    doc = following and SearchDoc.objects.filter(kind=Kind.TURN, object_id=following.pk).first()
    if doc and doc.fts_at is not None:
        context = _context(turn.content, turn_keys([following]).get(following.pk, ""))
        with connection.cursor() as cur:
            cur.execute("SELECT context FROM search_fts WHERE rowid = %s", [doc.id])
            row = cur.fetchone()
        if row is not None and row[0] == seg.segment(context):
            return
        with transaction.atomic():
            _write_fts(doc.id, document_text(Kind.TURN, following), context)


def delete_vec(doc_id: int) -> None:
    with connection.cursor() as cur:
        cur.execute("DELETE FROM search_vec WHERE doc_id = %s", [doc_id])
        cur.execute("DELETE FROM search_vecf WHERE doc_id = %s", [doc_id])


def _write_vec(doc: SearchDoc, vector, center=None) -> None:
    _write_vecs([(doc, vector)], center)


_INSERT_VEC = (
    "INSERT INTO search_vec(doc_id, owner_id, embedding, bits, kind, live, expires, ts, "
    "session_id) VALUES (%s, %s, %s, vec_bit(%s), %s, %s, %s, %s, %s)"
)


def _write_vecs(pairs: list, center=None) -> None:
    """(doc, vector) pairs: each statement prepared once for the batch (executemany), not
    four statements compiled per vector."""
    # vec0 has no INSERT OR REPLACE (and cannot UPDATE a bit column): delete, then insert.
    rows, plain, ids = [], [], []
    for doc, vector in pairs:
        vector = np.asarray(vector, dtype=np.float32)
        blob = vector.tobytes()
        params = [doc.id, doc.owner_id, blob, sign_bits(vector, center), doc.kind]
        rows.append(params + Meta.of_doc(doc).vec_params())
        plain.append((doc.id, blob))
        ids.append((doc.id,))
    with connection.cursor() as cur:
        cur.executemany("DELETE FROM search_vec WHERE doc_id = %s", ids)
        cur.executemany("DELETE FROM search_vecf WHERE doc_id = %s", ids)
        cur.executemany(_INSERT_VEC, rows)
        cur.executemany("INSERT INTO search_vecf(doc_id, embedding) VALUES (%s, %s)", plain)


def ensure_center(space: EmbeddingSpace) -> None:
    """Once enough vectors exist: store their mean and rewrite every row's sign bits with it."""
    if space.center or stored_vector_count() < CENTER_MIN:
        return
    total, count = None, 0
    with connection.cursor() as cur:
        cur.execute("SELECT embedding FROM search_vecf")
        while rows := cur.fetchmany(2000):
            block = np.vstack([np.frombuffer(bytes(r[0]), dtype=np.float32) for r in rows])
            total = block.sum(axis=0) if total is None else total + block.sum(axis=0)
            count += len(rows)
    center = (total / count).astype(np.float32)
    space.center = center.tobytes()
    space.save(update_fields=["center"])
    docs = SearchDoc.objects.in_bulk(list(_vector_ids()))
    with connection.cursor() as cur:
        cur.execute("SELECT doc_id, embedding FROM search_vecf")
        rows = cur.fetchall()
    pairs = [(docs[i], np.frombuffer(bytes(b), dtype=np.float32)) for i, b in rows if i in docs]
    _write_vecs(pairs, center)


def _vector_ids() -> set[int]:
    with connection.cursor() as cur:
        cur.execute("SELECT doc_id FROM search_vecf")
        return {row[0] for row in cur.fetchall()}


def _update_vec_meta(doc: SearchDoc) -> None:
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE search_vec SET live = %s, expires = %s, ts = %s, session_id = %s "
            "WHERE doc_id = %s",
            [*Meta.of_doc(doc).vec_params(), doc.id],
        )


def _docs_for(kind: str, objects: list) -> tuple[dict[int, SearchDoc], set[int]]:
    """The SearchDocs of a batch (created where missing) and the ids that are new."""
    ids = "[" + ",".join(str(int(obj.pk)) for obj in objects) + "]"
    # Raw and keyed (unique_search_doc): every memory the write path saves asks, and
    # compiling the ORM's query cost more than running it.
    docs = {d.object_id: d for d in SearchDoc.objects.raw(_DOCS_OF, [kind, ids])}
    fresh = [obj for obj in objects if obj.pk not in docs]
    if fresh:
        try:
            with transaction.atomic():
                made = _insert_docs(kind, fresh)
        except IntegrityError:  # another process indexed one of them meanwhile
            made = [
                SearchDoc.objects.get_or_create(
                    kind=kind,
                    object_id=o.pk,
                    defaults={
                        "owner_id": owner_of(kind, o),
                        "content_hash": "",
                        "ts": item_time(kind, o),
                    },
                )[0]
                for o in fresh
            ]
        docs.update((d.object_id, d) for d in made)
    return docs, {obj.pk for obj in fresh}


_DOCS_BY_ID = (
    f"SELECT * FROM {SearchDoc._meta.db_table} WHERE id IN (SELECT value FROM json_each(%s))"
)
_DOCS_OF = (
    f"SELECT * FROM {SearchDoc._meta.db_table} WHERE kind = %s "
    "AND object_id IN (SELECT value FROM json_each(%s))"
)
# Rows per INSERT: 5 parameters each, well under SQLite's 32,766.
_INSERT_ROWS = 1000


def _insert_docs(kind: str, fresh: list) -> list[SearchDoc]:
    """New SearchDocs of a batch in one INSERT ... RETURNING per 1,000 rows: the ORM's
    bulk_create compiled each value through its field (a third of keyword indexing)."""
    table, adapt, made = SearchDoc._meta.db_table, connection.ops.adapt_datetimefield_value, []
    with connection.cursor() as cur:
        for start in range(0, len(fresh), _INSERT_ROWS):
            part = fresh[start : start + _INSERT_ROWS]
            rows = [(kind, o.pk, owner_of(kind, o), adapt(item_time(kind, o))) for o in part]
            cur.execute(
                f"INSERT INTO {table} (kind, object_id, owner_id, ts, content_hash, "
                "fts_version, embedded_hash, status) VALUES "
                + ", ".join(["(%s, %s, %s, %s, '', '', '', 'active')"] * len(rows))
                + " RETURNING id, object_id",
                [value for row in rows for value in row],
            )
            ids = dict((object_id, pk) for pk, object_id in cur.fetchall())
            made += [_new_doc(ids[o.pk], kind, o) for o in part]
    return made


def _new_doc(pk: int, kind: str, obj) -> SearchDoc:
    """The SearchDoc _insert_docs wrote, as the ORM reads one back (from_db's positional
    construction: keyword arguments cost twice as much, 20,000 times in a 20k build)."""
    values = {
        **_NEW_DOC,
        "id": pk,
        "kind": kind,
        "object_id": obj.pk,
        "owner_id": owner_of(kind, obj),
        "ts": item_time(kind, obj),
    }
    return SearchDoc.from_db(connection.alias, _FIELDS, [values[f] for f in _FIELDS])


_FIELDS = [f.attname for f in SearchDoc._meta.concrete_fields]
# What _insert_docs leaves in the other columns (the model's defaults).
_NEW_DOC = {f.attname: f.get_default() for f in SearchDoc._meta.concrete_fields}


_DOC_COLUMNS = (
    "content_hash fts_version fts_at embedded_hash embedded_at owner_id status expires_at ts "
    "session_id"
).split()
_DATE_COLUMNS = {"fts_at", "embedded_at", "expires_at", "ts"}


class _Writes:
    """A batch's index writes, gathered per item and run as a few statements at the end:
    one statement per item each (FTS delete and insert, a SearchDoc save) cost more than
    segmenting the text, about 1,000 items/s in all (docs/performance.md)."""

    def __init__(self):
        self.fts: list[tuple] = []  # (doc id, tokens, grams, context)
        self.docs: dict[int, SearchDoc] = {}  # SearchDocs to save, every column
        self.vec_dropped: list[int] = []
        self.vec_meta: list[SearchDoc] = []

    def run(self) -> None:
        with connection.cursor() as cur:
            for doc_id in self.vec_dropped:
                delete_vec(doc_id)
            if self.fts:
                ids = "[" + ",".join(str(row[0]) for row in self.fts) + "]"
                cur.execute(
                    "DELETE FROM search_fts WHERE rowid IN (SELECT value FROM json_each(%s))", [ids]
                )
                cur.executemany(
                    "INSERT INTO search_fts(rowid, tokens, grams, context) VALUES (%s, %s, %s, %s)",
                    self.fts,
                )
            if self.docs:
                cur.executemany(_UPDATE_DOC, [_doc_values(d) for d in self.docs.values()])
            for doc in self.vec_meta:
                _update_vec_meta(doc)


def _doc_values(doc: SearchDoc) -> list:
    adapt = connection.ops.adapt_datetimefield_value
    values = [
        adapt(getattr(doc, c)) if c in _DATE_COLUMNS else getattr(doc, c) for c in _DOC_COLUMNS
    ]
    return [*values, doc.id]


_UPDATE_DOC = (
    f"UPDATE {SearchDoc._meta.db_table} SET "
    + ", ".join(f"{c} = %s" for c in _DOC_COLUMNS)
    + " WHERE id = %s"
)


def _sync_doc(
    kind: str,
    obj,
    version: str,
    doc: SearchDoc,
    created: bool,
    writes: _Writes,
    now,
    segmented: dict | None = None,
    batch: dict | None = None,
    keys: dict | None = None,
) -> SearchDoc:
    """Bring one item's SearchDoc and keyword row up to date (its writes go to `writes`;
    `segmented` may hold its text's segmentation, made beside this process)."""
    body, meta = document_text(kind, obj), Meta.of(kind, obj)
    digest, changed = text_hash(body), False
    if doc.owner_id != meta.owner_id or (doc.content_hash != digest and doc.embedded_hash):
        writes.vec_dropped.append(doc.id)  # an outdated vector must never be found by its old text
        doc.embedded_hash, doc.embedded_at, changed = "", None, True
    if doc.content_hash != digest or doc.fts_version != version or doc.fts_at is None:
        context = keyword_context(kind, obj, batch, keys)
        tokens, grams = (segmented or {}).get(body) or (seg.segment(body), seg.segment_grams(body))
        writes.fts.append((doc.id, tokens, grams, seg.segment(context)))
        doc.content_hash, doc.fts_version, doc.fts_at, changed = digest, version, now, True
    if created or Meta.of_doc(doc) != meta:
        doc.owner_id, doc.status, doc.expires_at = meta.owner_id, meta.status, meta.expires_at
        doc.ts, doc.session_id, changed = meta.ts, meta.session_id, True
        if doc.embedded_hash:
            writes.vec_meta.append(doc)
    if changed:
        writes.docs[doc.id] = doc
    return doc


def index_items(
    kind: str,
    objects: Iterable,
    embed: bool = True,
    segmented: dict | None = None,
    vectors: dict | None = None,
    ahead: Future | None = None,
) -> int:
    """(Re)index items: keywords and filters now, vectors for changed text; returns the count.
    `segmented`: text -> (tokens, grams) already made (a bulk reindex's helper process);
    `vectors`: filled with object id -> the vector written now (what extraction reuses);
    `ahead`: text -> vector being made meanwhile (`_embed_ahead`)."""
    objects = list(objects)
    userdict.ensure_loaded()
    version = seg.version()
    state = vector_state() if embed else None
    todo, writes, now = [], _Writes(), timezone.now()
    turns = kind == Kind.TURN
    batch = {(o.session_id, o.turn_index): o.content for o in objects} if turns else None
    with transaction.atomic():
        docs, created = _docs_for(kind, objects)
        keys = turn_keys(objects) if turns else None
        for obj in objects:
            doc = _sync_doc(
                kind, obj, version, docs[obj.pk], obj.pk in created, writes, now, segmented,
                batch, keys,
            )  # fmt: skip
            if state and state.ok and doc.vector_stale:
                todo.append((doc, document_text(kind, obj)))
        writes.run()
        if kind == Kind.FACT:  # a memory whose words changed keys its turn anew
            rewritten = {row[0] for row in writes.fts}
            keyed = {o.source_turn_id for o in objects if docs[o.pk].id in rewritten}
            if keyed - {None}:
                refresh_memory_keys(keyed - {None})
    if todo and (written := _embed(todo, state, ahead)) and vectors is not None:
        vectors.update(written)
    return len(objects)


def _embed(todo: list, state: VectorState, ahead: Future | None = None) -> dict:
    """Embed and write the vectors of `todo`; returns object id -> the vector written.
    `ahead`: text -> vector made meanwhile; what it lacks (or all, if it failed) is embedded
    here, so a failure raises here as it would without it."""
    # The model runs outside the transaction so a slow embedder never holds the write lock.
    try:
        ready = ahead.result() if ahead is not None else {}
    except Exception as exc:  # embedded again below, where a failure counts
        log.info("embedding ahead failed (%s); embedding in this thread", exc)
        ready = {}
    missing = [body for _, body in todo if body not in ready]
    made = iter(get_embedder().passages(missing) if missing else ())
    vectors = [ready[body] if body in ready else next(made) for _, body in todo]
    with transaction.atomic():
        space = _record_space(state)
        center = center_of(space)
        ids = "[" + ",".join(str(doc.id) for doc, _ in todo) + "]"
        current = {d.id: d for d in SearchDoc.objects.raw(_DOCS_BY_ID, [ids])}
        now, embedded = connection.ops.adapt_datetimefield_value(timezone.now()), []
        written, pairs = {}, []
        for (doc, _), vector in zip(todo, vectors, strict=True):
            fresh = current.get(doc.id)
            if fresh is None or fresh.content_hash != doc.content_hash:
                continue  # edited or deleted while we embedded: its own reindex handles it
            pairs.append((fresh, vector))
            embedded.append((fresh.content_hash, now, fresh.id))
            written[fresh.object_id] = vector
        _write_vecs(pairs, center)
        with connection.cursor() as cur:  # one statement, not a save() per item
            cur.executemany(
                f"UPDATE {SearchDoc._meta.db_table} SET embedded_hash = %s, embedded_at = %s "
                "WHERE id = %s",
                embedded,
            )
        ensure_center(space)
    return written


def remove_item(kind: str, object_id: int) -> None:
    doc = SearchDoc.objects.filter(kind=kind, object_id=object_id).first()
    if doc is None:
        return
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("DELETE FROM search_fts WHERE rowid = %s", [doc.id])
        delete_vec(doc.id)
        doc.delete()


def queryset(kind: str):
    """The items of a kind, with what document_text and owner_of need loaded."""
    model = MODELS[Kind(kind)]
    return model.objects.select_related("session") if kind == Kind.TURN else model.objects.all()


def index_all(embed: bool = True, batch: int = 64) -> int:
    """Index every searchable item (unchanged ones are skipped cheaply); returns the count."""

    return reindex(embed=embed, batch=batch).examined


def stored_vector_count() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM search_vecf")
        return cur.fetchone()[0]


def reindex_one(kind: str, object_id: int) -> None:
    """Bring one item's index rows up to date; a vanished item leaves the indexes.

    Raises EmbeddingError after the keyword row is committed when the embedder fails,
    so a queue can retry the vector while keyword search already finds the item.
    """
    obj = queryset(kind).filter(pk=object_id).first()
    if obj is None:
        remove_item(kind, object_id)
        return
    if (doc := _keywords_current(kind, obj)) is None:
        index_items(kind, [obj])
    elif (state := vector_state()).ok and doc.vector_stale:  # only the vector is left to do
        _embed([(doc, document_text(kind, obj))], state)
    if kind == Kind.TURN:
        _refresh_next_turn(obj)


def _keywords_current(kind: str, obj) -> SearchDoc | None:
    """The item's SearchDoc when its keyword row and filter columns are up to date, as the
    write's own transaction left them (index_keywords_now), else None: the queued job then
    writes no keyword row again and takes no write lock for it, and only embeds."""
    userdict.ensure_loaded()
    doc = SearchDoc.objects.filter(kind=kind, object_id=obj.pk).first()
    if doc is None or doc.fts_at is None or doc.fts_version != seg.version():
        return None
    if doc.content_hash != text_hash(document_text(kind, obj)):
        return None
    return doc if Meta.of_doc(doc) == Meta.of(kind, obj) else None


def reindex_many(kind: str, object_ids: list[int]) -> dict[int, np.ndarray]:
    """`reindex_one` for a batch (a chat import's turns): the keyword rows in one transaction,
    the vectors in one embedder call; returns object id -> the vector written now (items
    already current are not embedded again and are not in it). Raises EmbeddingError, as
    `reindex_one` does, after the keyword rows are committed.

    The bundled engine embeds the batch in another thread while this one writes the keyword
    rows: the engine releases the interpreter lock, the keyword rows hold it, so the two
    overlap on two cores instead of following each other."""
    objects = list(queryset(kind).filter(pk__in=object_ids).order_by("pk"))
    for gone in set(object_ids) - {obj.pk for obj in objects}:
        remove_item(kind, gone)
    written: dict[int, np.ndarray] = {}
    if objects:
        index_items(kind, objects, vectors=written, ahead=_embed_ahead(kind, objects))
    if kind == Kind.TURN:
        # A turn followed by the next index in the batch is that one's context already (its
        # row was written with the batch); only the last of a run can be another's.
        held = {(t.session_id, t.turn_index) for t in objects}
        for turn in objects:
            if (turn.session_id, turn.turn_index + 1) not in held:
                _refresh_next_turn(turn)
    return written


# Threads that run the engine ahead (`_embed_ahead`); idle ones cost nothing. More than one,
# so that two workers' batches embed on both cores at once.
_AHEAD = ThreadPoolExecutor(max_workers=2, thread_name_prefix="embed-ahead")


def _embed_ahead(kind: str, objects: list) -> Future | None:
    """The texts of `objects` whose vector is not current, embedded in another thread by the
    bundled engine (text -> vector), or None. Not an endpoint's embedder: it keeps a cache in
    the database, which another thread must not use."""
    embedder = get_embedder()
    if not isinstance(embedder, LocalEmbedder):
        return None
    ids = "[" + ",".join(str(int(obj.pk)) for obj in objects) + "]"
    with connection.cursor() as cur:
        cur.execute(_EMBEDDED_HASHES, [kind, ids])
        embedded = dict(cur.fetchall())
    texts = {document_text(kind, obj): obj.pk for obj in objects}
    need = [t for t, pk in texts.items() if embedded.get(pk) != text_hash(t)]
    if not need or not vector_state().ok:
        return None

    def run() -> dict:
        return dict(zip(need, embedder.passages(need), strict=True))

    return _AHEAD.submit(run)


_EMBEDDED_HASHES = (
    f"SELECT object_id, embedded_hash FROM {SearchDoc._meta.db_table} WHERE kind = %s "
    "AND object_id IN (SELECT value FROM json_each(%s))"
)

_bulk = threading.local()


@contextmanager
def turn_keywords_later() -> Iterator[None]:
    """While a bulk of turns is stored in this thread (a chat import, lifecycle.turnbatch),
    their keyword rows are left to the batch that indexes them: one transaction for many,
    where writing each in its own write took three fifths of storing a turn. They are found by
    keywords once their batch ran (seconds behind, while the consumer runs), by vector with
    it, as a live turn is by vector."""
    outer = getattr(_bulk, "turns", False)
    _bulk.turns = True
    try:
        yield
    finally:
        _bulk.turns = outer


def index_keywords_now(sender, kind: str, object_id: int, instance=None, **kwargs) -> None:
    """The receiver of curator.signals.item_written: the item's keyword row in the write's
    own transaction, so keyword search finds a memory the moment it is written; its vector
    follows from the queue (index_item). A failure here never fails the write: the queued
    job indexes the item again. `instance`: the item as the writer just saved it (not read
    back)."""
    if kind == Kind.TURN and getattr(_bulk, "turns", False):
        return  # its batch writes it (turn_keywords_later)
    try:
        with transaction.atomic():  # a savepoint: a failed index write leaves the write whole
            obj = instance or queryset(kind).filter(pk=object_id).first()
            if obj is None:
                remove_item(kind, object_id)
            else:
                index_items(kind, [obj], embed=False)
    except Exception:
        log.exception("Keyword indexing of %s %s failed; the queue will retry it", kind, object_id)


def reset_vectors(dimension: int) -> None:
    """Empty the vector index for a new model (the only way vectors of two models never mix)."""
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS search_vec")
        cur.execute("DROP TABLE IF EXISTS search_vecf")
        cur.execute(schema.vec_sql(dimension))
        cur.execute(schema.VECF_SQL)
        for sql in schema.VECF_TRIGGERS:
            cur.execute(sql)
        cur.execute(schema.RELOAD_ALL)
        EmbeddingSpace.objects.all().delete()
        SearchDoc.objects.update(embedded_hash="", embedded_at=None)
    forget_search_space()
