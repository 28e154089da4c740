import logging

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class _QuietHeartbeat(logging.Filter):
    """The consumer heartbeat runs every minute; its three log lines would drown the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "lifecycle.tasks.heartbeat" not in record.getMessage()


class LifecycleConfig(AppConfig):
    name = "lifecycle"
    verbose_name = _("Lifecycle")

    def ready(self):
        from django.db.backends.signals import connection_created

        from lifecycle import receivers  # need the models loaded
        from lifecycle.backup import recovery

        receivers.connect()
        # Not here directly: no queries while apps load. The first connection is soon enough.
        connection_created.connect(recovery.on_connection_created, dispatch_uid="recovery")
        for name in ("huey", "huey.consumer.Scheduler"):
            logging.getLogger(name).addFilter(_QuietHeartbeat())
