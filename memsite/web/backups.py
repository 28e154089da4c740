"""The automatic backups' two controls: "Back up now" (Jobs) and restore into a new data dir
(Settings). Plain forms: both work without JavaScript."""

from __future__ import annotations

from pathlib import Path

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from lifecycle import tasks
from lifecycle.backup import nightly


@require_POST
def backup_now(request: HttpRequest) -> HttpResponse:
    tasks.backup_now()
    messages.info(
        request,
        _("A backup is being made; it is listed here, with its check, once it is done."),
    )
    return redirect(reverse("jobs") + "#backups")


@require_POST
def restore(request: HttpRequest) -> HttpResponse:
    """Restore a chosen backup into a NEW data dir: the live one is never touched."""
    back = redirect(reverse("settings") + "#backups")
    into = (request.POST.get("into") or "").strip()
    try:
        backup = nightly.get(request.POST.get("name", ""))
    except LookupError:
        messages.error(request, _("Choose one of the backups listed."))
        return back
    if not into or not Path(into).expanduser().is_absolute():
        messages.error(request, _("Give the full path of a new, empty folder."))
        return back
    try:
        nightly.restore_into(backup, Path(into))
    except ValueError:
        messages.error(
            request,
            _(
                "Choose a new, empty folder: a backup is never restored over the data folder "
                "in use, nor into a folder that holds files."
            ),
        )
        return back
    except nightly.ChildFailed as exc:
        messages.error(request, _("The restore failed: %(error)s") % {"error": exc})
        return back
    target = Path(into).expanduser().resolve()
    messages.success(
        request,
        _(
            "%(name)s is restored into %(dir)s. To start on it, stop this server and run: "
            "MEMSITE_DATA_DIR=%(dir)s python manage.py serve. Agents then need new tokens "
            "(Agents page), and the first visit creates the owner account."
        )
        % {"name": backup.name, "dir": target},
    )
    return back
