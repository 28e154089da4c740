"""The API tokens section of Settings: create (the secret is shown once), list, revoke.

The section renders on the Settings page through the `api_tokens_panel` tag; its forms post
here. Without JavaScript a create answers with the full tokens page showing the new secret (it
is never put in a redirect, the session or a message, where it would be stored); with HTMX the
panel alone is swapped.
"""

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from memsite.core.tokens import create_token, list_tokens, revoke_token
from memsite.models import TokenScope
from memsite.web.render import render_page

PANEL = "memsite/partials/tokens_panel.html"
EXPIRY_CHOICES = [
    ("", gettext_lazy("Never")),
    ("7", gettext_lazy("In 7 days")),
    ("30", gettext_lazy("In 30 days")),
    ("90", gettext_lazy("In 90 days")),
    ("365", gettext_lazy("In a year")),
]


class TokenForm(forms.Form):
    name = forms.CharField(
        label=gettext_lazy("Name"),
        max_length=100,
        help_text=gettext_lazy("Who will use it, e.g. “chat assistant” or “backup script”."),
    )
    scope = forms.ChoiceField(
        label=gettext_lazy("Access"),
        choices=[
            (
                TokenScope.READ_WRITE,
                gettext_lazy("Read and write (record turns, propose memories)"),
            ),
            (TokenScope.READ, gettext_lazy("Read only (search, context, lists)")),
        ],
        initial=TokenScope.READ_WRITE,
    )
    expires = forms.ChoiceField(
        label=gettext_lazy("Expires"), choices=EXPIRY_CHOICES, required=False
    )

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError(_("Give the token a name."))
        return name

    def expires_at(self):
        days = self.cleaned_data.get("expires")
        return timezone.now() + timedelta(days=int(days)) if days else None


def panel_context(form=None, new_token=None, new_secret: str = "") -> dict:
    return {
        "tokens": list(list_tokens()),
        "form": form or TokenForm(),
        "new_token": new_token,
        "new_secret": new_secret,
        "now": timezone.now(),
    }


def _respond(request: HttpRequest, context: dict, status: int = 200) -> HttpResponse:
    if request.htmx and not request.htmx.boosted:
        return render(request, PANEL, context, status=status)
    return render_page(request, "memsite/tokens.html", context)


@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _respond(request, panel_context())
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _respond(request, panel_context(form=form))
    token, secret = create_token(
        form.cleaned_data["name"], form.cleaned_data["scope"], form.expires_at()
    )
    return _respond(request, panel_context(new_token=token, new_secret=secret))


@require_POST
def revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = revoke_token(token_id)
    if token is None:
        messages.error(request, _("That token does not exist."))
    else:
        messages.success(
            request,
            _("Token “%(name)s” is revoked; agents using it now get 401.") % {"name": token.name},
        )
    if request.htmx and not request.htmx.boosted:
        return render(request, PANEL, panel_context())
    back = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        return redirect(back)
    return redirect("api_tokens")
