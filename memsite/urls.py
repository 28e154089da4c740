from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from memsite.api import api, llm, mcp
from memsite.web import accounts, errors, language

urlpatterns = [
    # First: agents call it most, and every pattern tried before it costs each API request.
    path("api/v1/", api.urls),
    # MCP over streamable HTTP (the same tools as `manage.py mcp` on stdio).
    path("mcp", mcp.endpoint, name="mcp"),
    path("mcp/", mcp.endpoint),
    # The OpenAI-compatible chat proxy: a chat client's base URL is /llm/v1 (docs/proxy.md).
    path("llm/v1/chat/completions", llm.chat_completions, name="llm_chat"),
    path("llm/v1/models", llm.models, name="llm_models"),
    path("agents/", include("memsite.web.urls_agents")),
    # The token list lived on Settings before the Agents page (issue 20).
    path("settings/tokens/", RedirectView.as_view(pattern_name="agents", permanent=True)),
    path("", include("memsite.web.urls_curator")),
    path("", include("memsite.web.urls_retrieval")),
    path("", include("memsite.web.urls_jobs")),
    path("", include("memsite.web.urls_proxy")),
    path("setup/", accounts.setup, name="setup"),
    path("accounts/login/", accounts.LoginView.as_view(), name="login"),
    path("accounts/logout/", accounts.LogoutView.as_view(), name="logout"),
    # The language switcher must work on the login page too.
    path("i18n/setlang/", language.set_language, name="set_language"),
    path("admin/", admin.site.urls),
]

# The app's own error pages, in its layout and language (memsite/web/errors.py).
handler404 = errors.not_found
handler403 = errors.forbidden
handler500 = errors.server_error
