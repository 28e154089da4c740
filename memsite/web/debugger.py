"""The retrieval debugger: thin views over retrieval.search / explain / context / regression.

Everything the page shows for a query comes from the same functions the API calls. The
search form is a GET form, so the URL holds the query, filters, preset and weights: a view
can be shared and reloaded. HTMX swaps only the results while sliders move (the form stays
put, so a slider keeps its focus); without JavaScript the same form submits normally.
Changes (dictionary words, saved checks, reindex) are POSTs that redirect back.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from curator.models import Actor, ConversationTurn, Fact, Owner, Session
from lifecycle.tasks import reindex_task
from memsite.templatetags.labels import codelabel
from memsite.web.forms_debugger import (
    COMPONENT_LABELS,
    PRESET_CHOICES,
    CheckForm,
    DebuggerForm,
    WordForm,
)
from memsite.web.guide import note_first_search
from memsite.web.render import render_page
from retrieval import backends, scoring, userdict
from retrieval import context as ctx
from retrieval import text as seg
from retrieval.explain import why_not
from retrieval.indexing import keyword_context, vector_state
from retrieval.models import Kind, RecallLog, RegressionCheck, ReindexRun
from retrieval.regression import params_from_args, run_all, run_check
from retrieval.search import SearchError, SearchRequest, search

COLORS = {
    "semantic": "#2f5bd3",
    "keyword": "#1f9e6e",
    "freshness": "#d98b1f",
    "importance": "#9b4dca",
    "access": "#c4455a",
}
STAGES = ["segmentation", "fts", "embedding", "knn", "load", "scoring", "total"]


def _back(request: HttpRequest, fallback: str = "") -> str:
    target = request.POST.get("next") or fallback or reverse("debugger")
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}):
        return reverse("debugger")
    return target


# --------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------


@require_GET
def debugger(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    form = DebuggerForm(request.GET or None)
    page = {"form": form, "owner": owner, "colors": COLORS, "labels": COMPONENT_LABELS}
    page["default_preset"] = settings.SEARCH_PRESET
    chosen = form.preset_name if form.is_bound and form.is_valid() else settings.SEARCH_PRESET
    preset = scoring.PRESETS.get(chosen, scoring.PRESETS[settings.SEARCH_PRESET])
    page["half_life_default"] = preset.params.half_life_days
    page["preset_formula"] = _formula(preset)
    page["sliders"] = _sliders(form)
    page["index"] = _index_state()
    if form.is_bound and form.is_valid() and form.cleaned_data.get("q", "").strip():
        page.update(_analysis(request, form, owner))
    page["checks"] = RegressionCheck.objects.filter(owner=owner)
    page["dictionary"] = userdict.words()
    page["recent_recalls"] = RecallLog.objects.filter(owner=owner)[:8]
    page["sessions"] = Session.objects.filter(owner=owner).order_by("-started_at")[:20]
    page["share_url"] = request.get_full_path()
    page["kinds_selected"] = request.GET.getlist("kinds")
    partial = "results" if request.htmx and request.htmx.target == "debugger-results" else "content"
    return render_page(request, "retrieval/debugger.html", page, partial=partial)


def _formula(preset: scoring.Preset) -> str:
    """A preset's weights in the reader's language: "semantic 0.40 + keyword 0.45 + …"."""
    weights = preset.weights.as_dict()
    parts = [f"{COMPONENT_LABELS[n]} {w:.2f}" for n, w in weights.items() if w > 0]
    days = _("half-life %(days)s days") % {"days": f"{preset.params.half_life_days:g}"}
    return " + ".join(parts) + f" · {days}"


def _sliders(form: DebuggerForm) -> list[dict]:
    if form.is_bound and form.is_valid():
        values = form.slider_values()
    else:
        weights = scoring.PRESETS[settings.SEARCH_PRESET].weights.as_dict()
        values = {n: round(v * 100) for n, v in weights.items()}
    return [
        {"name": n, "label": COMPONENT_LABELS[n], "value": values[n], "color": COLORS[n]}
        for n in scoring.COMPONENTS
    ]


def _index_state() -> dict:
    state = vector_state()
    run = ReindexRun.objects.first()
    return {"vector_ok": state.ok, "reason": state.reason, "model": state.model, "run": run}


def _analysis(request: HttpRequest, form: DebuggerForm, owner: Owner) -> dict:
    query = form.cleaned_data["q"].strip()
    args = form.search_args()
    try:
        request = SearchRequest(
            query, owner=owner, record=False, caller="debugger", actor=Actor.PERSON, **args
        )
        result = search(request)
    except SearchError as exc:
        return {"search_error": str(exc)}
    note_first_search(owner)
    total = max(1.0, result.timings_ms.get("total", 1.0))
    gate, absolute = settings.CONTEXT_RECALL_GATE, _absolute(result)
    rows = [
        _row(item, result.tokens, absolute.get((item.kind, item.id)), gate) for item in result.items
    ]
    data = {
        "query": query,
        "result": result,
        "rows": rows,
        "gate": gate,
        "preset_label": dict(PRESET_CHOICES).get(result.preset, result.preset),
        "under_gate": sum(1 for row in rows if row["under_gate"]),
        "query_segments": seg.words(query),
        "query_tokens": result.tokens,
        "left_out": backends.left_out_terms(query),
        "suggested_words": merge_suggestions(query),
        "timings": [
            {"name": s, "ms": result.timings_ms[s], "pct": 100 * result.timings_ms[s] / total}
            for s in STAGES
            if s in result.timings_ms
        ],
        "shares_line": shares_line(result.signals.get("shares")),
        "as_person": result.signals.get("as_the_person") or "",
        "check_params_json": json.dumps(params_from_args(args), ensure_ascii=False),
        "top_fact_ids": ", ".join(str(i.id) for i in result.items if i.kind == "fact")[:60],
    }
    data["preview"] = _preview(query, owner, args)
    if why := form.cleaned_data.get("why", "").strip():
        data.update(_why(query, why, owner, result))
    return data


def _absolute(result) -> dict[tuple[str, int], scoring.Scored]:
    """Each result scored on absolute values (cosine itself, saturated BM25): what the recall
    gate compares (retrieval.context.gate_scores), kept with its components so a part that
    only looks strong after this search's min-max rescaling shows what it really is."""
    weights = scoring.Weights(**(result.base_weights or result.weights))
    params = scoring.Params(
        half_life_days=result.params["half_life_days"], normalisation="absolute"
    )
    ranges = scoring.Ranges(None, None)
    return {c.key: scoring.score_one(c, weights, params, ranges) for c in result.scoring_input}


