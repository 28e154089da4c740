"""Bits the review, facts and activity pages share: the "done, undo?" banner and safe redirects."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme

from curator.describe import describe
from curator.models import MemoryEvent
from curator.undo import batch_summary, undo_blocker


def done_banner(request: HttpRequest) -> dict | None:
    """After an action (`?done=<event>` or `?batch=<key>`): what happened, and its undo."""
    key = request.GET.get("batch", "")
    query = request.GET.copy()
    for name in ("batch", "done", "page"):
        query.pop(name, None)
    back = f"{request.path}?{query.urlencode()}" if query else request.path
    if key:
        summary = batch_summary(key)
        if summary["total"]:
            return {"batch": key, "next": back, **summary}
    done = request.GET.get("done", "")
    if done.isdigit():
        event = MemoryEvent.objects.filter(pk=int(done)).select_related("fact", "pending").first()
        if event is not None:
            blocker = undo_blocker(event)
            return {"event": event, "summary": describe(event), "blocker": blocker, "next": back}
    return None


def safe_next(request: HttpRequest, default: str) -> str:
    """The `next` the form carried, if it points back into this site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    allowed = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if target and allowed else default
