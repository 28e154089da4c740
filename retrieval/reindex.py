"""Rebuilding and checking the search indexes (what `manage.py reindex` and its button run).

A reindex first plans: it compares every item with its SearchDoc (text hash, segmentation
version, filter columns, vector) and keeps only what is out of date, so a second run after
an interruption resumes where the first stopped (every batch commits on its own), and a
run with nothing to do finishes in seconds. A different embedding model empties the vector
index first (never two models mixed); keyword search works throughout.
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from retrieval import indexing, userdict
from retrieval import text as seg
from retrieval.embedders import EmbeddingError, get_embedder
from retrieval.models import EmbeddingSpace, Kind, ReindexRun, SearchDoc


@dataclass
class Progress:
    done: int
    total: int
    elapsed: float

    @property
    def rate(self) -> float:
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        return (self.total - self.done) / self.rate if self.rate > 0 else None


@dataclass
class ReindexSummary:
    examined: int = 0
    planned: int = 0
    done: int = 0
    removed: int = 0
    reset: bool = False
    interrupted: bool = False
    embed_error: str = ""
    kinds: list[str] = field(default_factory=list)


def _kinds(kind: str | None) -> list[str]:
    return [Kind(kind).value] if kind else [k.value for k in Kind]


def _doc_map(kind: str) -> dict[int, SearchDoc]:
    return {d.object_id: d for d in SearchDoc.objects.filter(kind=kind)}


def _needs_work(kind: str, obj, doc: SearchDoc | None, version: str, vectors: bool) -> bool:
    if doc is None or doc.fts_at is None or doc.fts_version != version:
        return True
    if doc.content_hash != indexing.text_hash(indexing.document_text(kind, obj)):
        return True
    if indexing.Meta.of_doc(doc) != indexing.Meta.of(kind, obj):
        return True
    return vectors and doc.vector_stale


def plan(kind: str, vectors: bool) -> tuple[list[int], list[int], int]:
    """(ids to index, ids of vanished items still indexed, items examined) for one kind."""
    version, docs = seg.version(), _doc_map(kind)
    every = list(indexing.queryset(kind).order_by("pk").values_list("pk", flat=True))
    # Only items already indexed are loaded to be compared: in a first build none are, and
    # loading every item twice (here and to index it) cost a fifth of keyword indexing.
    todo = [pk for pk in every if pk not in docs]
    indexed = [pk for pk in every if pk in docs]
    for start in range(0, len(indexed), 2000):
        for obj in indexing.queryset(kind).filter(pk__in=indexed[start : start + 2000]):
            if _needs_work(kind, obj, docs[obj.pk], version, vectors):
                todo.append(obj.pk)
    return sorted(todo), sorted(docs.keys() - set(every)), len(every)


def reindex(
    kind: str | None = None,
    *,
    embed: bool = True,
    reset_model: bool = False,
    batch: int = 64,
    progress: Callable[[Progress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> ReindexSummary:
    """Bring the indexes up to date; `reset_model` allows switching to a new embedder."""
    userdict.ensure_loaded()
    summary = ReindexSummary(kinds=_kinds(kind))
    state = indexing.vector_state() if embed else None
    if state and not state.ok and reset_model:
        indexing.reset_vectors(get_embedder().dimension)
        summary.reset, state = True, indexing.vector_state()
    vectors = bool(state and state.ok)
    summary.removed += remove_strays()
    if vectors:
        _forget_lost_vectors()
    work = []
    for k in summary.kinds:
        todo, gone, examined = plan(k, vectors)
        summary.examined += examined
        for object_id in gone:
            indexing.remove_item(k, object_id)
        summary.removed += len(gone)
        work.extend((k, todo[i : i + batch]) for i in range(0, len(todo), batch))
    summary.planned = sum(len(ids) for _, ids in work)
    started = time.monotonic()
    splitter = _Splitter(summary.planned)
    try:
        for k, ids in work:
            if should_stop and should_stop():
                summary.interrupted = True
                break
            objs = list(indexing.queryset(k).filter(pk__in=ids).order_by("pk"))
            try:
                indexing.index_items(k, objs, embed=vectors, segmented=splitter.segment(k, objs))
            except EmbeddingError as exc:
                # Keywords of this batch are committed; go on without vectors, say why at the end.
                summary.embed_error, vectors = str(exc), False
            summary.done += len(ids)
            if progress:
                progress(Progress(summary.done, summary.planned, time.monotonic() - started))
    finally:
        splitter.close()
    if vectors and (space := EmbeddingSpace.objects.first()):
        with transaction.atomic():
            indexing.ensure_center(space)  # databases indexed before the centre existed
    return summary


PARALLEL_MIN = 2000  # items: a bulk reindex segments half of each batch in a helper process


class _Splitter:
    """Half of each batch's texts segmented by a helper process while this one does the other
    half: segmentation (jieba, pure Python) is most of keyword indexing. Only for a bulk
    reindex on more than one core; if the helper fails, this process segments alone."""

    def __init__(self, planned: int):
        self.pool = self.ready = None
        if planned >= PARALLEL_MIN and (os.cpu_count() or 1) > 1:
            try:
                self.pool = seg.helper()
                self.ready = self.pool.submit(seg.segment, "")  # done once it has started
            except OSError:
                self.pool = None

    def segment(self, kind: str, objs: list) -> dict | None:
        # Until the helper has started (a second or two: jieba's dictionary), this process
        # segments alone rather than wait for it.
        if self.pool is None or len(objs) < 2 or not self.ready.done():
            return None
        bodies = list(dict.fromkeys(indexing.document_text(kind, o) for o in objs))
        half = len(bodies) // 2
        try:
            theirs = self.pool.submit(seg.segment_pairs, bodies[half:], seg.user_words())
            mine = seg.segment_pairs(bodies[:half])
            pairs = mine + theirs.result()
        except Exception:  # a dead helper (BrokenProcessPool) or its error: go on alone
            self.close()
            return None
        return dict(zip(bodies, pairs, strict=True))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def remove_strays() -> int:
    """Index rows whose SearchDoc is gone (a crash between two writes, a manual delete)."""
    docs = set(SearchDoc.objects.values_list("id", flat=True))
    fts = _ids("SELECT rowid FROM search_fts") - docs
    try:
        vec = _ids("SELECT doc_id FROM search_vecf") - docs
    except DatabaseError:  # no vector table (yet): nothing stray in it
        vec = set()
    with connection.cursor() as cur:
        for doc_id in fts:
            cur.execute("DELETE FROM search_fts WHERE rowid = %s", [doc_id])
    for doc_id in vec:
        indexing.delete_vec(doc_id)
    return len(fts) + len(vec)


@dataclass
class KindReport:
    kind: str
    items: int = 0
    missing: int = 0
    stale_keywords: int = 0
    stale_filters: int = 0
    missing_vectors: int = 0
    stale_vectors: int = 0
    orphans: int = 0

    @property
    def problems(self) -> int:
        return (
            self.missing
            + self.stale_keywords
            + self.stale_filters
            + self.missing_vectors
            + self.stale_vectors
            + self.orphans
        )


@dataclass
class CheckReport:
    kinds: list[KindReport]
    vector_ok: bool
    vector_reason: str
    stray_keyword_rows: int = 0
    stray_vector_rows: int = 0

    @property
    def problems(self) -> int:
        extra = self.stray_keyword_rows + self.stray_vector_rows + (0 if self.vector_ok else 1)
        return sum(k.problems for k in self.kinds) + extra


def _ids(sql: str) -> set[int]:
    with connection.cursor() as cur:
        cur.execute(sql)
        return {row[0] for row in cur.fetchall()}


def _check_kind(kind: str, vec_ids: set[int], fts_ids: set[int], vectors: bool) -> KindReport:
    report, version, docs = KindReport(kind), seg.version(), _doc_map(kind)
    seen = set()
    for obj in indexing.queryset(kind).order_by("pk").iterator(chunk_size=2000):
        seen.add(obj.pk)
        report.items += 1
        doc = docs.get(obj.pk)
        if doc is None or doc.fts_at is None or doc.id not in fts_ids:
            report.missing += 1
            continue
        digest = indexing.text_hash(indexing.document_text(kind, obj))
        if doc.content_hash != digest or doc.fts_version != version:
            report.stale_keywords += 1
        if indexing.Meta.of_doc(doc) != indexing.Meta.of(kind, obj):
            report.stale_filters += 1
        if vectors and doc.id not in vec_ids:
            report.missing_vectors += 1
        elif vectors and doc.embedded_hash != digest:
            report.stale_vectors += 1
    report.orphans = len(docs.keys() - seen)
    return report


def _forget_lost_vectors() -> None:
    """Items whose vector the vector table lost are embedded again: their hash said done."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT doc_id FROM search_vecf "
            "WHERE doc_id NOT IN (SELECT rowid FROM search_vec_rowids)"
        )
        lost = [row[0] for row in cur.fetchall()]
    SearchDoc.objects.filter(id__in=lost).update(embedded_hash="", embedded_at=None)


