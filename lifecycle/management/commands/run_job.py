"""`manage.py run_job JOB`: one of the consumer's large jobs in this process.

The consumer starts it as a child process (lifecycle/largejobs.py) for a large database, so
the job's memory goes when it exits; a person may run one by hand the same way. It exits
non-zero when the job raised (a skip, because another run holds the lock, is no failure).
"""

from django.core.management.base import BaseCommand

from lifecycle import largejobs
from lifecycle.models import Trigger
from memsite.core import childjob


class Command(BaseCommand):
    help = "Run a contradiction scan or the nightly consolidation in this process."

    def add_arguments(self, parser):
        parser.add_argument("job", choices=largejobs.JOBS)
        parser.add_argument("--trigger", choices=Trigger.values, default=Trigger.COMMAND)
        parser.add_argument("--run-id", help="The consolidation's JobRun (created by the caller).")
        parser.add_argument("--holder", default="", help="The scan's name in its lock.")

    def handle(self, *args, **options):
        childjob.die_with_parent()
        done = largejobs.run_here(
            options["job"], options["trigger"], options["run_id"], options["holder"]
        )
        self.stdout.write(done)
