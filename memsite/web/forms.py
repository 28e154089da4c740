"""Forms of the review desk, the facts pages and the activity log.

Forms only parse what a browser sends; every rule about memory itself (lengths, ranges,
choices, conflicts) lives in curator.writepath, whose errors the views put back in place.
"""

from datetime import datetime, time, timedelta

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from curator import retention as lasting
from curator.models import (
    Actor,
    EventType,
    FactStatus,
    FactType,
    PendingReason,
    Priority,
    Scope,
    Source,
)
from curator.normalize import split_tags
from memsite.models import ApiToken

ANY = _("any")


def _any(choices, label=ANY):
    return [("", label), *choices]


# A browser's date and time inputs take only ISO values ("2026-12-27", "2026-12-27T09:30"),
# whatever the page language: Django's default would write the locale's input format
# (zh-Hans "2026/12/27"), which the input rejects and shows empty (issue 29).
ISO_DATE, ISO_MOMENT = "%Y-%m-%d", "%Y-%m-%dT%H:%M"


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs):
        super().__init__(format=ISO_MOMENT, **kwargs)


class DateInput(forms.DateInput):
    input_type = "date"

    def __init__(self, **kwargs):
        super().__init__(format=ISO_DATE, **kwargs)


class AgentChoice(forms.TypedChoiceField):
    """ "Which agent": every agent ever created (revoked ones too: their items remain)."""

    def __init__(self, **kwargs):
        super().__init__(label=_("Agent"), coerce=int, empty_value=None, required=False, **kwargs)

    def refresh(self) -> None:
        agents = ApiToken.objects.order_by("name", "pk").values_list("pk", "name")
        self.choices = _any([(pk, name) for pk, name in agents])


class AgentFilterMixin:
    """Fills the agent choices when the form is made (agents come and go)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].refresh()


# What a datetime-local field sends, and a bare date (its midnight) typed into the URL.
MOMENT_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"]


def usable_moment(value: datetime | None) -> datetime | None:
    """An "as of" moment the log can be read at: between 1900 and 9000 (the calendar's
    edges overflow once converted to UTC)."""
    if value is not None and not 1900 <= value.year <= 9000:
        raise forms.ValidationError(_("Choose a moment between the years 1900 and 9000."))
    return value


# --------------------------------------------------------------------------------------
# Review
# --------------------------------------------------------------------------------------


class ReviewFilterForm(AgentFilterMixin, forms.Form):
    SORTS = [("newest", _("newest first")), ("confidence", _("highest confidence"))]
    type = forms.ChoiceField(label=_("Type"), choices=_any(FactType.choices), required=False)
    scope = forms.ChoiceField(label=_("Scope"), choices=_any(Scope.choices), required=False)
    source = forms.ChoiceField(label=_("Source"), choices=_any(Source.choices), required=False)
    reason = forms.ChoiceField(label=_("Why"), choices=_any(PendingReason.choices), required=False)
    agent = AgentChoice()
    sort = forms.ChoiceField(label=_("Sort"), choices=SORTS, required=False)


def later_presets(now=None) -> dict[str, datetime]:
    """The 'later' choices: in an hour, tomorrow morning, next Monday morning."""
    now = timezone.localtime(now or timezone.now())
    morning = time(9, 0)
    tomorrow = timezone.make_aware(datetime.combine(now.date() + timedelta(days=1), morning))
    monday = now.date() + timedelta(days=7 - now.weekday())
    return {
        "hour": now + timedelta(hours=1),
        "tomorrow": tomorrow,
        "week": timezone.make_aware(datetime.combine(monday, morning)),
    }


class LaterForm(forms.Form):
    PRESETS = [
        ("hour", _("in 1 hour")),
        ("tomorrow", _("tomorrow")),
        ("week", _("next week")),
        ("date", _("on a date")),
    ]
    preset = forms.ChoiceField(label=_("Later"), choices=PRESETS, required=False)
    until = forms.DateTimeField(
        label=_("Until"),
        required=False,
        widget=DateTimeLocalInput(),
        input_formats=["%Y-%m-%dT%H:%M"],
    )

    def clean(self):
        data = super().clean()
        preset = data.get("preset") or ("date" if data.get("until") else "")
        if preset in ("hour", "tomorrow", "week"):
            data["when"] = later_presets()[preset]
        elif data.get("until"):
            data["when"] = data["until"]
        else:
            raise forms.ValidationError(_("Choose when the item should come back."))
        return data


class RetentionForm(forms.Form):
    """How long the memory will last once confirmed: shown on every review card, changeable
    before confirming (curator.retention: permanent, until a date, or fading when unused)."""

    KINDS = [
        ("permanent", _("permanent")),
        ("expires", _("until a date")),
        ("decays", _("fades when unused")),
    ]
    retention = forms.ChoiceField(label=_("Lasts"), choices=KINDS)
    expires_on = forms.DateField(label=_("Expires on"), required=False, widget=DateInput)

    @classmethod
    def for_item(cls, item, current: lasting.Retention | None, data=None):
        initial = {"retention": current.kind if current else "permanent"}
        if current and current.expires_at:
            initial["expires_on"] = timezone.localdate(current.expires_at)
        form = cls(data, initial=initial, prefix=f"r{item.pk}")
        form.current = current
        return form

    def clean(self):
        data = super().clean()
        if data.get("retention") == "expires":
            day = data.get("expires_on")
            if day is None:
                raise forms.ValidationError(_("Choose the day the memory expires."))
            if day <= timezone.localdate():
                raise forms.ValidationError(_("Choose a day after today."))
        return data

    def edits(self) -> dict:
        """The write path's fields for the chosen retention; {} when nothing changed."""
        kind, day = self.cleaned_data["retention"], self.cleaned_data.get("expires_on")
        current = self.current
        if current is not None and kind == current.kind:
            same_day = current.expires_at and timezone.localdate(current.expires_at) == day
            if kind != "expires" or same_day:
                return {}
        until = None
        if kind == "expires":  # the end of the chosen day, in the person's time zone
            until = timezone.make_aware(datetime.combine(day, time(23, 59)))
        return lasting.edits(kind, until)


