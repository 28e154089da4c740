"""The cards pages: overview, editor with live preview, conflicts, revisions, injected preview,
metabolism. The logic lives in curator/cards.py, compiler.py and metabolism.py."""

import logging

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from curator import cards, compiler, metabolism, profile
from curator.generated import colon
from curator.models import Actor, CardAuthor, CardRevision
from memsite.core import llm
from memsite.web.render import render_page

log = logging.getLogger(__name__)

CONFLICT_MARKERS = ("<<<<<<< ", ">>>>>>> ")


def _spec(key: str) -> cards.CardSpec:
    try:
        return cards.spec(key)
    except KeyError:
        raise Http404(key) from None


def index(request: HttpRequest) -> HttpResponse:
    rows = []
    for key, spec in cards.CARDS.items():
        text = cards.read(key)
        rows.append(
            {
                "key": key,
                "spec": spec,
                "exists": bool(text.strip()),
                "usage": cards.measure(key, text),
                "last": cards.last_change(key, text),
                "revisions": CardRevision.objects.filter(card=key).count(),
            }
        )
    return render_page(request, "curator/cards.html", {"rows": rows})


# --------------------------------------------------------------------------------------
# Editor
# --------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def edit(request: HttpRequest, key: str) -> HttpResponse:
    spec = _spec(key)
    if request.method == "GET":
        text = cards.read(key)
        return _editor(request, key, spec, content=text, base=text)
    content = request.POST.get("content", "")
    base = request.POST.get("base", "")
    action = request.POST.get("action", "save")
    if action == "preview":  # the no-JS preview: render what was typed, save nothing
        return _editor(request, key, spec, content=content, base=base, previewing=True)
    if action == "merge" and _has_markers(content):
        error = _("Resolve the conflict blocks (<<<<<<< … >>>>>>>) before saving the merge.")
        return _editor(request, key, spec, content=content, base=base, error=error)
    try:
        revision = cards.save(key, content, CardAuthor.PERSON, base=base, merge_refresh=True)
    except cards.CardConflict as conflict:
        return _conflict(request, key, spec, conflict)
    except OSError as exc:  # disk full, permissions: the card is unchanged, say why
        log.exception("saving card %s failed", key)
        error = _("Not saved: %(reason)s") % {"reason": exc.strerror or exc}
        return _editor(request, key, spec, content=content, base=base, error=error)
    if revision is None:
        messages.info(request, _("No changes to save."))
    elif revision.merged_with:
        messages.success(request, _merged_message(spec, revision.merged_with))
    else:
        messages.success(request, _("Saved %(card)s.") % {"card": spec.title})
    if request.htmx:
        text = cards.read(key)
        return _editor(request, key, spec, content=text, base=text)
    return redirect("card", key=key)


def _merged_message(spec, writers: list[cards.Writer]) -> str:
    newest = writers[0]
    return _(
        "Saved %(card)s, merged: %(writer)s changed it at %(when)s while you were editing. "
        "Your changes are on other lines, so both are kept."
    ) % {
        "card": spec.title,
        "writer": newest.label,
        "when": timezone.localtime(newest.when).strftime("%H:%M:%S") if newest.when else "?",
    }


def _has_markers(text: str) -> bool:
    lines = text.splitlines()
    return any(line.startswith(CONFLICT_MARKERS) for line in lines) and "=======" in lines


def _editor(request, key, spec, *, content, base, previewing=False, error="") -> HttpResponse:
    context = {
        "key": key,
        "spec": spec,
        "content": content,
        "base": base,
        "preview": cards.render(content),
        "usage": cards.measure(key, content),
        "last": cards.last_change(key),
        "previewing": previewing,
        "error": error,
        "path": cards.card_path(key),
    }
    return render_page(request, "curator/cards_edit.html", context)


def _conflict(request, key, spec, conflict: cards.CardConflict) -> HttpResponse:
    merged, conflicts = cards.merge(conflict.base, conflict.mine, conflict.theirs)
    context = {
        "key": key,
        "spec": spec,
        "mine": conflict.mine,
        "theirs": conflict.theirs,
        "diff": cards.diff(conflict.theirs, conflict.mine),
        "merged": merged,
        "conflicts": conflicts,
        "last": cards.last_change(key),
        "writers": conflict.writers,
    }
    return render_page(request, "curator/cards_conflict.html", context)


@require_POST
def preview(request: HttpRequest, key: str) -> HttpResponse:
    """The live preview fragment (HTMX posts the text area while the person types)."""
    _spec(key)
    content = request.POST.get("content", "")
    context = {"preview": cards.render(content), "usage": cards.measure(key, content)}
    return render(request, "curator/partials/card_preview.html", context)


# --------------------------------------------------------------------------------------
# Revisions
# --------------------------------------------------------------------------------------


