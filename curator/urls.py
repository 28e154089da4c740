from django.urls import path

from curator import views

urlpatterns = [
    path("", views.home, name="home"),
    path("review/", views.review, name="review"),
    path("facts/", views.facts, name="facts"),
    path("episodes/", views.episodes, name="episodes"),
    path("attachments/", views.attachments, name="attachments"),
    path("cards/", views.coming, {"page": "cards"}, name="cards"),
    path("settings/", views.coming, {"page": "settings"}, name="settings"),
]
