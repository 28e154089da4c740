"""Messages of Django itself that its Simplified Chinese catalogue lacks.

Django 5.2's MinimumLengthValidator says "at least %d characters" while its zh_Hans
catalogue still has the older "%(min_length)d" wording, so the password error showed in
English. Listing the messages here makes `makemessages` keep them in our catalogue, which
Django reads before its own (LOCALE_PATHS first). tests/test_translations.py checks that
every message Django shows on our pages is translated.
"""

from django.utils.translation import ngettext_lazy

MISSING_FROM_DJANGO = [
    ngettext_lazy(
        "This password is too short. It must contain at least %d character.",
        "This password is too short. It must contain at least %d characters.",
        "min_length",
    ),
]
