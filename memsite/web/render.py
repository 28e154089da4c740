"""How every page view answers: the page, or on an HTMX swap only its named partial."""

from django.core.paginator import Paginator
from django.http import HttpRequest
from django.shortcuts import render


def paginate(request: HttpRequest, queryset, per_page: int = 25):
    return Paginator(queryset, per_page).get_page(request.GET.get("page"))


def render_page(request: HttpRequest, template: str, context: dict, partial: str = "content"):
    """The full page normally; only the named partial when HTMX swaps it in."""
    name = f"{template}#{partial}" if request.htmx and not request.htmx.boosted else template
    return render(request, name, context)
