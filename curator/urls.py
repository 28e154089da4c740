from django.urls import path

from curator import views, views_cards, views_onboarding, views_settings

urlpatterns = [
    path("", views.home, name="home"),
    path("review/", views.review, name="review"),
    path("facts/", views.facts, name="facts"),
    path("episodes/", views.episodes, name="episodes"),
    path("attachments/", views.attachments, name="attachments"),
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
