from django.contrib import admin

from curator.admin import ReadOnlyAdmin, ReadOnlyInline
from retrieval import models


@admin.register(models.SearchDoc)
class SearchDocAdmin(ReadOnlyAdmin):
    list_display = ["kind", "object_id", "owner_id", "status", "fts_at", "embedded_at"]
    list_filter = ["kind", "status"]


@admin.register(models.EmbeddingSpace)
class EmbeddingSpaceAdmin(ReadOnlyAdmin):
    list_display = ["model_name", "dimension", "created_at"]


@admin.register(models.EmbeddingCache)
class EmbeddingCacheAdmin(ReadOnlyAdmin):
    list_display = ["model_name", "dimension", "content_hash", "created_at"]
    list_filter = ["model_name"]


class RecallHitInline(ReadOnlyInline):
    model = models.RecallHit
    extra = 0


@admin.register(models.RecallLog)
class RecallLogAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "caller", "query", "preset", "degraded", "took_ms"]
    list_filter = ["caller", "degraded"]
    search_fields = ["query"]
    inlines = [RecallHitInline]


@admin.register(models.RecallHit)
class RecallHitAdmin(ReadOnlyAdmin):
    list_display = ["log", "kind", "object_id", "rank", "score"]
    list_filter = ["kind"]


@admin.register(models.RegressionCheck)
class RegressionCheckAdmin(ReadOnlyAdmin):
    list_display = ["name", "query", "within", "last_passed", "last_run_at"]


@admin.register(models.ReindexRun)
class ReindexRunAdmin(ReadOnlyAdmin):
    list_display = ["started_at", "kind", "state", "done", "total", "finished_at"]
