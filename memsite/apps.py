from django.apps import AppConfig


class MemsiteConfig(AppConfig):
    name = "memsite"
    verbose_name = "Memory Curator"

    def ready(self) -> None:
        from memsite.core import checks  # noqa: F401  (registers the start-up checks)
