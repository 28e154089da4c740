from django.urls import path

from memsite.web import tokens as views_tokens

urlpatterns = [
    path("", views_tokens.tokens, name="api_tokens"),
    path("<int:token_id>/revoke/", views_tokens.revoke, name="api_token_revoke"),
]
