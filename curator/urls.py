from django.urls import path

from curator import views, views_cards, views_onboarding, views_settings
from curator import views_activity as activity
from curator import views_facts as facts
from curator import views_review as review

urlpatterns = [
    path("", views.home, name="home"),
    path("start/", views.landing, name="landing"),
    path("episodes/", views.episodes, name="episodes"),
    path("attachments/", views.attachments, name="attachments"),
    path("turns/<int:pk>/", views.turn, name="turn"),
    # Review desk, facts, activity log (issue 3)
    path("review/", review.review, name="review"),
    path("review/bulk/", review.bulk, name="review_bulk"),
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
    path(
        "facts/<int:pk>/<str:name>/",
        facts.action,
        name="fact_action",
    ),
    path("activity/", activity.activity, name="activity"),
    path("activity/<int:pk>/undo/", activity.undo, name="event_undo"),
    path("activity/<int:pk>/purge/", activity.purge, name="event_purge"),
    path("activity/batch/<str:key>/undo/", activity.undo_group, name="batch_undo"),
    # Onboarding, cards and settings (issue 7)
    path("onboarding/", views_onboarding.wizard, name="onboarding"),
    path("settings/", views_settings.settings_page, name="settings"),
    path("settings/onboarding/reset/", views_settings.onboarding_reset, name="onboarding_reset"),
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
