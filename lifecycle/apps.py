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
        from lifecycle import receivers  # needs the models loaded, as every ready() import

        receivers.connect()
        for name in ("huey", "huey.consumer.Scheduler"):
            logging.getLogger(name).addFilter(_QuietHeartbeat())
