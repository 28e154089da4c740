"""`manage.py embed_queue`: the embedding queue's dead letters, retried or just listed."""

from django.core.management.base import BaseCommand

from lifecycle import embedqueue
from lifecycle.models import DeadTask


class Command(BaseCommand):
    help = "List embedding dead letters; --retry indexes them again now (with backoff)."

    def add_arguments(self, parser):
        parser.add_argument("--retry", action="store_true", help="Index each dead item now.")
        parser.add_argument("--dry-run", action="store_true", help="Only list them.")

    def handle(self, *args, **options):
        letters = list(embedqueue.open_letters().filter(task=DeadTask.EMBED))
        self.stdout.write(f"{len(letters)} open embedding dead letter(s).")
        for letter in letters:
            line = f"  {letter.item_kind} {letter.object_id}: {letter.attempts} attempts"
            line += f", {letter.error}"
            if options["retry"] and not options["dry_run"]:
                result = embedqueue.index_with_retry(letter.item_kind, letter.object_id)
                line += f" -> {result.status}"
            self.stdout.write(line)