def _row(item, query_tokens: list[str], absolute: scoring.Scored | None, gate: float) -> dict:
    """One result: its rank score (relative to this search's candidates), its absolute score
    against the recall gate, and each component with both. More columns read from here."""
    parts = []
    for n in scoring.COMPONENTS:
        if n not in item.breakdown:
            continue
        part = {"name": n, "label": COMPONENT_LABELS[n], "color": COLORS[n], **item.breakdown[n]}
        part["absolute"] = absolute.breakdown[n].normalised if absolute else None
        parts.append(part)
    gate_score = absolute.score if absolute else 0.0
    return {
        "item": item,
        "parts": parts,
        "gate_score": gate_score,
        "under_gate": gate_score < gate,
        "segments": seg.words(f"{item.title}\n{item.content}"),
        "context_words": _context_words(item, query_tokens),
        "signals": signal_lines(item.signals),
    }


def signal_lines(signals: dict) -> list[dict]:
    """The query's signals that moved a result (retrieval/signals.py), as sentences."""
    lines = []
    if memory := signals.get("memory"):
        text = _("Found through the memory extracted from it: %(kind)s #%(id)s (+%(added).3f)")
        lines.append(("memory", text % {**memory, "kind": codelabel(memory["kind"])}))
    if previous := signals.get("previous"):
        text = _("Found by meaning through the turn before it: #%(id)s (+%(added).3f)")
        lines.append(("previous", text % previous))
    if when := signals.get("time"):
        text = _("In the time range searched first: %(text)s (%(start)s – %(end)s)")
        dates = {"start": when["start"][:10], "end": when["end"][:10]}
        lines.append(("time", text % {**when, **dates}))
    if name := signals.get("name"):
        if name.get("speaker"):
            text = _("Said by a person the question names: %(names)s (+%(added).3f)")
        else:
            text = _("Shares a name with the question: %(names)s (+%(added).3f)")
        lines.append(("name", text % {"names": ", ".join(name["names"]), "added": name["added"]}))
    if latest := signals.get("latest"):
        if "supersedes" in latest:
            text = _("A question about now: ranked above the fact it replaced (#%(supersedes)s)")
        else:
            text = _("A question about now: newer items first (newest #%(newest)s, +%(added).3f)")
        lines.append(("latest", text % latest))
    if part := signals.get("part"):
        if "n" in part:
            text = _("Evidence for question part %(n)s of %(of)s: %(text)s")
        else:  # a recall logged before parts were numbered
            text = _("Best evidence for a part of the question: %(text)s")
        lines.append(("part", text % part))
    return [{"name": n, "text": t} for n, t in lines]


def shares_line(shares: dict | None) -> str:
    """The two channels' shares this question got (scoring.question_shares), as a sentence."""
    if not shares:
        return ""
    conf = shares["confidence"]
    values = {
        "semantic": shares["semantic"],
        "keyword": shares["keyword"],
        "vector": "—" if conf["vector"] is None else f"{conf['vector']:.2f}",
        "kw_conf": "—" if conf["keyword"] is None else f"{conf['keyword']:.2f}",
    }
    if shares["chinese"]:
        text = _(
            "Channel shares for this question: meaning %(semantic).2f, keywords %(keyword).2f "
            "(a Chinese question starts from 0.55 : 0.30; how far each channel's best stands "
            "out: meaning %(vector)s, keywords %(kw_conf)s)"
        )
    else:
        text = _(
            "Channel shares for this question: meaning %(semantic).2f, keywords %(keyword).2f "
            "(how far each channel's best stands out: meaning %(vector)s, keywords %(kw_conf)s)"
        )
    return text % values


