"""The Huey queue: SQLite beside the database, in WAL mode with synchronous=NORMAL.

Huey's own switch offers only FULL (an fsync on every enqueue, which dominated the latency
of POST /turns) or OFF (a power cut can corrupt the file). In WAL mode NORMAL keeps the file
consistent and at worst loses the last few enqueues on power loss; the nightly job picks up
turns that were never extracted, so nothing is lost for good.
"""

from huey import SqliteHuey
from huey.storage import SqliteStorage


class NormalSyncStorage(SqliteStorage):
    def _create_connection(self):
        conn = super()._create_connection()
        conn.execute("pragma synchronous=NORMAL")
        return conn


class MemsiteHuey(SqliteHuey):
    storage_class = NormalSyncStorage


# Tasks whose scheduled runs are upkeep (a contradiction check queued a minute after writes),
# not work a client waits for: a client polling until indexing caught up must not wait on them.
_UPKEEP: set[str] = set()


def upkeep(task_name: str) -> None:
    """Leave this task's scheduled runs out of queue_pending (the jobs layer registers them)."""
    _UPKEEP.add(task_name)


def queue_pending() -> int:
    """Jobs waiting in the queue or its schedule: clients poll this until indexing caught up."""
    from huey.contrib.djhuey import HUEY  # built from settings.HUEY, which names this module

    scheduled = HUEY.scheduled_count()
    if scheduled and _UPKEEP:  # reading the schedule only when it holds something
        scheduled -= sum(1 for task in HUEY.scheduled() if task.name in _UPKEEP)
    return HUEY.pending_count() + max(0, scheduled)
