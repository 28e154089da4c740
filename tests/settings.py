"""Test settings: the real configuration, pointed at a throwaway data directory.

The data dir must be chosen before memsite.settings is imported (it creates files there),
so it is set here rather than in a fixture. Huey runs tasks inline.
"""

import os
import tempfile

os.environ["MEMSITE_DATA_DIR"] = tempfile.mkdtemp(prefix="memsite-test-")
os.environ.pop("MEMSITE_EMBEDDING_MODEL", None)

from memsite.settings import *  # noqa: E402,F403

HUEY = {**HUEY, "immediate": True}  # noqa: F405
SEARCH_RECORD_IN_BACKGROUND = False  # like Huey: written before search() returns
SEARCH_STATE_TTL = 0  # tests change the embedding space as another process would
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# `make test` compiles translations; this keeps a bare `pytest` run honest too.
from memsite.core.i18n import compile_messages  # noqa: E402

compile_messages(BASE_DIR)  # noqa: F405
