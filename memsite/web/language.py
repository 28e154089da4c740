"""The language switcher: Django's set_language, remembering the owner's choice.

Pages follow the switcher (a cookie); what is written for the agent (cards, context
headings) follows the owner's language, so the switch is recorded on the owner too.
"""

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.utils.translation import check_for_language
from django.views.i18n import set_language as django_set_language

from curator.models import Owner


@login_not_required
def set_language(request: HttpRequest) -> HttpResponse:
    response = django_set_language(request)
    code = request.POST.get("language", "")
    if request.method == "POST" and request.user.is_authenticated and _known(code):
        remember(code)
    return response


def _known(code: str) -> bool:
    return code in dict(settings.LANGUAGES) and check_for_language(code)


def remember(code: str) -> None:
    """Record the person's language (one UPDATE; skipped when it is already that)."""
    Owner.objects.filter(pk=Owner.default().pk).exclude(language=code).update(language=code)
