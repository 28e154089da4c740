"""Huey tasks: thin, idempotent, take ids, call domain functions."""

from huey.contrib.djhuey import db_task

from retrieval import indexing


@db_task()
def index_item(kind: str, object_id: int) -> None:
    indexing.reindex_one(kind, object_id)
