"""The recall log as pages: every search an agent made, and its replay (retrieval.recalls).

The list filters by fact, time range and the API token that asked; a fact's page and the
debugger's recent recalls link here. A recall's page replays it: what it returned then,
what the same question returns now, the difference, and the events that changed its facts
in between. Replaying is a search with nothing recorded, so a plain GET does it.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from curator.models import Fact, MemoryEvent, Owner
from memsite.models import ApiToken
from memsite.web.activity import entry
from memsite.web.forms_debugger import RecallFilterForm
from memsite.web.render import paginate, render_page
from retrieval import recalls as recall_log
from retrieval.models import RecallLog

PER_PAGE = 50


def _tokens() -> dict[int, ApiToken]:
    return {t.pk: t for t in ApiToken.objects.all()}


@require_GET
def recalls(request: HttpRequest) -> HttpResponse:
    tokens = _tokens()
    form = RecallFilterForm(request.GET or None, tokens=tokens.values())
    args = form.find_args() if form.is_bound and form.is_valid() else {}
    page = paginate(request, recall_log.find(Owner.default(), **args), PER_PAGE)
    for log in page:
        token = tokens.get(log.agent_id)
        log.asked_by = token.name if token else log.caller
    fact = Fact.objects.filter(pk=args.get("fact") or 0).first()
    query = {k: v for k, v in request.GET.items() if k != "page" and v}
    context = {
        "form": form,
        "page_obj": page,
        "tokens": tokens,
        "fact": fact,
        "query": urlencode(query),
    }
    return render_page(request, "retrieval/recalls.html", context)


@require_GET
def recall(request: HttpRequest, pk: int) -> HttpResponse:
    log = get_object_or_404(RecallLog.objects.select_related("owner"), pk=pk)
    result = recall_log.replay(log)
    ids = [e["id"] for c in result.changed for e in c.events]
    events = MemoryEvent.objects.select_related("fact", "pending").prefetch_related("reverted_by")
    by_id = events.in_bulk(ids)
    changed = [
        {
            "fact_id": c.fact_id,
            "entries": [entry(by_id[e["id"]]) for e in c.events if e["id"] in by_id],
        }
        for c in result.changed
    ]
    context = {
        "log": log,
        "replay": result,
        "changed": changed,
        "token": _tokens().get(log.agent_id),
        "then_rows": _then_rows(result),
        "now_rows": _now_rows(result),
    }
    return render_page(request, "retrieval/recall.html", context)


def _then_rows(result: recall_log.Replay) -> list[dict]:
    """Each item returned then, with what became of it (gone and why, or its new rank)."""
    removed = {r.item.key: r for r in result.removed}
    moved = {m.item.key: m for m in result.moved}
    return [
        {"item": i, "removed": removed.get(i.key), "moved": moved.get(i.key)} for i in result.then
    ]


def _now_rows(result: recall_log.Replay) -> list[dict]:
    added = {i.key for i in result.added}
    moved = {m.item.key: m for m in result.moved}
    return [{"item": i, "added": i.key in added, "moved": moved.get(i.key)} for i in result.now]