def _indexed_vectors() -> set[int]:
    """Stored vectors that search_vec also indexes: one only in search_vecf is missing (the
    vector table lost its row), so a repair writes it again."""
    return _ids("SELECT doc_id FROM search_vecf") & _ids("SELECT rowid FROM search_vec_rowids")


def check(kind: str | None = None) -> CheckReport:
    """What is missing from or stale in either index (read-only)."""
    userdict.ensure_loaded()
    state = indexing.vector_state()
    vec_ids = _indexed_vectors() if state.ok else set()
    fts_ids = _ids("SELECT rowid FROM search_fts")
    reports = [_check_kind(k, vec_ids, fts_ids, state.ok) for k in _kinds(kind)]
    doc_ids = set(SearchDoc.objects.values_list("id", flat=True))
    return CheckReport(
        reports,
        state.ok,
        state.reason,
        stray_keyword_rows=len(fts_ids - doc_ids),
        stray_vector_rows=len(vec_ids - doc_ids),
    )


def run_queued(run_id: int) -> None:
    """Run a queued reindex, recording its progress on the ReindexRun row for the page."""
    run = ReindexRun.objects.filter(pk=run_id).first()
    if run is None or run.state not in (ReindexRun.State.QUEUED, ReindexRun.State.INTERRUPTED):
        return
    run.state, run.started_at = ReindexRun.State.RUNNING, timezone.now()
    run.save(update_fields=["state", "started_at"])

    def progress(p) -> None:
        ReindexRun.objects.filter(pk=run_id).update(done=p.done, total=p.total)

    try:
        summary = reindex(run.kind or None, reset_model=True, progress=progress)
    except Exception as exc:  # the page must say what went wrong, then the queue logs it
        ReindexRun.objects.filter(pk=run_id).update(
            state=ReindexRun.State.FAILED, error=str(exc)[:2000], finished_at=timezone.now()
        )
        raise
    ReindexRun.objects.filter(pk=run_id).update(
        state=ReindexRun.State.DONE,
        done=summary.done,
        total=summary.planned,
        error=summary.embed_error,
        finished_at=timezone.now(),
    )
