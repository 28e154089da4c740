"""The main navigation, in one list: URL name and label of each section."""

from django.urls import reverse
from django.utils.translation import gettext_lazy as _

SECTIONS = [
    ("home", _("Home")),
    ("review", _("Review")),
    ("facts", _("Facts")),
    ("sessions", _("Sessions")),
    ("episodes", _("Episodes")),
    ("attachments", _("Attachments")),
    ("cards", _("Cards")),
    ("debugger", _("Debugger")),
    ("activity", _("Activity")),
    ("jobs", _("Jobs")),
    ("agents", _("Agents")),
    ("settings", _("Settings")),
]


# Pages that live under a section without sharing its URL prefix.
ALSO_UNDER = {"sessions": ("/traces/", "/turns/")}


def _current(path: str, name: str, url: str) -> bool:
    """A section stays highlighted on its sub-pages (/facts/12/ is under Facts)."""
    if url == "/":
        return path == url
    return any(path.startswith(prefix) for prefix in (url, *ALSO_UNDER.get(name, ())))


def navigation(request) -> dict:
    path = request.path
    links = [(name, reverse(name), label) for name, label in SECTIONS]
    return {"nav_links": [(n, url, label, _current(path, n, url)) for n, url, label in links]}
