"""The automatic backups as the home, Jobs and Settings pages show them (one line each)."""

from django import template

from lifecycle.backup import nightly

register = template.Library()


@register.simple_tag
def backup_status():
    """The warning state of the backups (lifecycle/backup/nightly.status)."""
    return nightly.status()


@register.simple_tag
def backup_list():
    return nightly.backups()