def revisions(request: HttpRequest, key: str) -> HttpResponse:
    spec = _spec(key)
    queryset = CardRevision.objects.filter(card=key)
    page = Paginator(queryset, 25).get_page(request.GET.get("page"))
    current = cards.fingerprint(cards.read(key))
    for rev in page:
        rev.is_current = cards.fingerprint(rev.content) == current  # nothing to restore
        rev.usage = cards.measure(key, rev.content)  # the editor's unit (bytes, lines, ...)
    # Compare the newest revision that differs from the card with the card itself.
    default_from = next((n for n, rev in enumerate(page, 1) if not rev.is_current), 1)
    context = {"key": key, "spec": spec, "page_obj": page, "default_from": default_from}
    return render_page(request, "curator/cards_revisions.html", context)


def revision(request: HttpRequest, key: str, rev: int) -> HttpResponse:
    spec = _spec(key)
    obj = get_object_or_404(CardRevision, card=key, pk=rev)
    previous = CardRevision.objects.filter(card=key, pk__lt=obj.pk).first()
    context = {
        "key": key,
        "spec": spec,
        "rev": obj,
        "html": cards.render(obj.content),
        "previous": previous,
        "is_current": cards.normalise(obj.content) == cards.normalise(cards.read(key)),
    }
    return render_page(request, "curator/cards_revision.html", context)


def _version(key: str, ref: str) -> tuple[str, str]:
    """A revision id or "current" -> (label, text)."""
    if ref in ("", "current"):
        return _("current"), cards.read(key)
    if not ref.isdigit():
        raise Http404(ref)
    obj = get_object_or_404(CardRevision, card=key, pk=int(ref))
    label = _("revision #%(id)s (%(when)s)") % {
        "id": obj.pk,
        "when": obj.created_at.strftime("%Y-%m-%d %H:%M"),
    }
    return label, obj.content


def diff(request: HttpRequest, key: str) -> HttpResponse:
    """Any two versions: ?a=<id|current>&b=<id|current>."""
    spec = _spec(key)
    a, b = request.GET.get("a", ""), request.GET.get("b", "current")
    label_a, text_a = _version(key, a)
    label_b, text_b = _version(key, b)
    context = {
        "key": key,
        "spec": spec,
        "a": a or "current",
        "b": b,
        "label_a": label_a,
        "label_b": label_b,
        "diff": cards.diff(text_a, text_b),
        "choices": CardRevision.objects.filter(card=key)[:200],
    }
    return render_page(request, "curator/cards_diff.html", context)


@require_POST
def restore(request: HttpRequest, key: str, rev: int) -> HttpResponse:
    spec = _spec(key)
    obj = get_object_or_404(CardRevision, card=key, pk=rev)
    try:
        result = cards.restore(key, obj, CardAuthor.PERSON)
    except OSError as exc:
        messages.error(request, _("Not restored: %(reason)s") % {"reason": exc.strerror or exc})
        return redirect("card_revisions", key=key)
    if result is None:
        messages.info(request, _("%(card)s already has this content.") % {"card": spec.title})
    else:
        messages.success(
            request,
            _("Restored revision #%(id)s of %(card)s (saved as a new revision).")
            % {"id": obj.pk, "card": spec.title},
        )
    return redirect("card", key=key)


# --------------------------------------------------------------------------------------
# Injected preview and metabolism
# --------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def injected(request: HttpRequest) -> HttpResponse:
    """The persona and user cards exactly as the agent receives them, with token counts."""
    refresh = request.method == "POST"
    compiled = compiler.compiled_profile(refresh=refresh)
    if refresh:
        messages.success(request, _("Compiled again."))
    context = {
        "profile": compiled,
        "parts": [
            (cards.spec("persona").title, compiled.persona),
            (cards.spec("user").title, compiled.user),
        ],
        "llm": llm.configured(),
        "over": compiled.tokens > compiled.budget,
        # What the live refresh leaves out of User.md, computed as it would be now.
        "user_plan": profile.plan(timezone.now()),
    }
    return render_page(request, "curator/cards_injected.html", context)


@require_http_methods(["GET", "POST"])
def metabolism_view(request: HttpRequest) -> HttpResponse:
    """The state of each rule, what a run would change, and the run itself."""
    if request.method == "POST":
        try:
            done = metabolism.apply(
                request.POST.get("fingerprint", ""), author=CardAuthor.PERSON, actor=Actor.PERSON
            )
        except metabolism.StalePlan as exc:
            messages.error(request, str(exc))
        except (cards.CardConflict, OSError, ValueError) as exc:
            log.exception("metabolism failed")
            messages.error(request, _("Nothing was changed: %(reason)s") % {"reason": exc})
        else:
            if done.empty:
                messages.info(request, _("Nothing to do: every card is within its limits."))
            else:
                messages.success(
                    request, _("Applied: %(what)s") % {"what": "; ".join(_summaries(done))}
                )
        return redirect("cards_metabolism")
    context = {"rules": metabolism.state(), "plan": metabolism.plan()}
    return render_page(request, "curator/cards_metabolism.html", context)


def _summaries(plan: metabolism.Plan) -> list[str]:
    return [f"{cards.spec(c.key).title}{colon()}{c.summary}" for c in plan.changes]
