"""Step b of the nightly run: duplicates (seed 002 section 6, seed 003 section 5.7).

- Exact duplicates (same owner, type and normalised text) are merged at once: the kept fact
  (verified first, then the oldest) takes the higher importance and confidence, the summed
  repeat count and all tags; the others become `superseded`. Both sides get a `merge` event.
- Near duplicates (cosine similarity above DEDUP_THRESHOLD, same owner and type) are only
  proposed: a review item "remove #N, near-duplicate of #M" the person confirms or ignores.
  Each fact gets one KNN query (lifecycle.knn), never a comparison with all others, and a
  pair the person already answered is never proposed again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import translation

from curator import generated
from curator.models import EventType, Fact, FactStatus, PendingItem, PendingReason
from curator.writepath import Candidate, change_fact, propose
from lifecycle import knn
from retrieval.backends import float_vectors
from retrieval.embedders import LocalEmbedder, get_embedder
from retrieval.models import SearchDoc

MERGE_TAG = "merge"
DEFAULT_THRESHOLD, LOCAL_THRESHOLD = 0.9, 0.97
NEIGHBOURS = 5
FETCH = 5000  # vectors per query (SQLite variable limit)


@dataclass(slots=True)  # one per active fact (100k in a nightly run): no __dict__ each
class Row:
    pk: int
    owner_id: int
    type: str
    content_key: str
    verified: bool
    importance: float
    created_at: object
    content: str = ""


@dataclass
class Findings:
    exact: list[list[Row]] = field(default_factory=list)
    near: list[tuple[float, Row, Row]] = field(default_factory=list)  # (similarity, keep, drop)
    vectors: int = 0
    queried: int = 0


def _rows() -> dict[int, Row]:
    fields = ("pk", "owner_id", "type", "content_key", "verified", "importance", "created_at")
    return {r[0]: Row(*r) for r in Fact.objects.active().values_list(*fields).iterator(2000)}


def _keep_first(rows: list[Row]) -> list[Row]:
    """Verified first (a person stands behind it), then the oldest (the longest history)."""
    return sorted(rows, key=lambda r: (not r.verified, r.created_at, r.pk))


def exact_groups(rows: dict[int, Row]) -> list[list[Row]]:
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for row in rows.values():
        if row.content_key:
            groups[(row.owner_id, row.type, row.content_key)].append(row)
    return [_keep_first(g) for g in groups.values() if len(g) > 1]


def _matrix(doc_ids: list[int]) -> tuple[np.ndarray, list[int]]:
    """The stored float vectors of these docs, as one matrix (rows in the order found)."""
    found_ids, blocks = [], []
    for start in range(0, len(doc_ids), FETCH):
        chunk = float_vectors(doc_ids[start : start + FETCH])
        found_ids += list(chunk)
        if chunk:
            blocks.append(np.vstack(list(chunk.values())))
    if not blocks:
        return np.zeros((0, 0), dtype=np.float32), []
    return np.vstack(blocks).astype(np.float32, copy=False), found_ids


def near_pairs(rows: dict[int, Row], skip: set[int], threshold: float, seed=None, since=None):
    """(similarity, a, b) for near-duplicate active facts of the same owner and type.

    Only vectors embedded since `since` (the last dedup) ask a KNN query: a pair of older
    facts was already looked at when the newer of the two arrived.
    """
    docs = (
        SearchDoc.objects.filter(kind="fact", embedded_hash=F("content_hash"))
        .exclude(embedded_hash="")
        .values_list("id", "object_id", "embedded_at")
    )
    groups: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    new: set[int] = set()
    for doc_id, fact_id, embedded_at in docs.iterator(5000):
        row = rows.get(fact_id)
        if row is not None and fact_id not in skip:
            groups[(row.owner_id, row.type)].append((doc_id, fact_id))
            if since is None or embedded_at is None or embedded_at >= since:
                new.add(doc_id)
    found, stats = [], {"vectors": 0, "queried": 0}
    for members in groups.values():
        if len(members) < 2 or not any(d in new for d, _f in members):
            continue
        fact_of = dict(members)
        matrix, doc_ids = _matrix([d for d, _f in members])
        asking = np.asarray([i for i, d in enumerate(doc_ids) if d in new], dtype=np.int64)
        stats["vectors"] += len(doc_ids)
        stats["queried"] += len(asking)
        for (i, j), sim in knn.pairs(matrix, threshold, NEIGHBOURS, seed, asking).items():
            found.append((sim, rows[fact_of[doc_ids[i]]], rows[fact_of[doc_ids[j]]]))
    found.sort(key=lambda t: (-t[0], t[1].pk, t[2].pk))
    return found, stats


def _asked_about() -> set[int]:
    """Facts already put to the person as a removal (any answer): never asked twice."""
    return set(
        PendingItem.objects.filter(reason=PendingReason.DELETION).values_list(
            "conflicts_with_id", flat=True
        )
    )


def threshold() -> float:
    """The configured similarity, else one that suits the embedder in use (measured: with the
    bundled e5, paraphrases score 0.96-0.99 but so do "lives in Hangzhou / in Beijing")."""
    if settings.DEDUP_THRESHOLD:
        return settings.DEDUP_THRESHOLD

    return LOCAL_THRESHOLD if isinstance(get_embedder(), LocalEmbedder) else DEFAULT_THRESHOLD


def find(similarity: float | None = None, seed=None, since=None) -> Findings:
    similarity = threshold() if similarity is None else similarity
    rows = _rows()
    findings = Findings(exact=exact_groups(rows))
    merged = {r.pk for group in findings.exact for r in group[1:]}
    pairs, stats = near_pairs(rows, merged, similarity, seed, since)
    findings.vectors, findings.queried = stats["vectors"], stats["queried"]
    asked, used = _asked_about(), set()
    for sim, a, b in pairs:
        keep, drop = _keep_first([a, b])
        if keep.pk in used or drop.pk in used or drop.pk in asked:
            continue
        used |= {keep.pk, drop.pk}
        findings.near.append((sim, keep, drop))
        if len(findings.near) >= settings.DEDUP_MAX_PROPOSALS:
            break
    return findings


def merge(group: list[Row], job_run: str) -> None:
    """Merge exact duplicates into the first row of the group, in one transaction."""
    kept, others = group[0], group[1:]
    facts = Fact.objects.in_bulk([r.pk for r in group])
    with transaction.atomic():
        for row in others:
            change_fact(
                row.pk,
                {"status": FactStatus.SUPERSEDED},
                event_type=EventType.MERGE,
                actor="job",
                job_run=job_run,
                merged_into=kept.pk,
            )
        all_facts = [facts[r.pk] for r in group]
        change_fact(
            kept.pk,
            {
                "importance": max(f.importance for f in all_facts),
                "confidence": max(f.confidence for f in all_facts),
                "hit_count": sum(f.hit_count for f in all_facts),
                "tags": list(dict.fromkeys(t for f in all_facts for t in f.tags)),
            },
            event_type=EventType.MERGE,
            actor="job",
            job_run=job_run,
            merged=[r.pk for r in others],
        )


def propose_merge(sim: float, keep: Row, drop: Row, job_run: str, run_key: str) -> None:
    kept = Fact.objects.get(pk=keep.pk)
    params = {"id": keep.pk, "content": kept.content[:120], "sim": sim}
    with translation.override(kept.owner.agent_language()):  # the words, for older readers
        why = generated.deletion_why({"why_code": "near_duplicate", "why_params": params})
    propose(
        Candidate(
            content=why,
            why_code="near_duplicate",
            why_params=params,
            delete_fact_id=drop.pk,
            confidence=round(min(0.99, sim), 3),
            tags=[MERGE_TAG, f"duplicate-of:{keep.pk}"],
            source="consolidation",
        ),
        actor="job",
        owner=kept.owner,
        operation_id=f"{run_key}:merge:{drop.pk}:{keep.pk}",
        job_run=job_run,
    )
