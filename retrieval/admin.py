from django.contrib import admin

from retrieval import models


@admin.register(models.SearchDoc)
class SearchDocAdmin(admin.ModelAdmin):
    list_display = ["kind", "object_id", "owner_id", "fts_at", "embedded_at"]
    list_filter = ["kind"]


@admin.register(models.EmbeddingSpace)
class EmbeddingSpaceAdmin(admin.ModelAdmin):
    list_display = ["model_name", "dimension", "created_at"]


@admin.register(models.EmbeddingCache)
class EmbeddingCacheAdmin(admin.ModelAdmin):
    list_display = ["model_name", "dimension", "content_hash", "created_at"]
    list_filter = ["model_name"]
