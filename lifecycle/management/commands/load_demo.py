"""`manage.py load_demo`: fill an empty install with a realistic demo memory."""

from django.core.management.base import BaseCommand, CommandParser

from lifecycle.demo import DemoResult, load_demo


class Command(BaseCommand):
    help = (
        "Load a demo memory (agents, facts, review queue with answered items, sessions, an "
        "episode, attachments, a scratchpad, recalls, contradictions found) for the default "
        "owner, and refresh the generated sections of User.md and MEMORY.md. Does nothing if "
        "demo data is already there, unless --reset is given. Never touches non-demo data or "
        "onboarding."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Delete the earlier demo rows (only those) and load the demo again.",
        )
        parser.add_argument(
            "--no-index",
            action="store_true",
            help="Skip building the search index afterwards (and the recalls, which are searches).",
        )

    def handle(self, *args, reset: bool = False, no_index: bool = False, **options) -> None:
        result = load_demo(reset=reset, index=not no_index)
        if not result.loaded:
            self.stdout.write(
                self.style.WARNING(
                    "Demo data is already loaded; nothing changed. "
                    "Use --reset to replace it (your own data is kept)."
                )
            )
            return
        self.stdout.write(self.style.SUCCESS("Demo memory loaded."))
        for line in summary_lines(result):
            self.stdout.write(self.style.SUCCESS(line))


def summary_lines(result: DemoResult) -> list[str]:
    lines = []
    if result.removed:
        lines.append("Removed previous demo: " + _counts(result.removed))
    lines.append("Created: " + _counts(result.counts))
    if result.indexed is not None:
        lines.append(f"Indexed {result.indexed} search documents.")
    return lines


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in counts.items())
