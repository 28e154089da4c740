"""Template context every page gets: the review count for the navigation badge."""

from django.db import DatabaseError

from curator.writepath import due_pending


def review_badge(request) -> dict:
    """Items waiting for the person now (pending, or snoozed past their wake time)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    try:
        return {"review_count": due_pending().count()}
    except DatabaseError:  # a page that explains a broken database must still render
        return {"review_count": 0}
