"""`{{ url|stored_link:label }}`: a stored URL as a link only when it is safe to follow.

Use it wherever a page shows a URL that came from the database (memsite/links.py says which
are links: http, https, mailto); anything else is shown as plain, escaped text.
"""

from django import template
from django.utils.html import format_html

from memsite.core.links import is_safe_link

register = template.Library()


@register.filter
def stored_link(url: str, label: str = "") -> str:
    if not url:
        return ""
    if is_safe_link(url):
        return format_html('<a href="{}" rel="noopener noreferrer">{}</a>', url, label or url)
    if label:  # the person still sees where it pointed, as text nobody can click
        return format_html('<span class="stored-url">{}: {}</span>', label, url)
    return format_html('<span class="stored-url">{}</span>', url)
