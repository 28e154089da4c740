from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CuratorConfig(AppConfig):
    name = "curator"
    verbose_name = _("Memory")

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from curator import recovery

        # Not here directly: no queries while apps load. The first connection is soon enough.
        connection_created.connect(recovery.on_connection_created, dispatch_uid="curator.recovery")
