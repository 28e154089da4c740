"""`{% api_tokens_panel %}`: the tokens section wherever a page includes it (Settings)."""

from django import template

from memsite.web.tokens import PANEL, panel_context

register = template.Library()


@register.inclusion_tag(PANEL, takes_context=True)
def api_tokens_panel(context):
    # An inclusion tag gets a fresh context: pass what the forms need from the page's.
    return {
        **panel_context(),
        "request": context.get("request"),
        "csrf_token": context.get("csrf_token"),
    }
