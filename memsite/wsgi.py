"""WSGI entry point, served by waitress in `manage.py serve`."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memsite.settings")

application = get_wsgi_application()
