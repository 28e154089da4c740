from django.contrib import admin

from curator import models


@admin.register(models.Owner)
class OwnerAdmin(admin.ModelAdmin):
    list_display = ["key", "display_name", "identity_confirmed", "updated_at"]


@admin.register(models.Fact)
class FactAdmin(admin.ModelAdmin):
    list_display = [
        "content",
        "subject",
        "predicate",
        "type",
        "scope",
        "status",
        "confidence",
        "verified",
        "source",
        "updated_at",
    ]
    list_filter = ["status", "type", "scope", "priority", "verified", "source"]
    search_fields = ["content", "subject", "predicate"]
    raw_id_fields = ["supersedes", "source_turn", "source_episode"]
    date_hierarchy = "created_at"


@admin.register(models.PendingItem)
class PendingItemAdmin(admin.ModelAdmin):
    list_display = ["__str__", "reason", "confidence", "status", "cooldown_until", "created_at"]
    list_filter = ["status", "reason"]
    raw_id_fields = ["conflicts_with", "source_turn", "resulting_fact"]


class TurnInline(admin.TabularInline):
    model = models.ConversationTurn
    fields = ["turn_index", "role", "content", "timestamp", "extracted"]
    extra = 0
    show_change_link = True


@admin.register(models.Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["external_id", "title", "started_at", "ended_at"]
    search_fields = ["external_id", "title"]
    inlines = [TurnInline]


@admin.register(models.ConversationTurn)
class ConversationTurnAdmin(admin.ModelAdmin):
    list_display = ["session", "turn_index", "role", "__str__", "timestamp", "extracted"]
    list_filter = ["role", "extracted"]
    search_fields = ["content"]
    raw_id_fields = ["session", "episode"]


@admin.register(models.Episode)
class EpisodeAdmin(admin.ModelAdmin):
    list_display = ["__str__", "outcome", "started_at", "importance", "source"]
    list_filter = ["outcome", "source"]
    search_fields = ["summary", "goal"]
    raw_id_fields = ["session", "linked_facts"]


@admin.register(models.Attachment)
class AttachmentAdmin(admin.ModelAdmin):
    list_display = ["original_name", "mime_type", "size", "direction", "created_at"]
    list_filter = ["direction", "mime_type"]
    search_fields = ["original_name", "description", "extracted_text"]
    raw_id_fields = ["session", "episode", "linked_facts"]


@admin.register(models.Scratchpad)
class ScratchpadAdmin(admin.ModelAdmin):
    list_display = ["owner", "current_focus", "updated_at"]


@admin.register(models.MemoryEvent)
class MemoryEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "event_type", "actor", "fact", "operation_id", "job_run"]
    list_filter = ["event_type", "actor"]
    search_fields = ["operation_id", "job_run"]
    raw_id_fields = ["fact", "pending"]
    date_hierarchy = "created_at"


@admin.register(models.CardRevision)
class CardRevisionAdmin(admin.ModelAdmin):
    list_display = ["card", "author", "note", "created_at"]
    list_filter = ["card", "author"]
