"""`manage.py extract_turns`: extract the user turns still waiting (or the given ones)."""

from django.core.management.base import BaseCommand

from curator.models import ConversationTurn
from lifecycle import llm
from lifecycle.extraction import extract


class Command(BaseCommand):
    help = "Extract memories from unextracted user turns through the write path."

    def add_arguments(self, parser):
        parser.add_argument("--turn", type=int, action="append", help="Only this turn id.")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Show what the rules extractor finds; write nothing, call no LLM.",
        )

    def handle(self, *args, **options):
        turns = extract.pending_turns()
        if options["turn"]:
            turns = ConversationTurn.objects.filter(pk__in=options["turn"]).select_related(
                "session__owner"
            )
        turns = list(turns)
        mode = "LLM when a turn qualifies, else rules" if llm.configured() else "rules"
        self.stdout.write(f"{len(turns)} turn(s) to extract ({mode}).")
        for turn in turns:
            if options["dry_run"]:
                for c in extract.rule_candidates(turn):
                    self.stdout.write(
                        f"  turn {turn.pk}: {c.type} {c.confidence:.2f} {c.subject}/{c.predicate}: "
                        f"{c.content}"
                    )
                continue
            try:
                results = extract.extract_turn(turn)
            except extract.ExtractionDeferred as exc:
                self.stdout.write(f"  turn {turn.pk}: deferred ({exc})")
                continue
            outcomes = ", ".join(r.outcome for r in results) or "nothing"
            self.stdout.write(f"  turn {turn.pk}: {outcomes}")
