"""`manage.py api_token create|list|revoke`: tokens for agents, from the command line.

`create` prints the token once, alone on the last line, so scripts can take `| tail -n1`.
"""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from memsite.core.tokens import create_token, find_token, list_tokens, revoke_token
from memsite.models import TokenScope


class Command(BaseCommand):
    help = "Create, list or revoke API tokens for agents."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Create a token and print it once.")
        create.add_argument("--name", required=True, help="Who uses it, e.g. 'chat assistant'.")
        create.add_argument(
            "--read-only", action="store_true", help="Only reads (search, context, lists)."
        )
        create.add_argument(
            "--expires-days", type=int, help="Expire after this many days (default: never)."
        )
        sub.add_parser("list", help="List tokens (never their secrets).")
        revoke = sub.add_parser("revoke", help="Revoke a token by its id or its prefix.")
        revoke.add_argument(
            "token", help="The id shown by `list`, the token, or its first characters."
        )

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _create(self, options):
        days = options["expires_days"]
        if days is not None and days <= 0:
            raise CommandError("--expires-days must be a positive number of days.")
        expires = timezone.now() + timedelta(days=days) if days else None
        scope = TokenScope.READ if options["read_only"] else TokenScope.READ_WRITE
        try:
            token, raw = create_token(options["name"], scope, expires)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        until = f", expires {token.expires_at:%Y-%m-%d %H:%M %Z}" if expires else ""
        self.stdout.write(
            f"Created token {token.pk} '{token.name}' ({token.scope}{until}). "
            "Copy it now: it is not stored and cannot be shown again."
        )
        self.stdout.write(raw)

    def _list(self, options):
        tokens = list(list_tokens())
        if not tokens:
            self.stdout.write("No API tokens yet. Create one with `api_token create --name NAME`.")
            return
        self.stdout.write(f"{'id':>4}  {'name':<24} {'scope':<10} {'state':<8} created / last used")
        for t in tokens:
            used = f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never"
            self.stdout.write(
                f"{t.pk:>4}  {t.name[:24]:<24} {t.scope:<10} {t.state():<8} "
                f"{t.created_at:%Y-%m-%d %H:%M} / {used}  ({t.prefix}…)"
            )

    def _revoke(self, options):
        key = options["token"].strip()
        if key.isdigit():
            token = revoke_token(int(key))
        elif (found := find_token(key)) is not None:  # the whole secret
            token = revoke_token(found.pk)
        else:
            matches = [t for t in list_tokens() if len(key) >= 6 and t.prefix.startswith(key)]
            if len(matches) > 1:
                raise CommandError(f"'{key}' matches several tokens; use the id from `list`.")
            token = revoke_token(matches[0].pk) if matches else None
        if token is None:
            raise CommandError(f"No token '{key}'; `api_token list` shows the ids.")
        self.stdout.write(f"Revoked token {token.pk} '{token.name}'.")
