"""The main navigation, in one place: URL name and label of each section.

The pages used every day stay on the bar; the rest sit in a "More" menu (a <details>
element, so it opens without JavaScript) to keep the bar on one row at 1280 px in both
languages. The menu is grouped (MORE): to add a page, add one (url name, label) pair to the
group it belongs to. The global search (memsite.web.search_page) lists every page named here
too, so a page added here is found by its name.
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
    (
        _("Memory"),
        [
            ("memory_new", _("Add a memory")),
            ("attachments", _("Attachments")),
            ("calibration", _("Calibration")),
            ("recalls", _("Recall log")),
        ],
    ),
    (
        _("Agents and imports"),
        [
            ("agents", _("Agents")),
            ("playground", _("Playground")),
            ("history_import", _("Import history")),
        ],
    ),
    (
        _("System"),
        [
            ("guardrails", _("Guardrails")),
            ("jobs", _("Jobs")),
            ("settings", _("Settings")),
        ],
    ),
]


# Pages that live under a section without sharing its URL prefix.
ALSO_UNDER = {"sessions": ("/traces/", "/turns/")}


def all_pages() -> list[tuple[str, object]]:
    """Every page the navigation names, bar first (url name, label)."""
    return [*SECTIONS, *(link for _group, links in MORE for link in links)]


def _prefixes(name: str, url: str) -> tuple[str, ...]:
    return (url, *ALSO_UNDER.get(name, ()))


def _current_name(path: str) -> str | None:
    """The one link a page sits under: the longest URL that starts its path (/facts/12/ is
    under Facts; /settings/guardrails/ under Guardrails, not Settings; /facts/new/ under Add
    a memory)."""
    best, length = None, -1
    for name, _label in all_pages():
        url = reverse(name)
        for prefix in _prefixes(name, url):
            matches = path == prefix if prefix == "/" else path.startswith(prefix)
            if matches and len(prefix) > length:
                best, length = name, len(prefix)
    return best


def _links(sections, current: str | None) -> list[tuple]:
    return [(name, reverse(name), label, name == current) for name, label in sections]


def navigation(request) -> dict:
    current = _current_name(request.path)
    groups = [(label, _links(links, current)) for label, links in MORE]
    return {
        "nav_links": _links(SECTIONS, current),
        "nav_more_groups": groups,
        "nav_more": [link for _label, links in groups for link in links],
        "nav_more_current": any(link[3] for _label, links in groups for link in links),
    }
