"""`manage.py consumer`: Huey's `run_huey`, once this process holds the data directory's
consumer lock (memsite.core.consumer): never two consumers on one queue. While another
process holds the lock it waits, and takes over when that one stops. `serve` and the stdio
MCP server start it; it takes every option of `run_huey`."""

import sys

from huey.contrib.djhuey.management.commands.run_huey import Command as RunHuey

from memsite.core import consumer


class Command(RunHuey):
    help = "Run the task consumer once no other consumer runs on this data directory."

    def handle(self, *args, **options):
        lock = consumer.take_lock(wait=False)
        if lock is None:
            sys.stderr.write(
                f"Another process (pid {consumer.holder()}) runs the task consumer for this "
                "data directory; waiting to take over when it stops.\n"
            )
            sys.stderr.flush()
            lock = consumer.take_lock(wait=True)
        from huey.contrib.djhuey import HUEY

        consumer.give_back_memory_after_tasks(HUEY)
        consumer.yield_to_requests()
        try:
            super().handle(*args, **options)
        finally:
            lock.close()
