"""`manage.py backups list|make|verify NAME|restore NAME --into DIR` (see nightly.py in
lifecycle/backup/)."""

from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from lifecycle.backup import nightly


class Command(BaseCommand):
    help = (
        "The automatic backups in <data dir>/backups/: list them, make one now, verify one "
        "(a dry restore into a scratch data dir), or restore one into a NEW data dir (never "
        "over the live one)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("list", help="Every backup: time, size, verification.")
        sub.add_parser("make", help="Make a backup now (verified, then rotation).")
        verify = sub.add_parser("verify", help="Check a backup by restoring it dry.")
        verify.add_argument("name")
        restore = sub.add_parser("restore", help="Restore a backup into a new data dir.")
        restore.add_argument("name")
        restore.add_argument("--into", required=True, help="A new, empty data dir.")
        # What the child process of verify / restore runs, in the new data dir.
        load = sub.add_parser("load", help="(internal) migrate this data dir, import PATH.")
        load.add_argument("path")
        load.add_argument("--dry-run", action="store_true")

    def handle(self, *args, action: str, **options) -> None:
        getattr(self, f"_{action}")(**options)

    def _list(self, **options) -> None:
        every = nightly.backups()
        if not every:
            self.stdout.write(f"No backups yet in {nightly.folder()}.")
        for b in every:
            when = timezone.localtime(b.created_at).strftime("%Y-%m-%d %H:%M")
            state = {True: "verified", False: "FAILED", None: "not checked"}[b.verified]
            size = filesizeformat(b.size) if b.path.exists() else "-"
            line = f"{b.name:<28} {when:<17} {size:>10}  {state}"
            self.stdout.write(line + (f": {b.error}" if b.error else ""))

    def _make(self, **options) -> None:
        backup = nightly.make()
        if not backup.good:
            raise CommandError(f"The backup {backup.name} failed: {backup.error}")
        self.stdout.write(self.style.SUCCESS(f"Made and verified {backup.path}."))

    def _backup(self, name: str) -> nightly.Backup:
        try:
            return nightly.get(name)
        except LookupError:
            raise CommandError(f"No backup named {name}; see `backups list`.") from None

    def _verify(self, name: str, **options) -> None:
        backup = nightly.verify(self._backup(name))
        if not backup.verified:
            raise CommandError(f"{name} does not restore: {backup.error}")
        self.stdout.write(self.style.SUCCESS(f"{name} restores (checked by a dry restore)."))

    def _restore(self, name: str, into: str, **options) -> None:
        backup = self._backup(name)
        try:
            output = nightly.restore_into(backup, Path(into))
        except ValueError as exc:
            raise CommandError(
                "Choose a new, empty folder: a backup is never restored over the live data "
                f"dir or into a folder that holds files ({exc})."
            ) from exc
        except nightly.ChildFailed as exc:
            raise CommandError(f"The restore failed: {exc}") from exc
        self.stdout.write(output.rstrip())
        target = Path(into).expanduser().resolve()
        self.stdout.write(
            self.style.SUCCESS(
                f"Restored {name} into {target}. To start on it:\n"
                f"  MEMSITE_DATA_DIR={target} python manage.py serve\n"
                "Agents need new tokens (Agents page: Issue a new token); "
                "the first visit creates the owner account."
            )
        )

    def _load(self, path: str, dry_run: bool, **options) -> None:
        """Runs in the child process, whose MEMSITE_DATA_DIR is the new data dir."""
        call_command("migrate", verbosity=0, interactive=False)
        args = [path, "--dry-run"] if dry_run else [path]
        call_command("import", *args, stdout=self.stdout, stderr=self.stderr)
