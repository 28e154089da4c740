"""`manage.py metrics_snapshot`: today's figures for the home page charts."""

from django.core.management.base import BaseCommand

from lifecycle import metrics


class Command(BaseCommand):
    help = "Take (or refresh) today's metrics snapshot."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Print, do not save.")

    def handle(self, *args, **options):
        for row in metrics.snapshot(dry_run=options["dry_run"]):
            values = ", ".join(f"{k} {v}" for k, v in row.values.items())
            state = "not saved" if options["dry_run"] else "saved"
            self.stdout.write(f"{row.date} ({row.owner}, {state}): {values}")
