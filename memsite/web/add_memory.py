"""The person's own memories from the pages: "Add a memory" (the write path every source uses,
as the person: verified, source "entered by hand") and "Delete for good" from a fact's page
(a confirmation, then a delete that can be undone until the purge PURGE_DELAY_MINUTES later)."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from curator import writepath as wp
from curator.models import Actor, Fact, FactType, Priority, Scope, Source
from curator.normalize import split_tags
from lifecycle import tasks
from memsite.web.render import render_page


class MemoryForm(forms.Form):
    content = forms.CharField(
        label=gettext_lazy("What should be remembered"),
        max_length=wp.MAX_CONTENT,
        widget=forms.Textarea(attrs={"rows": 3, "autofocus": True}),
        help_text=gettext_lazy("One fact in a sentence: “I prefer tea to coffee”, “我住在杭州”."),
    )
    type = forms.ChoiceField(
        label=gettext_lazy("Type"), choices=FactType.choices, initial=FactType.FACT
    )
    scope = forms.ChoiceField(label=gettext_lazy("Scope"), choices=Scope.choices, initial="user")
    priority = forms.ChoiceField(
        label=gettext_lazy("Retention"),
        choices=[("", gettext_lazy("as usual for its type")), *Priority.choices],
        required=False,
    )
    tags = forms.CharField(
        label=gettext_lazy("Tags"), required=False, help_text=gettext_lazy("Separated by commas.")
    )
    subject = forms.CharField(
        label=gettext_lazy("Subject"),
        required=False,
        max_length=wp.MAX_LABEL,
        help_text=gettext_lazy("Optional: with a predicate, a new value replaces the old one."),
    )
    predicate = forms.CharField(label=gettext_lazy("Predicate"), required=False, max_length=80)

    def candidate(self) -> wp.Candidate:
        data = self.cleaned_data
        return wp.Candidate(
            content=data["content"],
            subject=data["subject"].strip(),
            predicate=data["predicate"].strip(),
            type=data["type"],
            scope=data["scope"],
            priority=data["priority"] or None,
            tags=split_tags(data["tags"]),
            source=Source.MANUAL,
            verified=True,
            confidence=1.0,
        )


def _form_page(request, form: MemoryForm, status: int = 200) -> HttpResponse:
    response = render_page(request, "curator/memory_new.html", {"form": form})
    response.status_code = status
    return response


@require_http_methods(["GET", "POST"])
def new(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _form_page(request, MemoryForm())
    form = MemoryForm(request.POST)
    if not form.is_valid():
        return _form_page(request, form, 400)
    try:
        result = wp.propose(form.candidate(), actor=Actor.PERSON)
    except wp.WritePathError as exc:
        form.add_error(None, str(exc))
        return _form_page(request, form, 400)
    if result.fact is None:  # blocked by a guardrail, or (never for the person) queued
        form.add_error(None, _not_written(result))
        return _form_page(request, form, 400)
    return redirect(f"{reverse('fact', args=[result.fact.pk])}?done={result.event.pk}")


def _not_written(result: wp.Result) -> str:
    if result.outcome == wp.BLOCKED:
        rule = result.event.payload.get("rule", "?")
        return _(
            "Not saved: the guardrail “%(rule)s” does not let this be stored. Remove what it "
            "matches, or change the rule in Settings → Guardrails."
        ) % {"rule": rule}
    if result.pending is not None:
        return _("Not saved as a fact: it waits on the review desk (item #%(id)s).") % {
            "id": result.pending.pk
        }
    return _("Not saved (%(outcome)s).") % {"outcome": result.outcome}


@require_http_methods(["GET", "POST"])
def delete_for_good(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: what will be lost, and when; POST: delete now, purge after the undo window."""
    fact = get_object_or_404(Fact, pk=pk)
    minutes = settings.PURGE_DELAY_MINUTES
    if request.method == "GET":
        context = {"fact": fact, "minutes": minutes, "scheduled": wp.purge_when(fact)}
        return render_page(request, "curator/fact_delete_for_good.html", context)
    try:
        event = wp.delete_for_good(pk, after=timedelta(minutes=minutes), actor=Actor.PERSON)
    except wp.WritePathError as exc:
        messages.error(request, str(exc))
        return redirect("fact", pk=pk)
    tasks.purge_after_window(minutes * 60)
    return redirect(f"{reverse('fact', args=[pk])}?done={event.pk}")