class CandidateForm(forms.Form):
    """Edit-and-confirm: the candidate's fields as the person wants them stored (how long it
    lasts is the RetentionForm beside it)."""

    content = forms.CharField(label=_("Memory"), widget=forms.Textarea(attrs={"rows": 3}))
    subject = forms.CharField(label=_("Subject"), required=False)
    predicate = forms.CharField(label=_("Predicate"), required=False)
    type = forms.ChoiceField(label=_("Type"), choices=FactType.choices)
    scope = forms.ChoiceField(label=_("Scope"), choices=Scope.choices)
    importance = forms.FloatField(label=_("Importance"), min_value=0, max_value=1)
    tags = forms.CharField(label=_("Tags"), required=False, help_text=_("Separated by commas."))

    @classmethod
    def for_item(cls, item, data=None):
        c = item.candidate or {}
        initial = {
            "content": c.get("content", ""),
            "subject": c.get("subject", ""),
            "predicate": c.get("predicate", ""),
            "type": c.get("type") or FactType.FACT,
            "scope": c.get("scope") or Scope.USER,
            "importance": c.get("importance", 0.5),
            "tags": ", ".join(c.get("tags") or []),
        }
        return cls(data, initial=initial, prefix=f"c{item.pk}")

    def edits(self) -> dict:
        """Only what the person changed, in the write path's terms."""
        data = dict(self.cleaned_data)
        data["tags"] = split_tags(data["tags"])
        initial = dict(self.initial)
        initial["tags"] = split_tags(initial.get("tags", ""))
        return {k: v for k, v in data.items() if initial.get(k) != v}


