#!/usr/bin/env python
"""Django's command-line utility; configuration errors print one sentence, not a traceback."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memsite.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        sys.exit(f"Memory Curator cannot start: {exc}")


if __name__ == "__main__":
    main()
