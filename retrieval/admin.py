from django.contrib import admin

from retrieval import models


@admin.register(models.SearchDoc)
class SearchDocAdmin(admin.ModelAdmin):
    list_display = ["kind", "object_id", "owner_id", "status", "fts_at", "embedded_at"]
    list_filter = ["kind", "status"]


@admin.register(models.EmbeddingSpace)
class EmbeddingSpaceAdmin(admin.ModelAdmin):
    list_display = ["model_name", "dimension", "created_at"]


@admin.register(models.EmbeddingCache)
class EmbeddingCacheAdmin(admin.ModelAdmin):
    list_display = ["model_name", "dimension", "content_hash", "created_at"]
    list_filter = ["model_name"]


class RecallHitInline(admin.TabularInline):
    model = models.RecallHit
    extra = 0


@admin.register(models.RecallLog)
class RecallLogAdmin(admin.ModelAdmin):
    list_display = ["created_at", "caller", "query", "preset", "degraded", "took_ms"]
    list_filter = ["caller", "degraded"]
    search_fields = ["query"]
    inlines = [RecallHitInline]


@admin.register(models.RecallHit)
class RecallHitAdmin(admin.ModelAdmin):
    list_display = ["log", "kind", "object_id", "rank", "score"]
    list_filter = ["kind"]


@admin.register(models.RegressionCheck)
class RegressionCheckAdmin(admin.ModelAdmin):
    list_display = ["name", "query", "within", "last_passed", "last_run_at"]


@admin.register(models.ReindexRun)
class ReindexRunAdmin(admin.ModelAdmin):
    list_display = ["started_at", "kind", "state", "done", "total", "finished_at"]
