"""The main navigation, in one list: URL name and label of each section.

The pages used every day stay on the bar; the rest sit in a "More" menu (a <details>
element, so it opens without JavaScript) to keep the bar on one row at 1280 px in both
languages.
"""

from django.urls import reverse
from django.utils.translation import gettext_lazy as _

SECTIONS = [
    ("home", _("Home")),
    ("review", _("Review")),
    ("facts", _("Facts")),
    ("episodes", _("Episodes")),
    ("sessions", _("Sessions")),
    ("cards", _("Cards")),
    ("activity", _("Activity")),
    ("debugger", _("Debugger")),
]
MORE = [
    ("attachments", _("Attachments")),
    ("jobs", _("Jobs")),
    ("agents", _("Agents")),
    ("playground", _("Playground")),
    ("settings", _("Settings")),
]


# Pages that live under a section without sharing its URL prefix.
ALSO_UNDER = {"sessions": ("/traces/", "/turns/")}


def _current(path: str, name: str, url: str) -> bool:
    """A section stays highlighted on its sub-pages (/facts/12/ is under Facts)."""
    if url == "/":
        return path == url
    return any(path.startswith(prefix) for prefix in (url, *ALSO_UNDER.get(name, ())))


def _links(path: str, sections) -> list[tuple]:
    return [
        (name, url, label, _current(path, name, url))
        for name, label in sections
        for url in (reverse(name),)
    ]


def navigation(request) -> dict:
    path = request.path
    more = _links(path, MORE)
    return {
        "nav_links": _links(path, SECTIONS),
        "nav_more": more,
        "nav_more_current": any(current for *_rest, current in more),
    }
