"""Settings → Import history: upload a ChatGPT / Claude export or a JSONL file, see the preview,
start it, follow its progress (HTMX polling, or reloading without JavaScript), cancel or
resume it. The work runs in the task consumer (lifecycle.tasks.import_chats)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curator.guard import rules as guard
from curator.models import Role
from lifecycle import chat_formats, chat_import, schedule, tasks
from lifecycle.chat_formats import ImportRefused
from lifecycle.models import ChatImport, ImportStatus
from memsite.web.render import render_page

RECENT = 20
ACTIVE = (ImportStatus.QUEUED, ImportStatus.RUNNING, ImportStatus.CANCELLING)
LANGUAGES = {
    "zh": pgettext_lazy("language of a conversation", "Chinese"),
    "en": pgettext_lazy("language of a conversation", "English"),
}


class UploadForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("Export file"),
        help_text=gettext_lazy("conversations.json, the export's .zip, or a .jsonl file."),
    )
    fmt = forms.ChoiceField(
        label=gettext_lazy("Format"),
        choices=[
            (chat_formats.CHATGPT, gettext_lazy("ChatGPT export")),
            (chat_formats.CLAUDE, gettext_lazy("Claude export")),
            (chat_formats.JSONL, gettext_lazy("JSONL, one turn per line")),
        ],
    )


@require_http_methods(["GET", "POST"])
def history_import(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = chat_import.stage_upload(form.cleaned_data["file"], form.cleaned_data["fmt"])
        except ImportRefused as exc:
            form.add_error("file", _("Refused, nothing imported: %(why)s") % {"why": exc})
        else:
            return redirect("history_import_job", pk=job.pk)
    context = {"form": form, "imports": ChatImport.objects.all()[:RECENT]}
    response = render_page(request, "curator/history_import.html", context)
    if request.method == "POST":
        response.status_code = 400
    return response


def _context(job: ChatImport) -> dict:
    extracted, user_turns = chat_import.extraction_state(job)
    preview = dict(job.preview or {})
    for key in ("first", "last"):
        preview[key] = parse_datetime(preview.get(key) or "")
    for conversation in preview.get("sample", []):
        for turn in conversation["turns"]:
            turn["when"] = parse_datetime(turn["timestamp"])
            turn["role_label"] = Role(turn["role"]).label if turn["role"] in Role.values else ""
    langs = [(LANGUAGES.get(k, _("other")), n) for k, n in preview.get("languages", {}).items()]
    labels = guard.detector_labels()  # a detector's stored name, in the reader's language
    for key in ("masked", "blocked", "review"):
        preview[key] = [
            {**row, "rule": labels.get(row["rule"], row["rule"])} for row in preview.get(key, [])
        ]
    return {
        "job": job,
        "p": preview,
        "langs": langs,  # not "languages": base.html sets that one
        "interrupted": chat_import.interrupted(job),
        "percent": chat_import.percent(job),
        "active": job.status in ACTIVE and not chat_import.interrupted(job),
        "resumable": job.status in (ImportStatus.INTERRUPTED, ImportStatus.FAILED)
        or chat_import.interrupted(job),
        "extracted": extracted,
        "user_turns": user_turns,
        "existing": job.turns_done - job.turns_added - job.turns_differing,
    }


@require_GET
def job_page(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(ChatImport, pk=pk)
    return render_page(request, "curator/history_import_job.html", _context(job))


@require_GET
def progress(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled every second while the import runs; once it stops, the whole page is swapped."""
    job = get_object_or_404(ChatImport, pk=pk)
    context = _context(job)
    if not context["active"] and request.htmx:
        response = render_page(request, "curator/history_import_job.html", context)
        response["HX-Retarget"], response["HX-Reswap"] = "#main", "innerHTML"
        return response
    return render_page(request, "curator/history_import_job.html", context, partial="progress")


@require_POST
def start(request: HttpRequest, pk: int) -> HttpResponse:
    """Start a previewed import, or resume an interrupted or failed one."""
    job = get_object_or_404(ChatImport, pk=pk)
    startable = job.status == ImportStatus.READY or _context(job)["resumable"]
    if not startable:
        messages.info(
            request, _("This import is already %(state)s.") % {"state": job.get_status_display()}
        )
        return redirect("history_import_job", pk=job.pk)
    chat_import.queue(job)
    tasks.import_chats(job.pk)
    job.refresh_from_db()
    if job.status == ImportStatus.QUEUED and schedule.consumer() is None:
        messages.warning(
            request,
            _(
                "Queued, but no task consumer is running: it starts when you run "
                "“make run” (or manage.py serve)."
            ),
        )
    return redirect("history_import_job", pk=job.pk)


@require_POST
def cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = chat_import.cancel(get_object_or_404(ChatImport, pk=pk))
    if job.status == ImportStatus.CANCELLING:
        messages.info(request, _("Stopping after the conversation being stored."))
    elif job.position:
        messages.info(
            request,
            _("Cancelled: %(n)d of %(total)d conversations were stored and stay.")
            % {"n": job.position, "total": job.conversations},
        )
    else:
        messages.info(request, _("Cancelled; nothing was imported."))
    return redirect("history_import_job", pk=job.pk)
