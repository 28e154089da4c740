"""When the periodic jobs run, in the configured time zone, and whether a consumer is alive.

Huey hands periodic checks a naive UTC timestamp (its `utc` default); the validators here
convert it to settings.TIME_ZONE, so "03:00" means 03:00 where the person lives.
The consumer writes a heartbeat when it starts and every minute; the Jobs page reads it.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from lifecycle.models import Heartbeat

CONSUMER = "consumer"
ALIVE_FOR = timedelta(seconds=150)  # two missed beats and a bit


def _local(ts: datetime) -> datetime:
    aware = ts if ts.tzinfo else ts.replace(tzinfo=UTC)
    return aware.astimezone(ZoneInfo(settings.TIME_ZONE))


def at_local(hour: int, minute: int = 0):
    def check(ts: datetime) -> bool:
        local = _local(ts)
        return local.hour == hour and local.minute == minute

    return check


def hourly(minute: int):
    return lambda ts: _local(ts).minute == minute


def every_minute(ts: datetime) -> bool:
    return True


@dataclass(frozen=True)
class Periodic:
    task: str
    title: str | Promise
    when: str | Promise
    check: object

    def next_run(self, now: datetime | None = None) -> datetime:
        """The next minute the check accepts (searched minute by minute, at most 2 days)."""
        start = (now or timezone.now()).astimezone(UTC).replace(second=0, microsecond=0)
        for n in range(1, 2 * 24 * 60 + 1):
            moment = start + timedelta(minutes=n)
            if self.check(moment.replace(tzinfo=None)):
                return moment
        return start


def backup_time() -> tuple[int, int]:
    """MEMSITE_BACKUP_TIME as (hour, minute); a value that is no HH:MM means 02:30."""
    try:
        hour, minute = (int(part) for part in settings.BACKUP_TIME.split(":"))
    except ValueError:
        return 2, 30
    return (hour, minute) if 0 <= hour < 24 and 0 <= minute < 60 else (2, 30)


def _backup_periodic() -> Periodic:
    hour, minute = backup_time()
    if not settings.BACKUPS_ENABLED:
        return Periodic("nightly_backup", _("Nightly backup"), _("off (MEMSITE_BACKUPS)"), never)
    when = _("every day at %(hour)02d:%(minute)02d (%(zone)s)") % {
        "hour": hour,
        "minute": minute,
        "zone": settings.TIME_ZONE,
    }
    return Periodic("nightly_backup", _("Nightly backup"), when, at_local(hour, minute))


def never(ts: datetime) -> bool:
    return False


def periodic() -> list[Periodic]:
    hour = settings.CONSOLIDATE_HOUR
    return [
        _backup_periodic(),
        Periodic(
            "nightly_consolidation",
            _("Nightly consolidation"),
            _("every day at %(hour)02d:00 (%(zone)s)") % {"hour": hour, "zone": settings.TIME_ZONE},
            at_local(hour),
        ),
        Periodic(
            "hourly_upkeep",
            _("Metrics snapshot, catch-up of a missed night"),
            _("every hour at :07"),
            hourly(7),
        ),
        Periodic(
            "prune_conversation_logs",
            _("Delete JSONL conversation backups older than %(days)s days")
            % {"days": settings.CONVERSATION_LOG_RETENTION_DAYS},
            _("every day at %(hour)02d:30 (%(zone)s)") % {"hour": hour, "zone": settings.TIME_ZONE},
            at_local(hour, 30),
        ),
        Periodic(
            "prune_search_logs",
            _("Delete recall log entries older than %(days)s days")
            % {"days": settings.RECALL_LOG_DAYS},
            _("every day at %(hour)02d:40 (%(zone)s)") % {"hour": hour, "zone": settings.TIME_ZONE},
            at_local(hour, 40),
        ),
        Periodic(
            "find_contradictions",
            _("Find facts that contradict each other (Review → Contradictions)"),
            _("every day at %(hour)02d:50 (%(zone)s)") % {"hour": hour, "zone": settings.TIME_ZONE},
            at_local(hour, 50),
        ),
        Periodic("heartbeat", _("Consumer heartbeat"), _("every minute"), every_minute),
    ]


def check_for(task: str):
    """The run-time check of one periodic task: the tasks and the Jobs page read one list."""
    return next(p.check for p in periodic() if p.task == task)


def beat(started: bool = False) -> None:
    now = timezone.now()
    defaults = {"pid": os.getpid(), "host": socket.gethostname(), "beat_at": now}
    if started:
        defaults["started_at"] = now
    Heartbeat.objects.update_or_create(name=CONSUMER, defaults=defaults)


def consumer() -> Heartbeat | None:
    """The consumer's last heartbeat if it is recent (None: no consumer seems to run)."""
    row = Heartbeat.objects.filter(name=CONSUMER).first()
    if row is None or timezone.now() - row.beat_at > ALIVE_FOR:
        return None
    return row


def last_beat() -> Heartbeat | None:
    return Heartbeat.objects.filter(name=CONSUMER).first()
