from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CuratorConfig(AppConfig):
    name = "curator"
    verbose_name = _("Memory")
