"""`manage.py agents list|pause NAME [--reads]|resume NAME`: the Agents page's switches, from a
terminal. NAME is the agent's name (or its id, as `list` shows it)."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from memsite.core import agents as rules
from memsite.models import ApiToken


class Command(BaseCommand):
    help = "List agents, pause one (its writes, or with --reads its reads too) or resume it."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("list", help="Every agent with its state and last use.")
        pause = sub.add_parser("pause", help="Refuse the agent's writes (423 agent_paused).")
        pause.add_argument("name", help="The agent's name or id.")
        pause.add_argument("--reads", action="store_true", help="Refuse its reads too.")
        resume = sub.add_parser("resume", help="Let a paused agent read and write again.")
        resume.add_argument("name", help="The agent's name or id.")

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _list(self, options):
        found = list(ApiToken.objects.all())
        if not found:
            self.stdout.write("No agents yet. Create one with `api_token create --name NAME`.")
            return
        if rules.writes_paused():
            self.stdout.write("All memory writes are paused (Settings).")
        self.stdout.write(f"{'id':>4}  {'name':<24} {'access':<10} {'state':<12} last used")
        now = timezone.now()
        for agent in found:
            used = f"{agent.last_used_at:%Y-%m-%d %H:%M}" if agent.last_used_at else "never"
            self.stdout.write(
                f"{agent.pk:>4}  {agent.name[:24]:<24} {agent.scope:<10} "
                f"{_state(agent, now):<12} {used}"
            )

    def _pause(self, options):
        agent = self._agent(options["name"])
        rules.set_paused(agent, writes=True, reads=options["reads"])
        what = "reads and writes are" if options["reads"] else "writes are"
        self.stdout.write(f"Paused '{agent.name}': its {what} refused until `agents resume`.")

    def _resume(self, options):
        agent = self._agent(options["name"])
        rules.set_paused(agent, writes=False)
        self.stdout.write(f"Resumed '{agent.name}'.")

    def _agent(self, name: str) -> ApiToken:
        agent = rules.find_agent(name)
        if agent is None:
            raise CommandError(f"No agent '{name}'; `agents list` shows the names.")
        if agent.revoked_at:
            raise CommandError(f"'{agent.name}' is revoked; create a new agent instead.")
        return agent


def _state(agent: ApiToken, now) -> str:
    state = agent.state(now)
    if state != "active":
        return state
    if agent.reads_paused:
        return "paused-all"
    return "paused" if agent.writes_paused else "active"
