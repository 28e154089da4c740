"""`manage.py consolidate`: the nightly consolidation now (or, with --dry-run, its counts)."""

from django.core.management.base import BaseCommand, CommandError

from curator.undo import UndoRefused
from lifecycle import consolidate
from lifecycle.models import Trigger
from lifecycle.undo import undo_run


def print_steps(out, steps: list[dict]) -> None:
    for step in steps:
        counts = ", ".join(f"{k} {v}" for k, v in step.get("counts", {}).items()) or "-"
        error = f"  ERROR {step['error']}" if step.get("error") else ""
        out.write(f"  {step['name']:<12} {counts}  ({step.get('seconds', 0)} s){error}")


class Command(BaseCommand):
    help = "Run the nightly consolidation (extract, dedup, decay, expire, reviews, files, cards)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Count what would change.")
        parser.add_argument(
            "--step", action="append", choices=consolidate.STEPS, help="Only these steps."
        )
        parser.add_argument("--undo", metavar="RUN_ID", help="Undo a whole run instead.")

    def handle(self, *args, **options):
        if options["undo"]:
            try:
                done = undo_run(options["undo"])
            except UndoRefused as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(
                f"Undone: {done.events} events, {done.episodes} episodes, cards {done.cards or '-'}"
                + (f"; {done.files_lost} removed files cannot come back" if done.files_lost else "")
            )
            return
        report = consolidate.run(Trigger.COMMAND, dry_run=options["dry_run"], only=options["step"])
        if report.skipped:
            raise CommandError(f"Not run: {report.skipped}.")
        head = "Dry run (nothing changed):" if report.dry_run else f"Run {report.run.run_id}:"
        self.stdout.write(head)
        print_steps(self.stdout, report.steps)
        if report.run is not None:
            self.stdout.write(
                f"Status: {report.run.status}. "
                f"Undo: manage.py consolidate --undo {report.run.run_id}"
            )
