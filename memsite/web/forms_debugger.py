"""The debugger's forms: every search setting lives in the URL (GET), so a view can be shared."""

from datetime import UTC

from django import forms
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from memsite.web.forms import MOMENT_FORMATS, DateInput, DateTimeLocalInput, usable_moment
from retrieval import scoring
from retrieval.explain import COMPONENT_LABELS
from retrieval.models import Kind
from retrieval.search import MAX_LIMIT
from retrieval.timeparse import FIRST_USABLE, LAST_USABLE

# The presets in plain words (their code names come from the design seeds: shiyi = seed 000,
# semibot = seed 002, openakita = seed 003; curator = measured here, docs/retrieval.md).
PRESET_LABELS = {
    "curator": _("Balanced: words and meaning, slow ageing (default)"),
    "shiyi": _("Meaning first, recent memories favoured"),
    "semibot": _("Meaning and importance, no keyword match"),
    "openakita": _("Everything: also importance and how often recalled"),
}
PRESET_CHOICES = [(name, PRESET_LABELS.get(name, name)) for name in scoring.PRESETS] + [
    ("custom", _("custom weights"))
]
MODE_CHOICES = [
    ("hybrid", _("hybrid")),
    ("keyword", _("keyword only")),
    ("semantic", _("vector only")),
]