def _context_words(item, query_tokens: list[str]) -> list[str]:
    """Query words found only in the turn before this one (the keyword index's context)."""
    turn = item.kind == Kind.TURN and ConversationTurn.objects.filter(pk=item.id).first()
    if not turn:
        return []
    before = seg.shared_tokens("", keyword_context(Kind.TURN, turn), query_tokens)
    return [w for w in before if w not in item.matched]


def merge_suggestions(text: str, limit: int = 8) -> list[str]:
    """Adjacent short Chinese words jieba split apart: candidates for the dictionary."""
    words = seg.words(text)
    known = set(userdict.words())
    found: dict[str, None] = {}
    for a, b in zip(words, words[1:], strict=False):
        joined = a + b
        if seg.grams(a) and seg.grams(b) and len(joined) <= 6 and joined not in known:
            if joined not in words:
                found[joined] = None
    return list(found)[:limit]


def _preview(query: str, owner: Owner, args: dict):
    # The debugger picks a session from its list (a database id); agents name theirs.
    session = Session.objects.filter(pk=args.get("session_id") or 0).first()
    try:
        return ctx.assemble(
            query,
            owner=owner,
            session_id=session,
            record=False,
            actor=Actor.PERSON,
            caller="debugger",
            preset=args.get("preset"),
            weights=args.get("weights"),
            as_of=args.get("as_of"),
        )
    except SearchError:
        return None


def _why(query: str, why: str, owner: Owner, result) -> dict:
    key = why.lstrip("#")
    if key.isdigit():
        return {"why": why_not(query, "fact", int(key), result=result), "why_input": why}
    matches = Fact.objects.filter(owner=owner, content__icontains=why).order_by("-updated_at")[:10]
    return {"why_matches": matches, "why_input": why}


# --------------------------------------------------------------------------------------
# Changes (POST, then back to the page)
# --------------------------------------------------------------------------------------


@require_POST
def dictionary(request: HttpRequest) -> HttpResponse:
    form = WordForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Give a word to add."))
        return redirect(_back(request))
    word, action = form.cleaned_data["word"], form.cleaned_data.get("action") or "add"
    try:
        if action == "remove":
            done = userdict.remove(word)
            text = _("Removed “%(w)s” from the dictionary.")
            text = text if done else _("“%(w)s” was not in the dictionary.")
        else:
            done = userdict.add(word)
            text = _(
                "Added “%(w)s” to the dictionary. Run a reindex so stored items are segmented "
                "with it."
            )
            text = text if done else _("“%(w)s” is already in the dictionary.")
    except userdict.InvalidWord as exc:
        messages.error(request, str(exc))
        return redirect(_back(request))
    messages.success(request, text % {"w": word})
    return redirect(_back(request))


@require_POST
def save_check(request: HttpRequest) -> HttpResponse:
    form = CheckForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(e for errs in form.errors.values() for e in errs)
        messages.error(request, _("The check was not saved: %(e)s") % {"e": errors})
        return redirect(_back(request))
    try:
        params = json.loads(form.cleaned_data.get("params") or "{}")
    except ValueError:
        params = {}
    check = RegressionCheck.objects.create(
        owner=Owner.default(),
        name=form.cleaned_data["name"],
        query=form.cleaned_data["query"],
        params=params if isinstance(params, dict) else {},
        must_include=form.cleaned_data["must_include"],
        must_exclude=form.cleaned_data["must_exclude"],
        within=form.cleaned_data["within"],
    )
    run_check(check)
    messages.success(request, _("Check saved and run."))
    return redirect(_back(request))


@require_POST
def run_checks(request: HttpRequest) -> HttpResponse:
    passed, total = run_all(Owner.default())
    messages.success(request, _("%(p)d of %(t)d checks passed.") % {"p": passed, "t": total})
    return redirect(_back(request) + "#checks")


@require_POST
def delete_check(request: HttpRequest, pk: int) -> HttpResponse:
    get_object_or_404(RegressionCheck, pk=pk, owner=Owner.default()).delete()
    messages.success(request, _("Check deleted."))
    return redirect(_back(request) + "#checks")


@require_POST
def start_reindex(request: HttpRequest) -> HttpResponse:
    """One click: queue a full reindex (a new embedding model empties the vectors first)."""

    busy = ReindexRun.objects.filter(state__in=[ReindexRun.State.QUEUED, ReindexRun.State.RUNNING])
    if busy.exists():
        messages.info(request, _("A reindex is already queued or running."))
        return redirect(_back(request))
    run = ReindexRun.objects.create(model_name=vector_state().model)
    reindex_task(run.pk)
    messages.success(request, _("Reindex queued: search keeps working on keywords meanwhile."))
    return redirect(_back(request))


@require_GET
def reindex_status(request: HttpRequest) -> HttpResponse:
    return render_page(
        request, "retrieval/debugger.html", {"index": _index_state()}, partial="reindex"
    )
