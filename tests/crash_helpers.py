"""Run a real card save or import in a child process, SIGKILL it at a chosen moment, then look
at what the next start finds (the child's first query runs the start-up repair).

The moment is armed inside the child by wrapping the call that marks it (the database
commit, the rename of a file, the move of a staged file), so the same test kills the old and
the new code at the same point.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANAGE = str(REPO / "manage.py")

PRELUDE = r'''
import json, os, signal, sys
from pathlib import Path
import django
django.setup()
from curator.models import Owner
from memsite.core.db.base import DatabaseWrapper
Owner.default()  # the blank owner row exists before anything is armed

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def kill_at(moment, path=None):
    """SIGKILL this process at `moment` of what runs next."""
    if moment in ("before-commit", "after-commit"):
        commit = DatabaseWrapper._commit
        def killing_commit(self):
            if moment == "before-commit":
                die()
            commit(self)
            die()
        DatabaseWrapper._commit = killing_commit
    elif moment in ("before-rename", "after-rename"):
        replace = os.replace
        def killing_replace(src, dst, *args, **kwargs):
            hit = Path(dst) == Path(path)
            if hit and moment == "before-rename":
                die()
            replace(src, dst, *args, **kwargs)
            if hit:
                die()
        os.replace = killing_replace
    elif moment == "after-first-move":
        link = os.link
        def killing_link(src, dst, *args, **kwargs):
            link(src, dst, *args, **kwargs)
            die()
        os.link = killing_link
'''

REPORT = r"""
from django.conf import settings
from curator import cards
from curator.models import Attachment, CardRevision
latest = cards.latest_revision("user")  # the first query: the start-up repair runs before it
data = Path(settings.DATA_DIR)
folders = [Path(settings.MEMORY_DIR), Path(settings.MEDIA_ROOT), data / "import-staging",
           data / "journal"]
print(json.dumps({
    "card": cards.read("user"),
    "latest": latest.content if latest else None,
    "revisions": CardRevision.objects.filter(card="user").count(),
    "files": sorted(str(p.relative_to(data)) for f in folders if f.exists()
                    for p in f.rglob("*") if p.is_file()),
    "attachments": [[a.file.name, bool(a.file) and a.file.storage.exists(a.file.name)]
                    for a in Attachment.objects.order_by("pk")],
}))
"""


def child_env(data_dir: Path) -> dict:
    env = {**os.environ, "MEMSITE_DATA_DIR": str(data_dir)}
    env["DJANGO_SETTINGS_MODULE"] = "memsite.settings"
    return env


def migrate(data_dir: Path) -> None:
    subprocess.run(
        [sys.executable, MANAGE, "migrate", "--noinput"],
        env=child_env(data_dir),
        cwd=REPO,
        check=True,
        capture_output=True,
    )


def copy_data_dir(template: Path, target: Path) -> Path:
    shutil.copytree(template, target)
    return target


def run(data_dir: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + code, *args],
        env=child_env(data_dir),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_killed(data_dir: Path, moment: str, code: str, path: Path | None = None, *args: str):
    """Run `code` with a SIGKILL armed at `moment`; fails unless the kill happened."""
    armed = f"kill_at({moment!r}, {str(path) if path else None!r})\n"
    result = run(data_dir, armed + code, *args)
    assert result.returncode == -signal.SIGKILL, (result.returncode, result.stderr[-3000:])
    return result


def next_start(data_dir: Path) -> dict:
    result = run(data_dir, REPORT)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def manage(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, MANAGE, *args],
        env=child_env(data_dir),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
