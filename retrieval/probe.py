"""Is the vector table usable right now? A tiny real query, for /health (issue 18, item 8).

vector_state() only reads the table's definition, so a search_vec whose sqlite-vec storage
tables are damaged (one dropped, say) looked fine while every KNN query and every index write
failed. This probe asks the table itself, in two steps:

1. every storage ("shadow") table sqlite-vec keeps for search_vec exists; reading through a
   missing one can crash the process rather than raise (a point lookup by doc_id with
   search_vec_rowids gone segfaults in sqlite-vec 0.1.9), so nothing is read before this;
2. one stored row is read in full (rowids, vector and metadata chunks) and a k=1 KNN query is
   prepared and run in an owner partition that holds nothing, which opens the chunk tables
   without scanning any vector: the cost stays under a millisecond however large the index.
"""

import re

import numpy as np
from django.db import DatabaseError, connection
from django.utils.translation import gettext as _

TABLE = "search_vec"
_VECTOR_TYPE = re.compile(r"\b(?:float|int8|bit)\s*\[\s*(\d+)\s*\]", re.IGNORECASE)


def vector_table_problem() -> str | None:
    """None when search_vec answers a real query; otherwise why it does not."""
    try:
        definition = _definition()
        if definition is None:
            return _("no such table: %(table)s") % {"table": TABLE}
        missing = sorted(set(shadow_tables(definition)) - _existing_tables())
        if missing:
            return _("vector storage table missing: %(tables)s") % {"tables": ", ".join(missing)}
        _query(definition)
        return _lost_rows()
    except DatabaseError as exc:
        return _("vector table query failed: %(error)s") % {"error": exc}


def shadow_tables(definition: str) -> list[str]:
    """The storage tables sqlite-vec creates for a vec0 table of this definition:
    _info, _chunks, _rowids, one _vector_chunksNN per vector column, one _metadatachunksNN
    per metadata column (plus _metadatatextNN for text ones), _auxiliary for +columns."""
    names = [f"{TABLE}_info", f"{TABLE}_chunks", f"{TABLE}_rowids"]
    vectors = metadata = 0
    auxiliary = False
    for column in _columns(definition):
        lowered = column.lower()
        if "primary key" in lowered or "partition key" in lowered:
            continue
        if column.startswith("+"):
            auxiliary = True
        elif _VECTOR_TYPE.search(column):
            names.append(f"{TABLE}_vector_chunks{vectors:02d}")
            vectors += 1
        else:
            names.append(f"{TABLE}_metadatachunks{metadata:02d}")
            if re.search(r"\btext\b", lowered):
                names.append(f"{TABLE}_metadatatext{metadata:02d}")
            metadata += 1
    if auxiliary:
        names.append(f"{TABLE}_auxiliary")
    return names


def _columns(definition: str) -> list[str]:
    inside = definition[definition.index("(") + 1 : definition.rindex(")")]
    return [part.strip() for part in inside.split(",") if part.strip()]


def _definition() -> str | None:
    with connection.cursor() as cur:
        cur.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [TABLE])
        row = cur.fetchone()
    return row[0] if row else None


def _existing_tables() -> set[str]:
    with connection.cursor() as cur:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {name for (name,) in cur.fetchall()}


def _query(definition: str) -> None:
    """One full row, then a KNN query over an empty partition (no vector is compared)."""
    vector_column, dimension = _first_vector(definition)
    probe = np.zeros(dimension, dtype=np.float32)
    probe[0] = 1.0
    columns = _columns(definition)
    # vec0 with a declared primary key has no rowid column.
    key = next((c.split()[0] for c in columns if "primary key" in c.lower()), "rowid")
    partitions = [c.split()[0] for c in columns if "partition key" in c.lower()]
    nowhere = "".join(f" AND {column} = -1" for column in partitions)  # no owner has id -1
    with connection.cursor() as cur:
        cur.execute(f"SELECT * FROM {TABLE} LIMIT 1")
        cur.fetchall()
        cur.execute(
            f"SELECT {key} FROM {TABLE} WHERE {vector_column} MATCH %s AND k = 1{nowhere}",
            [probe.tobytes()],
        )
        cur.fetchall()


def _lost_rows() -> str | None:
    """search_vec with its rows gone (search_vec_rowids emptied) still answers every query,
    with nothing. The first and last vectors search_vecf stores must be indexed: two point
    reads, where counting search_vecf would read every stored vector."""
    with connection.cursor() as cur:
        cur.execute("SELECT min(doc_id), max(doc_id) FROM search_vecf")
        ends = [doc_id for doc_id in cur.fetchone() if doc_id is not None]
        for doc_id in ends:
            cur.execute(f"SELECT 1 FROM {TABLE}_rowids WHERE rowid = %s", [doc_id])
            if cur.fetchone() is None:
                cur.execute(f"SELECT count(*) FROM {TABLE}_rowids")
                return _(
                    "the vector table lost rows (it indexes %(count)d vectors, not item "
                    "%(doc)d's); run manage.py reindex"
                ) % {"count": cur.fetchone()[0], "doc": doc_id}
    return None


def _first_vector(definition: str) -> tuple[str, int]:
    for column in _columns(definition):
        if match := _VECTOR_TYPE.search(column):
            return column.split()[0], int(match.group(1))
    raise DatabaseError(_("the vector table has no vector column"))
