from django.urls import path

from memsite.web import playground

urlpatterns = [
    path("playground/", playground.playground, name="playground"),
    path("playground/chat/", playground.chat_stream, name="playground_chat"),
    path("playground/exchanges/<slug:uid>/", playground.exchange, name="playground_exchange"),
    path("settings/chat-proxy/", playground.save_settings, name="proxy_settings"),
]
