"""Project-wide middleware: login everywhere but the API, and messages for HTMX swaps."""

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.contrib.messages import get_messages
from django.template.loader import render_to_string


class PagesLoginRequiredMiddleware(LoginRequiredMiddleware):
    """Every page needs a login; the API authenticates agents with its own bearer tokens."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class HtmxMessagesMiddleware:
    """A swap only replaces part of the page, so pending messages ride along out-of-band."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not self._wants_messages(request, response):
            return response
        storage = get_messages(request)
        if not storage:  # iterating marks them read; check before rendering
            return response
        html = render_to_string(
            "partials/messages.html", {"messages": storage, "oob": True}, request
        )
        response.content += html.encode(response.charset)
        return response

    @staticmethod
    def _wants_messages(request, response) -> bool:
        return (
            getattr(request, "htmx", False)
            and not request.htmx.boosted
            and response.status_code < 300
            # The browser is about to load another page, which shows the messages itself.
            and "HX-Redirect" not in response
            and "HX-Location" not in response
            and response.get("Content-Type", "").startswith("text/html")
            and not getattr(response, "streaming", False)
        )
