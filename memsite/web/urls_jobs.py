from django.urls import path

from memsite.web import backups
from memsite.web import jobs as views

urlpatterns = [
    path("jobs/", views.jobs, name="jobs"),
    path("jobs/consolidate/", views.run_now, name="jobs_run_now"),
    path("jobs/backup/", backups.backup_now, name="backup_now"),
    path("settings/backups/restore/", backups.restore, name="backup_restore"),
    path("jobs/runs/<str:run_id>/", views.run_detail, name="job_run"),
    path("jobs/runs/<str:run_id>/progress/", views.run_progress, name="job_run_progress"),
    path("jobs/runs/<str:run_id>/undo/", views.run_undo, name="job_run_undo"),
    path("jobs/dead/<int:pk>/retry/", views.letter_retry, name="dead_letter_retry"),
    path("jobs/dead/<int:pk>/discard/", views.letter_discard, name="dead_letter_discard"),
]
