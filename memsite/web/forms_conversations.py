"""Forms of the episodes and attachments pages (they only parse what a browser sends)."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from curator.models import Direction, Outcome
from curator.normalize import split_tags
from curator.writepath import WritePathError, clean_tags
from memsite.web.forms import DateInput

ANY = [("", _("any"))]
MAX_TEXT = 5000


class EpisodeFilterForm(forms.Form):
    q = forms.CharField(label=_("Search"), required=False, max_length=500)
    time_from = forms.DateField(label=_("From"), required=False, widget=DateInput())
    time_to = forms.DateField(label=_("To"), required=False, widget=DateInput())
    outcome = forms.ChoiceField(label=_("Outcome"), choices=ANY + Outcome.choices, required=False)
    tool = forms.ChoiceField(label=_("Tool"), required=False)
    entity = forms.CharField(label=_("Entity"), required=False, max_length=200)

    def __init__(self, *args, tools=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["tool"].choices = ANY + [(t, t) for t in tools]


class EpisodeEditForm(forms.Form):
    summary = forms.CharField(
        label=_("Summary"), max_length=MAX_TEXT, widget=forms.Textarea(attrs={"rows": 4})
    )
    goal = forms.CharField(
        label=_("Goal"),
        required=False,
        max_length=MAX_TEXT,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    outcome = forms.ChoiceField(label=_("Outcome"), choices=Outcome.choices)
    importance = forms.FloatField(
        label=_("Importance"),
        min_value=0,
        max_value=1,
        help_text=_("From 0 (trivial) to 1 (essential)."),
        widget=forms.NumberInput(attrs={"step": "0.05"}),
    )


def _tags(text: str) -> list[str]:
    try:
        return clean_tags(split_tags(text))
    except WritePathError as exc:
        raise ValidationError(str(exc)) from None


class AttachmentFilterForm(forms.Form):
    TYPES = [
        ("image", _("images")),
        ("audio", _("audio")),
        ("video", _("video")),
        ("pdf", _("PDF")),
        ("text", _("text")),
        ("document", _("office documents")),
    ]
    q = forms.CharField(label=_("Search"), required=False, max_length=500)
    direction = forms.ChoiceField(
        label=_("Direction"), choices=ANY + Direction.choices, required=False
    )
    type = forms.ChoiceField(label=_("Type"), choices=ANY + TYPES, required=False)


class AttachmentTextForm(forms.Form):
    """What makes a file findable: shared by the upload and the edit form."""

    description = forms.CharField(
        label=_("Description"),
        required=False,
        max_length=MAX_TEXT,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("What the file shows or holds: it is what search finds it by."),
    )
    transcription = forms.CharField(
        label=_("Transcription"),
        required=False,
        max_length=100_000,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    tags = forms.CharField(
        label=_("Tags"),
        required=False,
        help_text=_("Separated by commas."),
    )

    def clean_tags(self):
        return _tags(self.cleaned_data["tags"])


class AttachmentUploadForm(AttachmentTextForm):
    field_order = ["file", "direction", "description", "transcription", "tags", "session"]
    file = forms.FileField(label=_("File"))
    direction = forms.ChoiceField(
        label=_("From"),
        choices=[
            (Direction.INBOUND, _("from the person")),
            (Direction.OUTBOUND, _("from the agent")),
        ],
        initial=Direction.INBOUND,
    )
    session = forms.CharField(
        label=_("Session id"),
        required=False,
        max_length=200,
        help_text=_("Optional: the conversation the file belongs to."),
    )


class AttachmentEditForm(AttachmentTextForm):
    linked_facts = forms.TypedMultipleChoiceField(
        label=_("Linked facts"), required=False, coerce=int, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args, facts=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["linked_facts"].choices = [(f.pk, f.content[:120]) for f in facts]
