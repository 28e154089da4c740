"""Attachments: search and filters, the upload form (plain multipart, drag and drop on top),
one attachment's page with its preview and edits, and the login-protected file itself."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curator import attachments as svc
from curator import conversations as conv
from curator.models import Attachment, Owner
from memsite.web.forms_conversations import (
    AttachmentEditForm,
    AttachmentFilterForm,
    AttachmentUploadForm,
)
from memsite.web.render import paginate, render_page
from retrieval import lookup

PER_PAGE = 25


def _list_page(request: HttpRequest, upload: AttachmentUploadForm, status: int = 200):
    owner = Owner.default()
    filters = AttachmentFilterForm(request.GET)
    data = filters.cleaned_data if filters.is_valid() else {}
    found = lookup.find_attachments(
        owner, data.get("q", ""), data.get("direction", ""), data.get("type", "")
    )
    query = {k: v for k, v in request.GET.items() if k != "page" and v}
    context = {
        "filters": filters,
        "upload": upload,
        "page_obj": paginate(request, found.items, PER_PAGE),
        "suggestions": found.suggestions,
        "degraded": found.degraded,
        "query": urlencode(query),
        "searched": bool(data.get("q")),
        "any_attachments": Attachment.objects.filter(owner=owner).exists(),
    }
    response = render_page(request, "curator/attachments.html", context)
    response.status_code = status
    return response


@require_GET
def attachments(request: HttpRequest) -> HttpResponse:
    return _list_page(request, AttachmentUploadForm())


@require_POST
def upload(request: HttpRequest) -> HttpResponse:
    form = AttachmentUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return _list_page(request, form, status=422)
    data = form.cleaned_data
    try:
        att = conv.record_attachment(
            data["file"],
            data["direction"],
            data["description"],
            data["session"],
            data["transcription"],
            data["tags"],
        )
    except conv.AttachmentRefused as exc:
        form.add_error("file", exc.message)
        return _list_page(request, form, status=exc.status)
    messages.success(request, _("Uploaded %(name)s.") % {"name": att.original_name})
    return redirect("attachment", pk=att.pk)


def _owned(pk: int) -> Attachment:
    return get_object_or_404(
        Attachment.objects.select_related("session", "episode"), pk=pk, owner=Owner.default()
    )


def _detail_page(request: HttpRequest, att: Attachment, form=None, status: int = 200):
    facts = svc.fact_choices(att.owner, att)
    if form is None:
        initial = {
            "description": att.description,
            "transcription": att.transcription,
            "tags": ", ".join(att.tags or []),
            "linked_facts": [f.pk for f in att.linked_facts.all()],
        }
        form = AttachmentEditForm(initial=initial, facts=facts)
    context = {
        "att": att,
        "form": form,
        "is_image": svc.is_image(att),
        "linked": att.linked_facts.order_by("-created_at"),
    }
    response = render_page(request, "curator/attachment_detail.html", context)
    response.status_code = status
    return response


@require_GET
def detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _detail_page(request, _owned(pk))


@require_http_methods(["POST"])
def edit(request: HttpRequest, pk: int) -> HttpResponse:
    att = _owned(pk)
    form = AttachmentEditForm(request.POST, facts=svc.fact_choices(att.owner, att))
    if not form.is_valid():
        return _detail_page(request, att, form, status=422)
    event = svc.edit_attachment(att.pk, form.cleaned_data)
    messages.success(request, _("Saved.") if event else _("Nothing needed to change."))
    return redirect("attachment", pk=att.pk)


@require_GET
def file(request: HttpRequest, pk: int) -> HttpResponse:
    """The stored file: inline for images (the preview), a download for everything else."""
    att = _owned(pk)
    if not att.file:
        raise Http404(_("This attachment has no stored file."))
    try:
        handle = att.file.open("rb")
    except FileNotFoundError:
        raise Http404(_("The stored file is missing.")) from None
    inline = svc.is_image(att) and not request.GET.get("download")
    response = FileResponse(
        handle,
        as_attachment=not inline,
        filename=att.original_name,
        content_type=att.mime_type or "application/octet-stream",
    )
    response["X-Content-Type-Options"] = "nosniff"
    # Whatever the file holds, it never runs as a page of this site.
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response
