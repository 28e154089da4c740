from django.urls import path

from memsite.web import agents

urlpatterns = [
    path("", agents.agents, name="agents"),
    path("<int:pk>/", agents.agent, name="agent"),
    path("<int:pk>/pause/", agents.pause, name="agent_pause"),
    path("<int:pk>/scopes/", agents.scopes, name="agent_scopes"),
    path("<int:pk>/revoke/", agents.revoke, name="agent_revoke"),
    path("<int:pk>/token/", agents.new_token, name="agent_new_token"),
]
