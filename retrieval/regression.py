"""Saved retrieval checks: a query with the facts it must (or must not) return in its top N.

Run after any change (a new preset, a dictionary word, an import, a model switch) to see
what got better or worse. A check keeps the search settings it was saved with, so it
measures the retrieval, not whatever the debugger's sliders happen to show.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from retrieval.models import RegressionCheck
from retrieval.search import MAX_LIMIT, SearchRequest, search

SAVED = (
    "preset",
    "weights",
    "kinds",
    "mode",
    "include_inactive",
    "k",
    "session_id",
    "time_from",
    "time_to",
)


def params_from_args(args: dict) -> dict:
    """The JSON-safe subset of search arguments a check stores."""
    out = {}
    for key in SAVED:
        value = args.get(key)
        if value in (None, [], ""):
            continue
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out


def _search_args(params: dict) -> dict:
    args = {k: v for k, v in params.items() if k in SAVED}
    for key in ("time_from", "time_to"):
        if isinstance(args.get(key), str):
            args[key] = parse_datetime(args[key])
    return args


def run_check(check: RegressionCheck, now: datetime | None = None) -> dict:
    """Run one check, store and return its result: pass/fail and each expected fact's rank."""
    request = SearchRequest(
        check.query,
        owner=check.owner,
        limit=MAX_LIMIT,
        record=False,
        actor="person",
        now=now,
        **_search_args(check.params),
    )
    result = search(request)
    ranks = {s.object_id: s.rank for s in result.ranked if s.kind == "fact"}
    rows = []
    for fact_id in check.must_include:
        rank = ranks.get(fact_id)
        rows.append(
            {
                "id": fact_id,
                "must": "include",
                "rank": rank,
                "ok": rank is not None and rank <= check.within,
            }
        )
    for fact_id in check.must_exclude:
        rank = ranks.get(fact_id)
        rows.append(
            {
                "id": fact_id,
                "must": "exclude",
                "rank": rank,
                "ok": rank is None or rank > check.within,
            }
        )
    passed = all(r["ok"] for r in rows)
    outcome = {
        "passed": passed,
        "facts": rows,
        "degraded": result.degraded,
        "degraded_reason": result.degraded_reason,
    }
    check.last_run_at, check.last_passed, check.last_result = timezone.now(), passed, outcome
    check.save(update_fields=["last_run_at", "last_passed", "last_result"])
    return outcome


def run_all(owner) -> tuple[int, int]:
    """Run every check of an owner; (passed, total)."""
    checks = list(RegressionCheck.objects.filter(owner=owner))
    passed = sum(run_check(c)["passed"] for c in checks)
    return passed, len(checks)
