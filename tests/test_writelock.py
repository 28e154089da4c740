"""Writers queue on a file lock beside the database, from BEGIN to COMMIT or ROLLBACK."""

import threading
import time

import pytest
from django.db import connection, transaction

from curator.models import Owner
from memsite.core.db.writelock import Timeout, WriteLock, for_database


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


def test_a_writer_gives_up_after_the_timeout_and_the_lock_stays_usable(tmp_path):
    holder, late = WriteLock(str(tmp_path / "db")), WriteLock(str(tmp_path / "db"))
    holder.acquire()
    with pytest.raises(Timeout, match="database is locked"):
        late.acquire(timeout=0.3)
    holder.release()
    late.acquire(timeout=10)  # the abandoned waiter let go of the lock it got late
    assert late.held
    late.close()
    holder.close()


@pytest.mark.django_db(transaction=True)
def test_a_transaction_fails_as_locked_while_another_writer_holds_the_lock(monkeypatch):
    from django.db import OperationalError

    holder = WriteLock(str(connection.settings_dict["NAME"]))
    holder.acquire()
    monkeypatch.setattr("memsite.core.db.writelock.TIMEOUT", 0.3)
    try:
        with pytest.raises(OperationalError, match="database is locked"), transaction.atomic():
            Owner.default()
    finally:
        holder.close()


def test_a_writer_in_another_process_is_waited_for(tmp_path):
    import subprocess
    import sys

    path = str(tmp_path / "db")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_FOR_A_MOMENT, f"{path}.writelock"], stdout=subprocess.PIPE
    )
    assert holder.stdout.readline() == b"held\n"
    lock = WriteLock(path)
    with pytest.raises(Timeout):
        lock.acquire(timeout=0.2)  # the other process still holds it
    lock.acquire(timeout=10)  # it lets go after a second
    assert lock.held and holder.wait(10) == 0
    lock.close()


HOLD_FOR_A_MOMENT = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(1)
"""
