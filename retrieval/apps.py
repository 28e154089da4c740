from django.apps import AppConfig
from django.conf import settings
from django.utils.translation import gettext_lazy as _


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = _("Retrieval")

    def ready(self) -> None:
        from curator import signals
        from retrieval import checks, indexing, text  # noqa: F401  (checks registers itself)

        # A written memory's keyword row commits with it (curator.signals.item_written).
        signals.item_written.connect(indexing.index_keywords_now, dispatch_uid="retrieval.fts")

        # jieba writes its dictionary cache here; the person's own words live beside it
        # (retrieval.userdict reloads them in every process when the file changes).
        text.configure(settings.CACHE_DIR / "jieba", settings.DATA_DIR / "userdict.txt")
