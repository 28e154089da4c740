"""Acceptance: the built wheel, installed into a fresh virtualenv, is a working app.

`memory-curator run` answers /api/v1/health with templates, static files and compiled
translations from the wheel (no checkout involved), `memory-curator manage api_token create`
prints a token on its last line, Ctrl-C stops it, and outside a checkout the data directory
defaults to the platform's user data directory. The venv reuses this environment's
dependencies through a .pth file, so only the wheel itself is installed (fast, offline); the
wheel's build runs in pip's isolated build environment (setuptools and polib from the index).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
NOT_SHIPPED = shutil.ignore_patterns(
    ".git", ".venv", "data", "tests", "bench", "build", "*.egg-info", "__pycache__", "*.mo"
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtualenv with the wheel built from this checkout installed in it."""
    tmp = tmp_path_factory.mktemp("install")
    shutil.copytree(REPO, tmp / "src", ignore=NOT_SHIPPED)  # the build writes into its tree
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", tmp / "src"])
    (wheel,) = (tmp / "dist").glob("memory_curator-*.whl")
    _run([sys.executable, "-m", "venv", tmp / "venv"])
    python = tmp / "venv" / "bin" / "python"
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site.strip(), "deps-of-the-test-environment.pth").write_text("\n".join(sorted(ours)))
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel])
    return tmp


def _run(cmd, **kwargs) -> str:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _env(tmp: Path, **extra) -> dict:
    """A clean environment: no test settings, nothing from the checkout on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSITE_", "DJANGO_"))}
    env.pop("PYTHONPATH", None)
    return {**env, "HOME": str(tmp / "home"), **extra}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, headers=None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _wait_for_health(base: str, app: subprocess.Popen) -> dict:
    deadline = time.monotonic() + 90  # the first run compiles the embedding engine
    while time.monotonic() < deadline:
        assert app.poll() is None, "memory-curator run exited"
        try:
            status, body = _get(base + "/api/v1/health")
            if status == 200:
                return json.loads(body)
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.5)
    pytest.fail("memory-curator run never answered /api/v1/health")


def test_the_installed_app_runs_serves_and_creates_tokens(installed):
    tool = installed / "venv" / "bin" / "memory-curator"
    data, port = installed / "data", _free_port()
    env = _env(installed, MEMSITE_DATA_DIR=str(data), MEMSITE_PORT=str(port))
    app = subprocess.Popen(
        [tool, "run"], env=env, cwd=installed, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        health = _wait_for_health(base, app)
        assert health["status"] == "ok" and health["db"] == "ok"
        assert _get(base + "/static/css/app.css")[0] == 200
        status, setup = _get(base + "/setup/", {"Accept-Language": "zh-hans"})
        assert status == 200 and "创建" in setup  # templates and compiled translations

        created = _run([tool, "manage", "api_token", "create", "--name", "x"], env=env)
        token = created.strip().splitlines()[-1]
        assert token.startswith("mc_")
        auth = {"Authorization": f"Bearer {token}"}
        assert _get(base + "/api/v1/memories", auth)[0] == 200

        where = _run(
            [tool, "manage", "shell", "-c", "import memsite; print(memsite.__file__)"], env=env
        )
        assert str(installed / "venv") in where and str(REPO) not in where
    finally:
        app.send_signal(signal.SIGINT)  # Ctrl-C stops the web server and the consumer
        app.wait(30)
    assert app.returncode == 0, app.stdout.read().decode()[-2000:]
    assert (data / "memory.sqlite3").exists()


def test_outside_a_checkout_the_data_lives_in_the_user_data_directory(installed):
    tool = installed / "venv" / "bin" / "memory-curator"
    env = _env(installed, XDG_DATA_HOME=str(installed / "xdg"))
    shown = _run(
        [
            tool,
            "manage",
            "shell",
            "-c",
            "from django.conf import settings; print(settings.DATA_DIR)",
        ],
        env=env,
    )
    assert shown.strip().splitlines()[-1] == str(installed / "xdg" / "memory-curator")
