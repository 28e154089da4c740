"""The two candidate generators: FTS5 BM25 and sqlite-vec KNN, each returning doc hits.

Scores are returned raw (bm25: lower is better; distance: cosine, lower is better);
normalising and weighting them is the pure scoring module's job.
"""

from dataclasses import dataclass

from django.db import connection

from retrieval import text as seg
from retrieval.embedders import get_embedder


@dataclass(frozen=True)
class Hit:
    doc_id: int
    kind: str
    object_id: int
    raw: float


def keyword_hits(query: str, owner_id: int, limit: int = 50) -> list[Hit]:
    match = seg.fts_query(query)
    if not match:
        return []
    sql = (
        "SELECT d.id, d.kind, d.object_id, bm25(search_fts) AS score FROM search_fts "
        "JOIN retrieval_searchdoc d ON d.id = search_fts.rowid "
        "WHERE search_fts MATCH %s AND d.owner_id = %s ORDER BY score LIMIT %s"
    )
    with connection.cursor() as cur:
        cur.execute(sql, [match, owner_id, limit])
        return [Hit(*row) for row in cur.fetchall()]


def vector_hits(query: str, owner_id: int, limit: int = 50) -> list[Hit]:
    vector = get_embedder().query(query)
    sql = (
        "SELECT v.doc_id, v.kind, d.object_id, v.distance FROM search_vec v "
        "JOIN retrieval_searchdoc d ON d.id = v.doc_id "
        "WHERE v.embedding MATCH %s AND k = %s AND v.owner_id = %s ORDER BY v.distance"
    )
    with connection.cursor() as cur:
        cur.execute(sql, [vector.astype("float32").tobytes(), limit, owner_id])
        return [Hit(*row) for row in cur.fetchall()]
