"""The global search behind the header's box (and its `/` shortcut): facts, episodes, turns and
pages matching the words, each kind with a link to its own list for more. Looking is not
recalling: the same keyword lookup as the Facts and Episodes lists, the literal turn search of
Traces; no access counters, no recall log. Works without JavaScript (a plain GET form)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import override
from django.views.decorators.http import require_GET

from curator.conversations import terms, trace_queryset
from curator.models import Fact, FactStatus, Owner
from curator.transcripts import trace_hit
from memsite.web.navigation import all_pages
from memsite.web.render import render_page
from retrieval import lookup

PER_KIND = 8
MAX_QUERY = 200


def find_facts(owner: Owner, q: str) -> tuple[list[Fact], int]:
    """Active facts first (the keyword index, best first), then those not active any more;
    a literal match finds a fact whose indexing is still queued."""
    ids = lookup.keyword_ids(q, owner, "fact", include_inactive=True)
    literal = Fact.objects.filter(owner=owner, content__icontains=q).exclude(pk__in=ids)
    ids += list(literal.values_list("pk", flat=True)[:PER_KIND])
    found = list(lookup.ranked(Fact.objects.filter(owner=owner), ids))
    found.sort(key=lambda fact: fact.status != FactStatus.ACTIVE)  # stable: rank kept
    return found[:PER_KIND], len(found)


def find_pages(q: str) -> list[dict]:
    """Pages whose name, in the reader's language or in English, holds the words."""
    words = [w.casefold() for w in terms(q)]
    found = []
    for name, label in all_pages():
        with override("en"):
            english = str(label)
        names = f"{label} {english}".casefold()
        if words and all(w in names for w in words):
            found.append({"url": reverse(name), "label": str(label)})
    return found


def _more(name: str, q: str, key: str = "q") -> str:
    return f"{reverse(name)}?{urlencode({key: q})}"


@require_GET
def search(request: HttpRequest) -> HttpResponse:
    q = " ".join((request.GET.get("q") or "").split())[:MAX_QUERY]
    context: dict = {"q": q, "searched": bool(q)}
    if q:
        owner = Owner.default()
        facts, fact_count = find_facts(owner, q)
        episodes = lookup.filter_episodes(owner, {"q": q})
        turns = trace_queryset(q)[: PER_KIND + 1]
        words = terms(q)
        context.update(
            facts=facts,
            fact_count=fact_count,
            episodes=list(episodes[:PER_KIND]),
            episode_more=episodes.count() > PER_KIND,
            turns=[trace_hit(turn, words) for turn in turns[:PER_KIND]],
            turn_more=len(turns) > PER_KIND,
            pages=find_pages(q),
            facts_url=_more("facts", q) + "&status=",
            episodes_url=_more("episodes", q),
            traces_url=_more("traces", q),
        )
        context["nothing"] = not any(context[k] for k in ("facts", "episodes", "turns", "pages"))
    context["title"] = _("Search: %(q)s") % {"q": q} if q else _("Search")
    return render_page(request, "curator/search.html", context)
