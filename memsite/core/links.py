"""Which stored URLs may become links on a page.

A URL stored in the database can come from anywhere (an imported archive, the admin, an
agent), so a page never trusts it: only http, https and mailto URLs are rendered as links;
anything else (javascript:, data:, vbscript:, a custom scheme) is shown as plain text.
"""

from urllib.parse import urlsplit

LINK_SCHEMES = frozenset({"http", "https", "mailto"})


def is_safe_link(url: str) -> bool:
    """True for an absolute http(s) or mailto URL with nothing a browser would strip.

    Browsers drop tabs and newlines anywhere in a URL and spaces / control characters around
    it ("java\\tscript:" runs as javascript:), so any such character refuses the URL outright
    instead of guessing what a browser would make of it.
    """
    if not isinstance(url, str) or not url or any(ord(ch) <= 0x20 or ch == "\x7f" for ch in url):
        return False
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an invalid IPv6 host
        return False
    if parts.scheme not in LINK_SCHEMES:
        return False
    return bool(parts.path) if parts.scheme == "mailto" else bool(parts.netloc)


def is_safe_markdown_link(url: str) -> bool:
    """Links inside card Markdown: the same schemes, or a link within this site (no scheme)."""
    if not isinstance(url, str) or any(ord(ch) < 0x20 or ch == "\x7f" for ch in url):
        return False
    try:
        scheme = urlsplit(url).scheme
    except ValueError:
        return False
    return scheme in LINK_SCHEMES or scheme == ""
