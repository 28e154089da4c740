"""`manage.py end_session SESSION_ID`: write the session's episode and update the scratchpad."""

from django.core.management.base import BaseCommand, CommandError

from curator.models import Session
from lifecycle import sessions


class Command(BaseCommand):
    help = "End a session: extract what is left, write its episode, update the scratchpad."

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="The session's external id.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Show the rules episode; write nothing."
        )

    def handle(self, *args, **options):
        session = Session.objects.filter(external_id=options["session_id"]).first()
        if session is None:
            raise CommandError(f"No session {options['session_id']!r}.")
        if options["dry_run"]:
            turns = list(session.turns.filter(episode__isnull=True).order_by("turn_index"))
            if not turns:
                self.stdout.write("No turns without an episode: nothing would be written.")
                return
            nodes = sessions.action_nodes(turns)
            draft = sessions.rules_draft(turns, nodes)
            self.stdout.write(f"Episode ({len(turns)} turns, {len(nodes)} actions, rules):")
            self.stdout.write(f"  goal: {draft.goal}\n  outcome: {draft.outcome}")
            self.stdout.write(
                f"  summary: {draft.summary}\n  entities: {', '.join(draft.entities)}"
            )
            return
        episode = sessions.run_end(session.pk, trigger="command")
        if episode is None:
            self.stdout.write("The session has no turns: no episode.")
        else:
            self.stdout.write(f"Episode #{episode.pk}: {episode.summary}")
