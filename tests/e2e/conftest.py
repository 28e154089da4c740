"""Browser tests: Debian's chromium driven by Playwright (never `playwright install`)."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

# Playwright's sync API runs an event loop in this thread; Django's ORM calls in fixtures are fine.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/lib/chromium/chromium"

# Tests run Huey inline, so a bulk action embeds every changed fact inside the request; on a
# loaded 2-core CI machine that can take longer than Playwright's 5 s default wait.
expect.set_options(timeout=30_000)
SCREENSHOTS = Path(__file__).parent / "screenshots"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not Path(CHROMIUM).exists():
        pytest.fail(
            "Debian's chromium is missing: `make test` installs it (apt-get install chromium)."
        )
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


@pytest.fixture
def screenshot_dir():
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS
