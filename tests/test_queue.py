"""The Huey queue file: WAL with synchronous=NORMAL, and it still runs tasks."""

from memsite.core.queue import MemsiteHuey


def test_the_queue_uses_wal_without_an_fsync_per_enqueue(tmp_path):
    huey = MemsiteHuey("t", filename=str(tmp_path / "q.sqlite3"))
    conn = huey.storage.conn
    assert conn.execute("pragma journal_mode").fetchone() == ("wal",)
    assert conn.execute("pragma synchronous").fetchone() == (1,)


def test_enqueued_tasks_survive_and_run(tmp_path):
    huey = MemsiteHuey("t", filename=str(tmp_path / "q.sqlite3"))

    @huey.task()
    def add(a, b):
        return a + b

    result = add(2, 3)
    assert huey.pending_count() == 1
    reopened = MemsiteHuey("t", filename=str(tmp_path / "q.sqlite3"))
    assert reopened.pending_count() == 1
    huey.execute(huey.dequeue())
    assert result.get() == 5
