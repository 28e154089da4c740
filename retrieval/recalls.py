"""The recall log read back: when a fact was given to an agent."""

from curator.models import Fact
from retrieval.models import RecallHit


def recall_history(fact: Fact, limit: int = 20) -> dict:
    """How often the fact was recalled, and the newest recalls with their queries."""
    hits = (
        RecallHit.objects.filter(kind="fact", object_id=fact.pk)
        .select_related("log")
        .order_by("-log__created_at")
    )
    return {"available": True, "total": hits.count(), "rows": list(hits[:limit])}
