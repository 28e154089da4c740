from django.urls import path

from memsite.web import (
    activity,
    add_memory,
    archive,
    attachments,
    calibration,
    contradictions,
    episodes,
    facts,
    guardrails,
    guide,
    history_import,
    review,
    search_page,
    sessions,
)
from memsite.web import cards as views_cards
from memsite.web import home as views
from memsite.web import onboarding as views_onboarding
from memsite.web import settings_page as views_settings

urlpatterns = [
    path("", views.home, name="home"),
    path("start/", views.landing, name="landing"),
    path("search/", search_page.search, name="search"),
    # Episodes and attachments (issue 8)
    path("episodes/", episodes.episodes, name="episodes"),
    path("episodes/<int:pk>/", episodes.detail, name="episode"),
    path("episodes/<int:pk>/edit/", episodes.edit, name="episode_edit"),
    path("attachments/", attachments.attachments, name="attachments"),
    path("attachments/upload/", attachments.upload, name="attachment_upload"),
    path("attachments/<int:pk>/", attachments.detail, name="attachment"),
    path("attachments/<int:pk>/edit/", attachments.edit, name="attachment_edit"),
    path("attachments/<int:pk>/file/", attachments.file, name="attachment_file"),
    path("turns/<int:pk>/", views.turn, name="turn"),
    # Sessions, transcripts and trace search (issue 8)
    path("sessions/", sessions.sessions, name="sessions"),
    path("sessions/<int:pk>/", sessions.session, name="session"),
    path("traces/", sessions.traces, name="traces"),
    # Review desk, facts, activity log (issue 3)
    path("review/", review.review, name="review"),
    path("review/bulk/", review.bulk, name="review_bulk"),
    path("review/contradictions/", contradictions.contradictions, name="contradictions"),
    path("review/contradictions/check/", contradictions.check_now, name="contradictions_check"),
    path(
        "review/contradictions/<int:pk>/resolve/",
        contradictions.resolve,
        name="contradiction_resolve",
    ),
    path("review/<int:pk>/", review.item, name="review_item"),
    path("review/<int:pk>/edit/", review.edit, name="review_edit"),
    path("review/<int:pk>/confirm/", review.confirm, name="review_confirm"),
    path("review/<int:pk>/ignore/", review.ignore, name="review_ignore"),
    path("review/<int:pk>/later/", review.later, name="review_later"),
    path("facts/", facts.facts, name="facts"),
    path("facts/bulk/", facts.bulk, name="facts_bulk"),
    path("facts/<int:pk>/", facts.detail, name="fact"),
    path("facts/<int:pk>/row/", facts.row, name="fact_row"),
    path("facts/<int:pk>/edit/", facts.edit, name="fact_edit"),
    # the person's own memories (issue 29): add one, delete one for good
    path("facts/new/", add_memory.new, name="memory_new"),
    path(
        "facts/<int:pk>/delete-for-good/",
        add_memory.delete_for_good,
        name="fact_delete_for_good",
    ),
    path(
        "facts/<int:pk>/<str:name>/",
        facts.action,
        name="fact_action",
    ),
    path("calibration/", calibration.calibration_page, name="calibration"),
    path("calibration/threshold/", calibration.set_threshold, name="calibration_threshold"),
    path("activity/", activity.activity, name="activity"),
    path("activity/<int:pk>/undo/", activity.undo, name="event_undo"),
    path("activity/<int:pk>/purge/", activity.purge, name="event_purge"),
    path("activity/batch/<str:key>/undo/", activity.undo_group, name="batch_undo"),
    # Onboarding, cards and settings (issue 7)
    path("onboarding/", views_onboarding.wizard, name="onboarding"),
    path("settings/", views_settings.settings_page, name="settings"),
    path("settings/guide/", guide.toggle, name="guide_toggle"),
    path("settings/language/", views_settings.context_language, name="settings_language"),
    path("settings/onboarding/reset/", views_settings.onboarding_reset, name="onboarding_reset"),
    path("settings/memory-pause/", views_settings.memory_pause, name="memory_pause"),
    # Guardrails (issue 23)
    path("settings/guardrails/", guardrails.guardrails, name="guardrails"),
    path("settings/guardrails/new/", guardrails.new, name="guardrail_new"),
    path("settings/guardrails/blocked/", guardrails.blocked, name="guardrail_blocked"),
    path("settings/guardrails/<int:pk>/", guardrails.edit, name="guardrail"),
    path("settings/guardrails/<int:pk>/switch/", guardrails.switch, name="guardrail_switch"),
    path("settings/guardrails/<int:pk>/delete/", guardrails.delete, name="guardrail_delete"),
    path("settings/guardrails/<int:pk>/apply/", guardrails.apply, name="guardrail_apply"),
    path(
        "settings/guardrails/<int:pk>/forget/<slug:batch>/",
        guardrails.forget,
        name="guardrail_forget",
    ),
    # Import chat history (issue 23)
    path("settings/import-history/", history_import.history_import, name="history_import"),
    path("settings/import-history/<int:pk>/", history_import.job_page, name="history_import_job"),
    path(
        "settings/import-history/<int:pk>/progress/",
        history_import.progress,
        name="history_import_progress",
    ),
    path(
        "settings/import-history/<int:pk>/start/", history_import.start, name="history_import_start"
    ),
    path(
        "settings/import-history/<int:pk>/cancel/",
        history_import.cancel,
        name="history_import_cancel",
    ),
    # Export and import (issue 8)
    path("settings/export/", archive.export_download, name="archive_export"),
    path("settings/import/", archive.import_upload, name="archive_import"),
    path("settings/import/<slug:token>/", archive.import_preview, name="archive_preview"),
    path("settings/import/<slug:token>/cancel/", archive.import_cancel, name="archive_cancel"),
    path("cards/", views_cards.index, name="cards"),
    path("cards/injected/", views_cards.injected, name="cards_injected"),
    path("cards/metabolism/", views_cards.metabolism_view, name="cards_metabolism"),
    path("cards/<slug:key>/", views_cards.edit, name="card"),
    path("cards/<slug:key>/preview/", views_cards.preview, name="card_preview"),
    path("cards/<slug:key>/revisions/", views_cards.revisions, name="card_revisions"),
    path("cards/<slug:key>/revisions/<int:rev>/", views_cards.revision, name="card_revision"),
    path(
        "cards/<slug:key>/revisions/<int:rev>/restore/",
        views_cards.restore,
        name="card_restore",
    ),
    path("cards/<slug:key>/diff/", views_cards.diff, name="card_diff"),
]
