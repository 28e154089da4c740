"""Settings → Guardrails: do-not-store rules, the built-in detectors, trying a rule on sample
text before saving it, applying a rule to what is already stored, and the Blocked log.

Every form works as a plain POST; HTMX only swaps the trial result in place.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curator.guard import log as guard_log
from curator.guard import rules as guard
from curator.guard import stored
from curator.models import FactType, GuardHit, GuardRule, MemoryEvent, Owner, Scope
from memsite.core.tokens import list_tokens
from memsite.web.common import done_banner
from memsite.web.render import render_page

HITS_PER_PAGE = 50
LIST_LIMIT = 50  # matches shown per kind before applying a rule


def _agent_choices() -> list[tuple[str, str]]:
    return [(str(t.pk), f"{t.name} ({t.prefix}…)") for t in list_tokens()]


class RuleForm(forms.Form):
    name = forms.CharField(label=gettext_lazy("Name"), max_length=100)
    words = forms.CharField(
        label=gettext_lazy("Words and phrases"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy(
            "One per line or separated by commas, in any language: “health”, “健康”, “my ex”. "
            "Latin words match whole words (and plurals); Chinese matches as written."
        ),
    )
    pattern = forms.CharField(
        label=gettext_lazy("Regular expression"),
        required=False,
        max_length=guard.MAX_PATTERN,
        help_text=gettext_lazy("Optional, Python syntax, case-insensitive, e.g. PRJ-\\d{4}."),
    )
    fact_types = forms.MultipleChoiceField(
        label=gettext_lazy("Only these fact types"),
        choices=FactType.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=gettext_lazy("None ticked: every type. Alone, a type blocks all its memories."),
    )
    scopes = forms.MultipleChoiceField(
        label=gettext_lazy("Only these scopes"),
        choices=Scope.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    agents = forms.MultipleChoiceField(
        label=gettext_lazy("Only these agents"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=gettext_lazy(
            "None ticked: every source (agents, extraction, consolidation, onboarding, imports)."
        ),
    )
    redact_turns = forms.BooleanField(
        label=gettext_lazy("Also mask its matches in conversation turns"),
        required=False,
        help_text=gettext_lazy(
            "Masked before the turn is stored, searched or written to the backup. Needs words, "
            "a pattern or a detector, and no fact type or scope."
        ),
    )
    enabled = forms.BooleanField(label=gettext_lazy("On"), required=False, initial=True)
    # not "action": the form's buttons are named so (try it / save)
    on_match = forms.ChoiceField(
        label=gettext_lazy("A memory it matches"),
        choices=[
            ("block", gettext_lazy("is blocked: never stored")),
            ("review", gettext_lazy("goes to review: you decide")),
        ],
        initial="block",
        required=False,  # left out: the rule keeps what it does
        widget=forms.RadioSelect,
    )
    sample = forms.CharField(
        label=gettext_lazy("Sample text to try it on"),
        required=False,
        max_length=100_000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy("Not saved. “Try it” shows what the rule would mask."),
    )

    DETECTOR_FIELDS = (
        "fact_types",
        "scopes",
        "agents",
        "redact_turns",
        "enabled",
        "on_match",
        "sample",
    )

    def __init__(self, *args, rule: GuardRule | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.rule = rule
        self.fields["agents"].choices = _agent_choices()
        if not self.fields["agents"].choices:
            self.fields["agents"].help_text = _(
                "No API tokens yet: the rule holds for every source."
            )
        if rule is not None and rule.detector:
            for name in list(self.fields):
                if name not in self.DETECTOR_FIELDS:
                    del self.fields[name]

    @classmethod
    def for_rule(cls, rule: GuardRule, data=None) -> RuleForm:
        initial = {
            "name": rule.name,
            "words": "\n".join(rule.words or []),
            "pattern": rule.pattern,
            "fact_types": rule.fact_types,
            "scopes": rule.scopes,
            "agents": [str(a) for a in rule.agents or []],
            "redact_turns": rule.redact_turns,
            "enabled": rule.enabled,
            "on_match": rule.action,
        }
        return cls(data, rule=rule, initial=initial)

    def values(self) -> dict:
        """What the rule functions take (the sample is not part of a rule)."""
        data = {k: v for k, v in self.cleaned_data.items() if k in self.fields and k != "sample"}
        if "agents" in data:
            data["agents"] = [int(a) for a in data["agents"]]
        if on_match := data.pop("on_match", ""):
            data["action"] = on_match
        return data


def _rule_error(form: RuleForm, exc: guard.RuleError) -> None:
    form.add_error(exc.field if exc.field in form.fields else None, str(exc))


def _trial(form: RuleForm) -> dict | None:
    """The rule as typed, against the sample: the masked text and how many matches."""
    sample = form.cleaned_data.get("sample") or ""
    if not sample.strip():
        form.add_error("sample", _("Type some text to try the rule on."))
        return None
    values = form.values()
    if form.rule is not None and form.rule.detector:
        values = {"detector": form.rule.detector}
    try:
        _matcher, spans = guard.trial(values, sample)
    except guard.RuleError as exc:
        _rule_error(form, exc)
        return None
    return {"count": len(spans), "masked": guard.mask(sample, spans)}


# --------------------------------------------------------------------------------------
# The list
# --------------------------------------------------------------------------------------


def _row(rule: GuardRule, tokens: dict[int, str]) -> dict:
    detector = guard.DETECTORS.get(rule.detector)
    return {
        "rule": rule,
        "label": guard.DETECTOR_NAMES.get(rule.detector, rule.name),
        "help": guard.DETECTOR_HELP.get(rule.detector, ""),
        "category": guard.categories().get(detector.category) if detector else "",
        "agents": [tokens.get(a, f"#{a}") for a in rule.agents or []],
        "types": [FactType(t).label for t in rule.fact_types or [] if t in FactType.values],
        "scopes": [Scope(s).label for s in rule.scopes or [] if s in Scope.values],
    }


def _token_names() -> dict[int, str]:
    return {t.pk: t.name for t in list_tokens()}


@require_GET
def guardrails(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    tokens = _token_names()
    rules = [_row(r, tokens) for r in guard.all_rules(owner)]
    context = {
        "detectors": [r for r in rules if r["rule"].detector],
        "own": [r for r in rules if not r["rule"].detector],
        "banner": done_banner(request),
        "forgettable": _forgettable(request.GET.get("batch", "")),
        "blocked_total": GuardHit.objects.filter(owner=owner).count(),
    }
    return render_page(request, "curator/guardrails.html", context)


def _forgettable(batch: str) -> GuardRule | None:
    """After a redaction batch: the rule whose originals can still be forgotten."""
    if not batch.startswith("guard-"):
        return None
    event = MemoryEvent.objects.filter(batch=batch).order_by("pk").first()
    if event is None or event.payload.get("originals_forgotten"):
        return None
    name = event.payload.get("rule")
    return GuardRule.objects.filter(owner=event.owner, name=name).first()


@require_POST
def switch(request: HttpRequest, pk: int) -> HttpResponse:
    """The quick switches of the list: on/off, "mask in turns" and block/review."""
    rule = get_object_or_404(GuardRule, pk=pk, owner=Owner.default())
    name = request.POST.get("field")
    if name not in ("enabled", "redact_turns", "action"):
        messages.error(request, _("Unknown switch."))
        return redirect("guardrails")
    value = request.POST.get("value")
    try:
        guard.update_rule(rule, {name: value if name == "action" else value == "on"})
    except guard.RuleError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("“%(name)s” saved.") % {"name": _row(rule, {})["label"]})
    return redirect(f"{reverse('guardrails')}#rule-{rule.pk}")


# --------------------------------------------------------------------------------------
# New and edit
# --------------------------------------------------------------------------------------


def _form_page(request, form: RuleForm, trial: dict | None = None, status: int = 200):
    rule = form.rule
    context = {
        "form": form,
        "rule": rule,
        "label": _row(rule, {})["label"] if rule else "",
        "trial": trial,
    }
    if request.htmx and request.POST.get("action") == "test":
        # HTMX swaps only 2xx answers: the trial's errors are shown inside it instead
        return render_page(request, "curator/guardrail_form.html", context, partial="trial")
    response = render_page(request, "curator/guardrail_form.html", context)
    response.status_code = status
    return response


@require_http_methods(["GET", "POST"])
def new(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _form_page(request, RuleForm())
    form = RuleForm(request.POST)
    return _submit(request, form, lambda values: guard.create_rule(values), created=True)


@require_http_methods(["GET", "POST"])
def edit(request: HttpRequest, pk: int) -> HttpResponse:
    rule = get_object_or_404(GuardRule, pk=pk, owner=Owner.default())
    if request.method == "GET":
        return _form_page(request, RuleForm.for_rule(rule))
    form = RuleForm.for_rule(rule, request.POST)
    return _submit(request, form, lambda values: guard.update_rule(rule, values))


def _submit(request, form: RuleForm, save, created: bool = False) -> HttpResponse:
    """`action=test` tries the rule on the sample (nothing saved); anything else saves it."""
    if not form.is_valid():
        return _form_page(request, form, status=400)
    if request.POST.get("action") == "test":
        trial = _trial(form)
        return _form_page(request, form, trial, status=200 if trial else 400)
    try:
        rule = save(form.values())
    except guard.RuleError as exc:
        _rule_error(form, exc)
        return _form_page(request, form, status=400)
    messages.success(request, _("“%(name)s” saved.") % {"name": _row(rule, {})["label"]})
    if created:  # the next question: what about what is stored already?
        return redirect("guardrail_apply", pk=rule.pk)
    return redirect(f"{reverse('guardrails')}#rule-{rule.pk}")


@require_POST
def delete(request: HttpRequest, pk: int) -> HttpResponse:
    rule = get_object_or_404(GuardRule, pk=pk, owner=Owner.default())
    try:
        guard.delete_rule(rule)
    except guard.RuleError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("“%(name)s” deleted.") % {"name": rule.name})
    return redirect("guardrails")


# --------------------------------------------------------------------------------------
# Applying a rule to what is stored
# --------------------------------------------------------------------------------------


def _previews(found: stored.Found, rule: guard.Matcher) -> dict:
    """The first matches of each kind, with every span masked (never shown in clear)."""
    everyone = [rule, *guard.active()]

    def masked(text) -> str:
        return guard.mask_all(str(text or ""), everyone)

    return {
        "facts": [(f, masked(f.content)) for f in found.facts[:LIST_LIMIT]],
        "pending": [(i, masked(i.candidate.get("content"))) for i in found.pending[:LIST_LIMIT]],
        "turns": [(t, masked(t.content)) for t in found.turns[:LIST_LIMIT]],
    }


@require_http_methods(["GET", "POST"])
def apply(request: HttpRequest, pk: int) -> HttpResponse:
    rule = get_object_or_404(GuardRule, pk=pk, owner=Owner.default())
    matcher = guard.matcher(rule)
    if request.method == "POST":
        try:
            done = stored.apply(matcher, request.POST.get("mode", ""))
        except guard.RuleError as exc:
            messages.error(request, str(exc))
            return redirect("guardrail_apply", pk=rule.pk)
        messages.success(
            request,
            _("Applied “%(name)s”: %(facts)d facts, %(pending)d review items, %(turns)d turns.")
            % {"name": rule.name, **vars(done)},
        )
        return redirect(f"{reverse('guardrails')}?batch={done.batch}")
    found = stored.find(matcher)
    context = {
        "rule": rule,
        "label": _row(rule, {})["label"],
        "found": found,
        "limit": LIST_LIMIT,
        "can_redact": matcher.has_text,
        **_previews(found, matcher),
    }
    return render_page(request, "curator/guardrail_apply.html", context)


@require_POST
def forget(request: HttpRequest, pk: int, batch: str) -> HttpResponse:
    rule = get_object_or_404(GuardRule, pk=pk, owner=Owner.default())
    try:
        count = stored.forget_originals(batch, guard.matcher(rule))
    except guard.RuleError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            _(
                "The original text is gone from %(n)d log entries; "
                "this batch can no longer be undone."
            )
            % {"n": count},
        )
    return redirect("guardrails")


# --------------------------------------------------------------------------------------
# The Blocked log
# --------------------------------------------------------------------------------------


SPARK_HEIGHT = 24  # px of the tallest day's bar


def _add_bars(rows: list[guard_log.Row]) -> None:
    """Each row's days as (bar height, count), on one scale so rows compare at a glance."""
    top = max((n for row in rows for n in row.days), default=0) or 1
    for row in rows:
        row.bars = [(max(1, round(n * SPARK_HEIGHT / top)) if n else 0, n) for n in row.days]


@require_GET
def blocked(request: HttpRequest) -> HttpResponse:
    owner = Owner.default()
    names = {**_token_names(), None: _("no agent (jobs, pages, imports)")}
    hits = GuardHit.objects.filter(owner=owner)
    rule_name = request.GET.get("rule", "")
    if rule_name:
        hits = hits.filter(rule_name=rule_name)
    page_obj = Paginator(hits.order_by("-created_at", "-pk"), HITS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    labels = guard.detector_labels(owner)
    for hit in page_obj:
        hit.agent_name = names.get(hit.agent_id, f"#{hit.agent_id}")
        hit.rule_label = labels.get(hit.rule_name, hit.rule_name)
    stats = guard_log.stats(owner, names, labels)
    _add_bars(stats.by_rule + stats.by_agent)
    context = {"stats": stats, "page_obj": page_obj, "rule_name": rule_name}
    return render_page(request, "curator/guardrail_blocked.html", context)
