"""Processes that start together on one data directory (web, consumer, a second web process)
all load the settings and agree on one secret key. Two `serve` started at once failed about
one time in two before: the loser's settings raised and Django said "Unknown command"."""

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Django is imported first; every process then loads the settings at the same instant.
LOAD = (
    "import os, sys, time, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'memsite.settings'\n"
    "time.sleep(max(0.0, float(sys.argv[1]) - time.time()))\n"
    "from django.conf import settings; print(settings.SECRET_KEY)"
)


def start_together(data: Path, n: int) -> list[subprocess.Popen]:
    env = {"PATH": "/usr/bin:/bin", "MEMSITE_DATA_DIR": str(data)}
    at = str(time.time() + 2.0)
    return [
        subprocess.Popen(
            [sys.executable, "-c", LOAD, at],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]


def test_processes_starting_together_on_a_new_data_dir_all_load_and_share_one_key(tmp_path):
    for attempt in range(3):
        data = tmp_path / f"data{attempt}"
        procs = start_together(data, 6)
        outputs = [proc.communicate(timeout=120) for proc in procs]
        assert [proc.returncode for proc in procs] == [0] * 6, [err for _, err in outputs]
        keys = {out.strip() for out, _ in outputs}
        assert keys == {(data / "secret_key").read_text().strip()}
        assert not list(data.glob(".*"))  # no probe or key left aside
