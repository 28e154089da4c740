"""The app's own error pages (404, 403, 500 and a failed CSRF check), in its layout.

404 and 403 render like any page (navigation, language switcher, review badge). The 500
page must render whatever broke, the database included, so it runs no context processor
(they read the session, the user and the review count) and shows the navigation as is.
"""

import logging

from django.http import HttpRequest, HttpResponse, HttpResponseServerError
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.template import loader
from django.utils.translation import gettext as _

from memsite.web.navigation import navigation

log = logging.getLogger(__name__)


def not_found(request: HttpRequest, exception=None) -> HttpResponse:
    return render(request, "errors/404.html", status=404)


def forbidden(request: HttpRequest, exception=None) -> HttpResponse:
    return render(request, "errors/403.html", {"reason": ""}, status=403)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Usually a form left open across a logout or a server restart: say how to recover."""
    why = _("The form had expired. Reload the page and send it again.")
    return render(request, "errors/403.html", {"reason": why}, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    context = {"request": request, "nav_always": True, **navigation(request)}
    try:
        context["csrf_token"] = get_token(request)  # a cookie, no database
    except Exception:  # the page must render anyway; the language form then needs a reload
        log.exception("500 page: no CSRF token")
    html = loader.get_template("errors/500.html").render(context)
    return HttpResponseServerError(html)
