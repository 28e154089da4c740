"""Every date, time and number field of every page form writes a value the browser's input
accepts, in every language (issue 29: zh-Hans wrote 2026/12/27 into a date input, which showed
it empty, and confirming a review item failed). The browser test submits them;
this one makes sure a form added later cannot bring the problem back unnoticed."""

import importlib
import inspect
import pkgutil
import re
from datetime import date, datetime

import pytest
from django import forms
from django.conf import settings
from django.utils import timezone, translation

import memsite.web

ISO_DATE = re.compile(r'value="2026-12-27"')
ISO_MOMENT = re.compile(r'value="2026-12-27T09:30"')
WHEN = timezone.make_aware(datetime(2026, 12, 27, 9, 30))


def page_forms() -> list[type[forms.Form]]:
    found = {}
    for module in pkgutil.iter_modules(memsite.web.__path__):
        loaded = importlib.import_module(f"memsite.web.{module.name}")
        for _name, cls in inspect.getmembers(loaded, inspect.isclass):
            if issubclass(cls, forms.BaseForm) and cls.__module__.startswith("memsite.web"):
                found[f"{cls.__module__}.{cls.__name__}"] = cls
    return list(found.values())


def typed_fields(kind):
    for form in page_forms():
        for name, field in form.base_fields.items():
            if isinstance(field, kind):
                yield pytest.param(field, id=f"{form.__name__}.{name}")


def test_the_forms_are_found():
    names = {cls.__name__ for cls in page_forms()}
    assert {"RetentionForm", "FactFilterForm", "DebuggerForm", "ThresholdForm"} <= names


@pytest.mark.parametrize("language", [code for code, _name in settings.LANGUAGES])
@pytest.mark.parametrize("field", list(typed_fields(forms.DateField)))
def test_every_date_input_is_iso(field, language):
    with translation.override(language):
        html = field.widget.render("day", date(2026, 12, 27))
    assert 'type="date"' in html and ISO_DATE.search(html), html


@pytest.mark.parametrize("language", [code for code, _name in settings.LANGUAGES])
@pytest.mark.parametrize("field", list(typed_fields(forms.DateTimeField)))
def test_every_moment_input_is_iso(field, language):
    with translation.override(language), timezone.override(timezone.get_current_timezone()):
        html = field.widget.render("when", timezone.localtime(WHEN))
    assert 'type="datetime-local"' in html and ISO_MOMENT.search(html), html
    assert field.clean("2026-12-27T09:30") is not None  # and reads back what it wrote


@pytest.mark.parametrize("language", [code for code, _name in settings.LANGUAGES])
@pytest.mark.parametrize("field", list(typed_fields((forms.FloatField, forms.IntegerField))))
def test_every_number_input_is_unlocalized(field, language):
    with translation.override(language):
        html = field.widget.render("n", 1000.85 if isinstance(field, forms.FloatField) else 1000)
    assert re.search(r'value="1000(\.85)?"', html), html
