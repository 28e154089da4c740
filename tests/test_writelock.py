"""Writers queue on a file lock beside the database, from BEGIN to COMMIT or ROLLBACK."""

import threading
import time

import pytest
from django.db import connection, transaction

from curator.models import Owner
from memsite.db.writelock import WriteLock, for_database


def test_a_second_writer_waits_until_the_first_releases(tmp_path):
    first, second = WriteLock(str(tmp_path / "db")), WriteLock(str(tmp_path / "db"))
    order = []
    first.acquire()
    waiter = threading.Thread(target=lambda: (second.acquire(), order.append("second")))
    waiter.start()
    time.sleep(0.2)  # room for a broken lock to let the second writer through
    order.append("first releases")
    first.release()
    waiter.join(10)
    second.close()
    first.close()
    assert order == ["first releases", "second"]


def test_in_memory_databases_need_no_lock():
    assert for_database(":memory:") is None
    assert for_database("file:memorydb_default?mode=memory&cache=shared") is None


@pytest.mark.django_db(transaction=True)
def test_the_lock_is_held_for_a_transaction_and_released_after_commit():
    with transaction.atomic():
        Owner.default()
        assert connection._write_lock.held
    assert not connection._write_lock.held


@pytest.mark.django_db(transaction=True)
def test_the_lock_is_released_after_a_rollback():
    with pytest.raises(RuntimeError), transaction.atomic():
        Owner.default()
        raise RuntimeError("boom")
    assert not connection._write_lock.held