class ReviewBulkForm(LaterForm):
    ACTIONS = [("confirm", _("Confirm")), ("ignore", _("Ignore")), ("later", _("Later"))]
    action = forms.ChoiceField(choices=ACTIONS)
    ids = forms.TypedMultipleChoiceField(coerce=int, choices=[])

    def __init__(self, *args, item_ids=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ids"].choices = [(i, i) for i in item_ids]
        self.fields["ids"].error_messages["required"] = _("Select at least one item.")

    def clean(self):
        if self.cleaned_data.get("action") != "later":
            return self.cleaned_data
        return super().clean()


# --------------------------------------------------------------------------------------
# Facts
# --------------------------------------------------------------------------------------


class FactFilterForm(forms.Form):
    SORTS = [
        ("updated", _("recently updated")),
        ("importance", _("importance")),
        ("confidence", _("confidence")),
        ("recalled", _("times recalled")),
    ]
    VERIFIED = [("", _("any")), ("yes", _("verified")), ("no", _("inferred"))]
    q = forms.CharField(label=_("Search"), required=False)
    status = forms.ChoiceField(
        label=_("Status"), choices=_any(FactStatus.choices, _("all")), required=False
    )
    scope = forms.ChoiceField(label=_("Scope"), choices=_any(Scope.choices), required=False)
    type = forms.ChoiceField(label=_("Type"), choices=_any(FactType.choices), required=False)
    verified = forms.ChoiceField(label=_("Verified"), choices=VERIFIED, required=False)
    source = forms.ChoiceField(label=_("Source"), choices=_any(Source.choices), required=False)
    priority = forms.ChoiceField(
        label=_("Retention"), choices=_any(Priority.choices), required=False
    )
    tag = forms.CharField(label=_("Tag"), required=False)
    created_from = forms.DateField(label=_("Created from"), required=False, widget=DateInput())
    created_to = forms.DateField(label=_("Created to"), required=False, widget=DateInput())
    updated_from = forms.DateField(label=_("Updated from"), required=False, widget=DateInput())
    updated_to = forms.DateField(label=_("Updated to"), required=False, widget=DateInput())
    sort = forms.ChoiceField(label=_("Sort"), choices=SORTS, required=False)
    as_of = forms.DateTimeField(
        label=_("As of"),
        required=False,
        widget=DateTimeLocalInput(),
        input_formats=MOMENT_FORMATS,
        help_text=_("Show the facts as they stood at this moment."),
    )

    # Shown at once; the rest fold under "More filters" (open while one of them is set).
    MAIN = ("status", "scope", "type", "sort")

    def clean_as_of(self):
        return usable_moment(self.cleaned_data.get("as_of"))

    def main_fields(self) -> list:
        return [self[name] for name in self.MAIN]

    def more_fields(self) -> list:
        return [f for f in self if f.name not in self.MAIN and f.name != "q"]

    def more_in_use(self) -> bool:
        return any(self.data.get(f.name) for f in self.more_fields())


class AsOfForm(forms.Form):
    """ "Which version was active at ...?" on a fact's page."""

    as_of = forms.DateTimeField(
        label=_("Active at"),
        required=False,
        widget=DateTimeLocalInput(),
        input_formats=MOMENT_FORMATS,
    )

    def clean_as_of(self):
        return usable_moment(self.cleaned_data.get("as_of"))


class FactEditForm(forms.Form):
    content = forms.CharField(label=_("Content"), widget=forms.Textarea(attrs={"rows": 3}))
    subject = forms.CharField(label=_("Subject"), required=False)
    predicate = forms.CharField(label=_("Predicate"), required=False)
    type = forms.ChoiceField(label=_("Type"), choices=FactType.choices)
    scope = forms.ChoiceField(label=_("Scope"), choices=Scope.choices)
    importance = forms.FloatField(label=_("Importance"), min_value=0, max_value=1)
    priority = forms.ChoiceField(label=_("Retention"), choices=Priority.choices)
    expires_at = forms.DateTimeField(
        label=_("Expires"),
        required=False,
        widget=DateTimeLocalInput(),
        input_formats=["%Y-%m-%dT%H:%M"],
        help_text=_("Leave as is to follow the retention; empty for never."),
    )
    tags = forms.CharField(label=_("Tags"), required=False, help_text=_("Separated by commas."))
    expected_updated_at = forms.CharField(widget=forms.HiddenInput)

    FIELDS = ("content", "subject", "predicate", "type", "scope", "importance", "priority")

    @classmethod
    def for_fact(cls, fact, data=None):
        initial = {name: getattr(fact, name) for name in cls.FIELDS}
        initial["tags"] = ", ".join(fact.tags or [])
        initial["expires_at"] = (
            timezone.localtime(fact.expires_at).replace(second=0, microsecond=0)
            if fact.expires_at
            else None
        )
        initial["expected_updated_at"] = fact.updated_at.isoformat()
        return cls(data, initial=initial, prefix=f"f{fact.pk}")

    def expected(self) -> datetime | None:
        try:
            return datetime.fromisoformat(self.cleaned_data["expected_updated_at"])
        except (KeyError, ValueError):
            return None

    def changes(self) -> dict:
        """What differs from the version the form was opened with."""
        data = {name: self.cleaned_data[name] for name in self.FIELDS}
        data["tags"] = split_tags(self.cleaned_data["tags"])
        initial = {name: self.initial.get(name) for name in self.FIELDS}
        initial["tags"] = split_tags(self.initial.get("tags", ""))
        changed = {k: v for k, v in data.items() if initial.get(k) != v}
        if self.cleaned_data.get("expires_at") != self.initial.get("expires_at"):
            changed["expires_at"] = self.cleaned_data.get("expires_at")
        return changed


class FactBulkForm(forms.Form):
    ACTIONS = [
        ("archive", _("Archive")),
        ("scope", _("Change scope")),
        ("priority", _("Change retention")),
        ("pin", _("Keep forever")),
        ("restore", _("Restore")),
    ]
    action = forms.ChoiceField(label=_("With the selected facts"), choices=ACTIONS)
    scope = forms.ChoiceField(label=_("Scope"), choices=Scope.choices, required=False)
    priority = forms.ChoiceField(label=_("Retention"), choices=Priority.choices, required=False)
    ids = forms.TypedMultipleChoiceField(coerce=int, choices=[])

    def __init__(self, *args, fact_ids=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ids"].choices = [(i, i) for i in fact_ids]
        self.fields["ids"].error_messages["required"] = _("Select at least one fact.")

    def value(self) -> str:
        action = self.cleaned_data["action"]
        return self.cleaned_data.get(action, "") if action in ("scope", "priority") else ""


# --------------------------------------------------------------------------------------
# Activity
# --------------------------------------------------------------------------------------


class ActivityFilterForm(AgentFilterMixin, forms.Form):
    actor = forms.ChoiceField(label=_("Who"), choices=_any(Actor.choices), required=False)
    agent = AgentChoice()
    type = forms.ChoiceField(label=_("Event"), choices=_any(EventType.choices), required=False)
    fact = forms.IntegerField(label=_("Fact #"), required=False, min_value=1)
    date_from = forms.DateField(label=_("From"), required=False, widget=DateInput())
    date_to = forms.DateField(label=_("To"), required=False, widget=DateInput())
    batch = forms.CharField(label=_("Batch"), required=False)


# --------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------


class ThresholdForm(forms.Form):
    """One source's thresholds; an empty field means the environment's default."""

    source = forms.CharField(max_length=64, widget=forms.HiddenInput)
    write = forms.FloatField(
        label=_("Write at"),
        required=False,
        min_value=0,
        max_value=1,
        widget=forms.NumberInput(attrs={"step": "0.01"}),
    )
    pending = forms.FloatField(
        label=_("Review at"),
        required=False,
        min_value=0,
        max_value=1,
        widget=forms.NumberInput(attrs={"step": "0.01"}),
    )
