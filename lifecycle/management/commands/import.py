"""`manage.py import PATH`: restore into an empty install, or preview then merge."""

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from lifecycle.backup import restore as imp


class Command(BaseCommand):
    help = (
        "Read an archive made by `manage.py export`. Into an empty install it is restored "
        "whole; into one that holds memory, the command previews what is new, identical or "
        "conflicting, and merges only with --apply (existing items are never overwritten; "
        "every conflict is recorded as an event). A damaged archive changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="The .zip archive to read.")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Run the whole import, every check included, then roll it back.",
        )
        parser.add_argument("--apply", action="store_true", help="Merge into a non-empty install.")

    def handle(self, *args, path: str, dry_run: bool, apply: bool, **options) -> None:
        try:
            found = imp.read(path)
        except imp.ArchiveError as exc:
            raise CommandError(f"Refused, nothing imported: {exc}") from exc
        plan = imp.plan(found)
        self._table(plan)
        if dry_run:
            self._dry_run(found, plan)
            return
        if plan.mode == imp.MERGE and not apply:
            self.stdout.write("Preview only; nothing imported. Use --apply to merge.")
            return
        try:
            report = imp.apply(found, plan)
        except imp.ArchiveError as exc:
            raise CommandError(f"Refused, nothing imported: {exc}") from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported ({report.mode}); {report.events} conflict event(s) recorded."
            )
        )
        if report.blocked:
            self.stdout.write(
                f"{report.blocked} item(s) matched your guardrails and were left out "
                "(see Settings → Guardrails → Blocked log)."
            )
        if report.index_error:
            self.stdout.write(
                self.style.WARNING(f"Reindex failed ({report.index_error}); run `reindex`.")
            )
        elif report.indexed is not None:
            self.stdout.write(f"Search indexes rebuilt ({report.indexed} items).")

    def _dry_run(self, found: imp.Archive, plan: imp.Plan) -> None:
        """The import itself, rolled back: what it says is what the import will do."""
        try:
            report = imp.apply(found, plan, reindex=False, dry_run=True)
        except imp.ArchiveError as exc:
            raise CommandError(f"Dry run: the import would fail: {exc}") from exc
        except DatabaseError as exc:
            raise CommandError(f"Dry run: the import would fail: {exc}") from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Dry run: the import ({report.mode}) would succeed; nothing was imported."
            )
        )
        if report.blocked:
            self.stdout.write(f"{report.blocked} item(s) would be left out by your guardrails.")

    def _table(self, plan: imp.Plan) -> None:
        mode = "restore into an empty install" if plan.mode == imp.RESTORE else "merge"
        self.stdout.write(f"Mode: {mode}")
        self.stdout.write(f"{'kind':<20}{'new':>8}{'identical':>11}{'conflicting':>13}")
        for row in plan.counts():
            self.stdout.write(
                f"{row['kind']:<20}{row[imp.NEW]:>8}{row[imp.IDENTICAL]:>11}{row[imp.CONFLICT]:>13}"
            )