class DebuggerForm(forms.Form):
    q = forms.CharField(label=_("Query"), required=False, max_length=2000)
    kinds = forms.MultipleChoiceField(
        label=_("Kinds"), choices=Kind.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    session = forms.IntegerField(label=_("Session id"), required=False, min_value=1)
    time_from = forms.DateField(label=_("From"), required=False, widget=DateInput())
    time_to = forms.DateField(label=_("Until"), required=False, widget=DateInput())
    include_inactive = forms.BooleanField(label=_("Include inactive facts"), required=False)
    as_of = forms.DateTimeField(
        label=_("As of"), required=False, widget=DateTimeLocalInput(), input_formats=MOMENT_FORMATS
    )
    mode = forms.ChoiceField(label=_("Mode"), choices=MODE_CHOICES, required=False)
    preset = forms.ChoiceField(label=_("Preset"), choices=PRESET_CHOICES, required=False)
    half_life = forms.FloatField(
        label=_("Freshness half-life (days)"), required=False, min_value=0.1, max_value=3650
    )
    limit = forms.IntegerField(label=_("Results"), required=False, min_value=1, max_value=MAX_LIMIT)
    k = forms.IntegerField(
        label=_("Candidates per channel (k)"), required=False, min_value=1, max_value=500
    )
    why = forms.CharField(label=_("Why not? Fact id or words"), required=False, max_length=200)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in scoring.COMPONENTS:
            self.fields[f"w_{name}"] = forms.IntegerField(
                label=COMPONENT_LABELS[name], required=False, min_value=0, max_value=100
            )

    def clean_as_of(self):
        return usable_moment(self.cleaned_data.get("as_of"))

    def clean(self):
        data = super().clean()
        start, end = data.get("time_from"), data.get("time_to")
        if start and end and end < start:
            self.add_error("time_to", _("The end is before the start."))
        if data.get("preset") == "custom" and not any(
            data.get(f"w_{n}") for n in scoring.COMPONENTS
        ):
            self.add_error(None, _("Custom weights need at least one weight above 0."))
        return data

    # ----------------------------------------------------------------------------------
    # What the search needs, from the cleaned data
    # ----------------------------------------------------------------------------------

    @property
    def preset_name(self) -> str:
        return self.cleaned_data.get("preset") or settings.SEARCH_PRESET

    def slider_values(self) -> dict[str, int]:
        """Slider positions (0-100): the custom weights, or the chosen preset's."""
        if self.preset_name == "custom":
            return {n: self.cleaned_data.get(f"w_{n}") or 0 for n in scoring.COMPONENTS}
        weights = scoring.PRESETS[self.preset_name].weights.as_dict()
        return {n: round(weights[n] * 100) for n in scoring.COMPONENTS}

    def search_args(self) -> dict:
        data = self.cleaned_data
        args = {
            "kinds": data.get("kinds") or None,
            "session_id": data.get("session"),
            "include_inactive": bool(data.get("include_inactive")),
            "mode": data.get("mode") or "hybrid",
            "limit": data.get("limit") or 10,
            "k": data.get("k") or None,
            "time_from": _day_start(data.get("time_from")),
            "time_to": _day_start(data.get("time_to"), days=1),
            "as_of": data.get("as_of"),
        }
        if self.preset_name == "custom" or data.get("half_life"):
            weights = {n: float(v) for n, v in self.slider_values().items()}
            if data.get("half_life"):
                weights["half_life_days"] = data["half_life"]
            args["weights"] = weights
            if self.preset_name != "custom":
                args["preset"] = self.preset_name
        else:
            args["preset"] = self.preset_name
        return args


def _day_start(day, days: int = 0):
    """Local midnight of the day (plus days), kept within the dates a filter can use: the
    end of 9999-12-31 does not exist, so "until 9999-12-31" ends at the last usable moment."""
    if day is None:
        return None
    try:
        start = timezone.make_aware(timezone.datetime(day.year, day.month, day.day))
        start = (start + timezone.timedelta(days=days)).astimezone(UTC)
    except OverflowError:
        return LAST_USABLE if day.year > 5000 else FIRST_USABLE
    return min(max(start, FIRST_USABLE), LAST_USABLE)


class CheckForm(forms.Form):
    """Save the current query as a regression check."""

    name = forms.CharField(label=_("Name"), required=False, max_length=200)
    query = forms.CharField(label=_("Query"), max_length=2000)
    must_include = forms.CharField(
        label=_("Must return (fact ids)"),
        required=False,
        max_length=500,
        help_text=_("Comma-separated, e.g. 12, 40"),
    )
    must_exclude = forms.CharField(
        label=_("Must not return (fact ids)"), required=False, max_length=500
    )
    within = forms.IntegerField(
        label=_("Within the top"), min_value=1, max_value=MAX_LIMIT, initial=5
    )
    params = forms.CharField(required=False, widget=forms.HiddenInput)

    def _ids(self, name: str) -> list[int]:
        raw = self.cleaned_data.get(name) or ""
        parts = [p.strip().lstrip("#") for p in raw.replace("，", ",").split(",") if p.strip()]
        if not all(p.isdigit() for p in parts):
            raise forms.ValidationError(_("Use fact ids (numbers) separated by commas."))
        return [int(p) for p in parts]

    def clean_must_include(self):
        return self._ids("must_include")

    def clean_must_exclude(self):
        return self._ids("must_exclude")

    def clean(self):
        data = super().clean()
        if not data.get("must_include") and not data.get("must_exclude") and not self.errors:
            raise forms.ValidationError(_("Name at least one fact it must or must not return."))
        return data


class WordForm(forms.Form):
    word = forms.CharField(label=_("Word"), max_length=40)
    action = forms.ChoiceField(choices=[("add", "add"), ("remove", "remove")], required=False)
    next = forms.CharField(required=False, max_length=4000)


class RecallFilterForm(forms.Form):
    """The recall log's filters (GET): a fact, a time range, the API token that asked."""

    fact = forms.IntegerField(label=_("Fact id"), required=False, min_value=1, max_value=2**63 - 1)
    since = forms.DateField(label=_("From"), required=False, widget=DateInput())
    until = forms.DateField(label=_("Until"), required=False, widget=DateInput())
    token = forms.TypedChoiceField(
        label=_("Agent (API token)"), required=False, coerce=int, empty_value=None
    )

    def __init__(self, *args, tokens=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["token"].choices = [("", _("any")), *((t.pk, t.name) for t in tokens)]

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["until"] < data["since"]:
            self.add_error("until", _("The end is before the start."))
        return data

    def find_args(self) -> dict:
        data = self.cleaned_data
        return {
            "fact": data.get("fact"),
            "since": _day_start(data.get("since")),
            "until": _day_start(data.get("until"), days=1),
            "token": data.get("token"),
        }
