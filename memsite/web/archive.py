"""Settings → export and import: download an archive, upload one, preview it, confirm it.

Uploads stream to a file under DATA_DIR/imports (Django spools large uploads to disk), so
the preview and the confirmation read the same archive without keeping it in memory; the
file is removed once it is imported, refused or cancelled (stale ones after a day).
"""

from __future__ import annotations

import logging
import re
import secrets
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.db import DatabaseError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from lifecycle.backup import export as archive
from lifecycle.backup import restore as imp
from memsite.web.render import render_page

log = logging.getLogger(__name__)
TOKEN = re.compile(r"^[0-9a-f]{32}$")
STALE_AFTER = 24 * 3600  # seconds an abandoned upload is kept


def uploads_dir() -> Path:
    return Path(settings.DATA_DIR) / "imports"


def _upload_path(token: str) -> Path:
    if not TOKEN.match(token):
        raise Http404
    path = uploads_dir() / f"{token}.zip"
    if not path.exists():
        raise Http404
    return path


@require_GET
def export_download(request: HttpRequest) -> FileResponse:
    """Build the archive in a temp file (deleted when the response closes) and send it."""
    spool = tempfile.TemporaryFile(dir=settings.DATA_DIR)
    archive.export(spool)
    spool.seek(0)
    name = f"memory-curator-{timezone.localtime():%Y%m%d-%H%M}.zip"
    return FileResponse(spool, as_attachment=True, filename=name, content_type="application/zip")


@require_POST
def import_upload(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("archive")
    if upload is None:
        return _error_page(request, _("Choose an archive file to upload."))
    _remove_stale()
    token = secrets.token_hex(16)
    path = uploads_dir() / f"{token}.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    try:
        imp.read(path)
    except imp.ArchiveError as exc:
        path.unlink(missing_ok=True)
        return _error_page(request, str(exc))
    return redirect("archive_preview", token=token)


@require_http_methods(["GET", "POST"])
def import_preview(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows what the import would do; only the POST (the confirm button) does it."""
    path = _upload_path(token)
    try:
        found = imp.read(path)
        plan = imp.plan(found)
        if request.method == "POST":
            report = imp.apply(found, plan)
    except imp.ArchiveError as exc:
        path.unlink(missing_ok=True)
        return _error_page(request, str(exc))
    except (DatabaseError, OSError) as exc:  # rolled back, copied files removed
        # The exception's text is the database's or the system's own: shown as a detail.
        log.exception("import %s failed", token)
        why = _("The import failed and nothing was changed.")
        return _error_page(request, why, detail=str(exc))
    if request.method == "GET":
        made = parse_datetime(str(found.manifest.get("created_at") or ""))
        context = {"token": token, "plan": plan, "manifest": found.manifest, "made": made}
        context["rows"] = _rows(plan)
        return render_page(request, "curator/archive_import.html", context)
    path.unlink(missing_ok=True)
    _report_message(request, report)
    return redirect("settings")


@require_POST
def import_cancel(request: HttpRequest, token: str) -> HttpResponse:
    _upload_path(token).unlink(missing_ok=True)
    messages.info(request, _("Import cancelled; nothing was changed."))
    return redirect("settings")


def _rows(plan: imp.Plan) -> list[dict]:
    labels = {
        "owners": _("owner"),
        "agents": _("agents"),
        "sessions": _("sessions"),
        "episodes": _("episodes"),
        "turns": _("conversation turns"),
        "facts": _("facts"),
        "pending": _("review items"),
        "attachments": _("attachments"),
        "scratchpads": _("scratchpad"),
        "events": _("activity events"),
        "card_revisions": _("card revisions"),
        "regression_checks": _("regression checks"),
        "guard_rules": _("guardrails"),
        "thresholds": _("confidence thresholds"),
        "contradictions": _("contradictions"),
        "recalls": _("recall log"),
        "recall_hits": _("recalled items"),
        imp.FILES: _("card files"),
    }
    return [{**row, "label": labels.get(row["kind"], row["kind"])} for row in plan.counts()]


def _report_message(request: HttpRequest, report: imp.Report) -> None:
    if report.mode == imp.RESTORE:
        messages.success(request, _("The archive was restored."))
    else:
        messages.success(
            request,
            _("The archive was merged; %(n)s conflicting item(s) kept as they were (see Activity).")
            % {"n": report.events},
        )
    if report.blocked:
        messages.info(
            request,
            _("%(n)s item(s) matched your guardrails and were left out (see the Blocked log).")
            % {"n": report.blocked},
        )
    if report.index_error:
        messages.warning(
            request,
            _("Rebuilding the search indexes failed (%(error)s); run a reindex from Search.")
            % {"error": report.index_error},
        )


def _error_page(request: HttpRequest, error: str, detail: str = "") -> HttpResponse:
    context = {"error": error, "detail": detail}
    response = render_page(request, "curator/archive_import.html", context)
    response.status_code = 400
    return response


def _remove_stale() -> None:
    folder = uploads_dir()
    if not folder.is_dir():
        return
    cutoff = time.time() - STALE_AFTER
    for path in folder.glob("*.zip"):
        if path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
