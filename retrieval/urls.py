from django.urls import path

from curator import views

urlpatterns = [
    path("debugger/", views.coming, {"page": "debugger"}, name="debugger"),
]
