from django.urls import path

from memsite.web import debugger as views
from memsite.web import recalls

urlpatterns = [
    path("debugger/", views.debugger, name="debugger"),
    path("debugger/dictionary/", views.dictionary, name="debugger_dictionary"),
    path("debugger/checks/", views.save_check, name="debugger_save_check"),
    path("debugger/checks/run/", views.run_checks, name="debugger_run_checks"),
    path("debugger/checks/<int:pk>/delete/", views.delete_check, name="debugger_delete_check"),
    path("debugger/reindex/", views.start_reindex, name="debugger_reindex"),
    path("debugger/reindex/status/", views.reindex_status, name="debugger_reindex_status"),
    path("recalls/", recalls.recalls, name="recalls"),
    path("recalls/<int:pk>/", recalls.recall, name="recall"),
]
