"""First run (create the owner account), login and logout.

The first-run page exists only while no user exists: afterwards it redirects to login,
so nobody can create a second account through it. The check is made again inside the
transaction that creates the account, under the database's write lock, so concurrent
first-run submissions create exactly one account.
"""

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model, login, password_validation
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curator.models import Owner


class SetupForm(forms.Form):
    username = forms.CharField(label=gettext_lazy("User name"), max_length=150)
    display_name = forms.CharField(
        label=gettext_lazy("How should the assistant call you?"), max_length=200, required=False
    )
    password1 = forms.CharField(label=gettext_lazy("Password"), widget=forms.PasswordInput)
    password2 = forms.CharField(label=gettext_lazy("Password again"), widget=forms.PasswordInput)

    def clean(self):
        data = super().clean()
        if data.get("password1") != data.get("password2"):
            self.add_error("password2", _("The two passwords differ."))
        elif data.get("password1"):
            user = get_user_model()(username=data.get("username", ""))
            try:
                password_validation.validate_password(data["password1"], user)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


def needs_setup() -> bool:
    return not get_user_model().objects.exists()


@login_not_required
def setup(request: HttpRequest) -> HttpResponse:
    if not needs_setup():
        return redirect("login")
    form = SetupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = _create_owner_account(form.cleaned_data)
        if user is None:  # another first-run submission created the account first
            messages.info(request, _("The owner account already exists; log in with it."))
            return redirect("login")
        login(request, user)
        messages.success(request, _("Welcome! Your account is ready."))
        return redirect("home")
    return render(request, "accounts/setup.html", {"form": form})


@transaction.atomic
def _create_owner_account(data: dict):
    """The new superuser, or None when one already exists.

    The database runs transactions as BEGIN IMMEDIATE (memsite/db), so this block holds the
    write lock before it reads: the check and the create are one step, and a submission that
    passed the page's first check while another was creating the account stops here.
    """
    if not needs_setup():
        return None
    user = get_user_model().objects.create_superuser(data["username"], "", data["password1"])
    owner = Owner.default()
    if data.get("display_name") and not owner.display_name:
        owner.display_name = data["display_name"]
    # The language the setup page was shown in is the person's until they switch.
    owner.language = owner.language or translation.get_language() or ""
    owner.save(update_fields=["display_name", "language", "updated_at"])
    return user


@method_decorator(login_not_required, name="dispatch")
class LoginView(auth_views.LoginView):
    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def dispatch(self, request, *args, **kwargs):
        if needs_setup():
            return redirect("setup")
        return super().dispatch(request, *args, **kwargs)


class LogoutView(auth_views.LogoutView):
    """POST only (Django's default), so a link or a prefetch cannot log the person out."""
