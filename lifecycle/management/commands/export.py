"""`manage.py export PATH`: the whole memory as one zip archive (see lifecycle/backup/export.py)."""

from django.core.management.base import BaseCommand, CommandParser

from lifecycle.backup import export as archive


class Command(BaseCommand):
    help = (
        "Write every memory row (no API tokens, no accounts), the Markdown cards and the "
        "attachment files into one zip archive that `manage.py import` reads. Safe while "
        "the server runs: everything is read in one consistent snapshot."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="Where to write the .zip archive.")

    def handle(self, *args, path: str, **options) -> None:
        result = archive.export(path)
        counts = ", ".join(f"{name}: {n}" for name, n in result.counts.items())
        self.stdout.write(self.style.SUCCESS(f"Exported to {path} ({counts})."))
        for name in result.missing_files:
            self.stdout.write(self.style.WARNING(f"Attachment file missing on disk: {name}"))
