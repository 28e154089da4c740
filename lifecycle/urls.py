from django.urls import path

from curator import views

urlpatterns = [
    path("jobs/", views.coming, {"page": "jobs"}, name="jobs"),
]
