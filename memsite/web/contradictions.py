"""Review → Contradictions: two active facts that cannot both be true, side by side.

Each answer goes through the write path as one undoable event (keep the left, keep the
right, both are true, merge into one edited fact); without JavaScript every action is a
form post followed by a redirect back here with the "done, undo?" banner.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from curator import contradictions as inbox
from curator import writepath as wp
from curator.diff import diff_pair
from curator.models import Contradiction, Owner
from lifecycle.tasks import find_contradictions_now
from memsite.web.common import done_banner
from memsite.web.render import paginate, render_page

PER_PAGE = 25


@dataclass
class Card:
    item: Contradiction
    explanation: str
    left_html: SafeString
    right_html: SafeString


def card(item: Contradiction) -> Card:
    left, right = diff_pair(item.left.content, item.right.content)
    return Card(item, inbox.explain(item), left, right)


@require_GET
def contradictions(request: HttpRequest) -> HttpResponse:
    page = paginate(request, inbox.inbox(Owner.default()), PER_PAGE)
    context = {
        "page_obj": page,
        "cards": [card(item) for item in page],
        "banner": done_banner(request),
        "tab": "contradictions",
        "contradiction_count": page.paginator.count,
    }
    return render_page(request, "curator/contradictions.html", context)


@require_POST
def resolve(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(Contradiction, pk=pk, owner=Owner.default())
    back = reverse("contradictions")
    try:
        event = wp.resolve_contradiction(
            item.pk, request.POST.get("action", ""), text=request.POST.get("text", "")
        )
    except wp.WritePathError as exc:
        messages.error(request, str(exc))
        return redirect(f"{back}#contradiction-{item.pk}")
    return redirect(f"{back}?done={event.pk}")


@require_POST
def check_now(request: HttpRequest) -> HttpResponse:
    """Queue a scan of every active fact (in the background; at once in tests)."""
    find_contradictions_now()
    messages.info(request, _("Looking for contradictions now; new ones appear here."))
    return redirect("contradictions")
