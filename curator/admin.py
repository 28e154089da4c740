"""The admin is a read-only window on the stored rows.

Every change of a memory goes through the write path (curator.writepath), which records its
event, makes it undoable and re-indexes it; an admin form would bypass all three. People
change memories on the pages (Facts, Review, Cards), agents through the API.
"""

from django.contrib import admin

from curator import models


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Owner)
class OwnerAdmin(ReadOnlyAdmin):
    list_display = ["key", "display_name", "identity_confirmed", "updated_at"]


@admin.register(models.Fact)
class FactAdmin(ReadOnlyAdmin):
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
class PendingItemAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "reason", "confidence", "status", "cooldown_until", "created_at"]
    list_filter = ["status", "reason"]
    raw_id_fields = ["conflicts_with", "source_turn", "resulting_fact"]


class TurnInline(ReadOnlyInline):
    model = models.ConversationTurn
    fields = ["turn_index", "role", "content", "timestamp", "extracted"]
    extra = 0
    show_change_link = True


@admin.register(models.Session)
class SessionAdmin(ReadOnlyAdmin):
    list_display = ["external_id", "title", "started_at", "ended_at"]
    search_fields = ["external_id", "title"]
    inlines = [TurnInline]


@admin.register(models.ConversationTurn)
class ConversationTurnAdmin(ReadOnlyAdmin):
    list_display = ["session", "turn_index", "role", "__str__", "timestamp", "extracted"]
    list_filter = ["role", "extracted"]
    search_fields = ["content"]
    raw_id_fields = ["session", "episode"]


@admin.register(models.Episode)
class EpisodeAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "outcome", "started_at", "importance", "source"]
    list_filter = ["outcome", "source"]
    search_fields = ["summary", "goal"]
    raw_id_fields = ["session", "linked_facts"]


@admin.register(models.Attachment)
class AttachmentAdmin(ReadOnlyAdmin):
    list_display = ["original_name", "mime_type", "size", "direction", "created_at"]
    list_filter = ["direction", "mime_type"]
    search_fields = ["original_name", "description", "extracted_text"]
    raw_id_fields = ["session", "episode", "linked_facts"]


@admin.register(models.Scratchpad)
class ScratchpadAdmin(ReadOnlyAdmin):
    list_display = ["owner", "current_focus", "updated_at"]


@admin.register(models.MemoryEvent)
class MemoryEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "event_type", "actor", "fact", "operation_id", "job_run"]
    list_filter = ["event_type", "actor"]
    search_fields = ["operation_id", "job_run"]
    raw_id_fields = ["fact", "pending"]
    date_hierarchy = "created_at"


@admin.register(models.CardRevision)
class CardRevisionAdmin(ReadOnlyAdmin):
    list_display = ["card", "author", "note", "created_at"]
    list_filter = ["card", "author"]


@admin.register(models.GuardRule)
class GuardRuleAdmin(ReadOnlyAdmin):
    list_display = ["name", "detector", "enabled", "redact_turns", "updated_at"]


@admin.register(models.GuardHit)
class GuardHitAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "rule_name", "action", "source", "agent", "excerpt"]
    list_filter = ["action", "source"]


@admin.register(models.Contradiction)
class ContradictionAdmin(ReadOnlyAdmin):
    list_display = ["found_at", "left", "right", "rule", "status", "resolution"]
    list_filter = ["status", "rule"]


@admin.register(models.SourceThreshold)
class SourceThresholdAdmin(ReadOnlyAdmin):
    list_display = ["source", "write", "pending", "updated_at"]
