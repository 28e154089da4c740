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


def queue_pending() -> int:
    """Jobs waiting in the queue or its schedule: clients poll this until indexing caught up."""
    from huey.contrib.djhuey import HUEY  # built from settings.HUEY, which names this module

    return HUEY.pending_count() + HUEY.scheduled_count()
