from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.urls import path
from django.views.i18n import set_language

from curator import views
from memsite import accounts
from memsite.api import api

urlpatterns = [
    path("", views.home, name="home"),
    path("review/", views.review, name="review"),
    path("facts/", views.facts, name="facts"),
    path("episodes/", views.episodes, name="episodes"),
    path("attachments/", views.attachments, name="attachments"),
    path("cards/", views.coming, {"page": "cards"}, name="cards"),
    path("debugger/", views.coming, {"page": "debugger"}, name="debugger"),
    path("jobs/", views.coming, {"page": "jobs"}, name="jobs"),
    path("settings/", views.coming, {"page": "settings"}, name="settings"),
    path("setup/", accounts.setup, name="setup"),
    path("accounts/login/", accounts.LoginView.as_view(), name="login"),
    path("accounts/logout/", accounts.LogoutView.as_view(), name="logout"),
    # The language switcher must work on the login page too.
    path("i18n/setlang/", login_not_required(set_language), name="set_language"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
