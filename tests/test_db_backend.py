"""Every Django connection is a sqlean connection with sqlite-vec, FTS5 and WAL."""

import datetime

import numpy as np
from django.db import connection
from django.utils import timezone

from curator.models import Fact, Owner


def _one(sql, params=None):
    with connection.cursor() as cur:
        cur.execute(sql, params or [])
        return cur.fetchone()


def test_it_loads_sqlite_vec(db):
    assert _one("SELECT vec_version()")[0].startswith("v")


def test_it_uses_wal_and_a_busy_timeout(db):
    assert _one("PRAGMA journal_mode")[0] == "wal"
    assert _one("PRAGMA busy_timeout")[0] == 5000


def test_it_opens_write_transactions_immediately(db):
    assert connection.transaction_mode == "IMMEDIATE"


def test_knn_runs_through_djangos_connection(db):
    eye = np.eye(8, dtype=np.float32)
    with connection.cursor() as cur:
        cur.execute(
            "CREATE VIRTUAL TABLE temp.knn USING vec0("
            "id integer primary key, embedding float[8] distance_metric=cosine, owner integer)"
        )
        for i in range(3):
            cur.execute(
                "INSERT INTO temp.knn(id, embedding, owner) VALUES (%s, %s, 1)",
                [i + 1, eye[i].tobytes()],
            )
        query = (eye[1] + 0.1).astype(np.float32)
        cur.execute(
            "SELECT id FROM temp.knn WHERE embedding MATCH %s AND k = 2 AND owner = 1 "
            "ORDER BY distance",
            [query.tobytes()],
        )
        assert [r[0] for r in cur.fetchall()][0] == 2


def test_fts5_ranks_segmented_chinese(db):
    with connection.cursor() as cur:
        cur.execute("INSERT INTO search_fts(rowid, tokens) VALUES (1, '用户 喜欢 面试 准备')")
        cur.execute("INSERT INTO search_fts(rowid, tokens) VALUES (2, '杭州 天气')")
        cur.execute("SELECT rowid FROM search_fts WHERE search_fts MATCH %s", ['"面试"'])
        assert cur.fetchall() == [(1,)]


def test_dates_round_trip_through_the_driver(db):
    when = timezone.make_aware(datetime.datetime(2026, 2, 12, 9, 30, 15, 123456))
    fact = Fact.objects.create(owner=Owner.default(), content="x", created_at=when)
    assert Fact.objects.get(pk=fact.pk).created_at == when
    assert Fact.objects.filter(created_at__date=datetime.date(2026, 2, 12)).count() == 1
