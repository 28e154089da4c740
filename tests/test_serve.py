"""`manage.py serve` as a real process: it serves HTTP, owns a Huey consumer, and stops cleanly."""

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MANAGE = str(REPO / "manage.py")
READY = re.compile(r"running at (http://\S+/) \(Huey consumer pid (\d+)\)")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A migrated, throwaway data directory, so the test never touches the real data/."""
    data_dir = tmp_path_factory.mktemp("serve-data")
    environ = {**os.environ, "MEMSITE_DATA_DIR": str(data_dir), "MEMSITE_HOST": "127.0.0.1"}
    # The real settings, as `make run` has them (the tests' own run Huey inline and pick a
    # data directory of their own, which the consumer would refuse and serve would not see).
    environ["DJANGO_SETTINGS_MODULE"] = "memsite.settings"
    environ.pop("MEMSITE_PORT", None)
    subprocess.run(
        [sys.executable, MANAGE, "migrate", "--noinput"],
        env=environ,
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return environ


def _start_serve(env, stderr_file, port):
    return subprocess.Popen(
        [sys.executable, MANAGE, "serve", "--port", str(port)],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=stderr_file,
        text=True,
    )


def _wait_for_ready_line(proc, timeout=60):
    """Read stdout in a thread so a silent or crashed server fails the test instead of hanging
    (a minute: two servers warming up at once on a busy 2-core machine took over 20 s)."""
    # Later lines stay readable from proc.lines.
    proc.lines = lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"serve printed no ready line within {timeout}s")
        match = READY.search(line)
        if match:
            return match.group(1), int(match.group(2))


def _http_status(url):
    """Any HTTP answer counts: the point is that waitress serves the Django app."""
    try:
        with urllib.request.urlopen(url + "api/v1/health", timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _parent_pid(pid):
    # The command name in /proc/<pid>/stat is in parentheses and may contain spaces.
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_runs_consumer_and_stops_cleanly(env, tmp_path, signum):
    stderr_path = tmp_path / "serve.err"
    with stderr_path.open("w") as stderr_file:
        proc = _start_serve(env, stderr_file, port=0)  # port 0: the OS picks a free port
    try:
        url, consumer_pid = _wait_for_ready_line(proc)
        assert 100 <= _http_status(url) < 600  # any answer: other tests cover the app itself
        assert _parent_pid(consumer_pid) == proc.pid

        proc.send_signal(signum)
        assert proc.wait(timeout=20) == 0, stderr_path.read_text()
        assert not Path(f"/proc/{consumer_pid}").exists(), "the Huey consumer was left running"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_on_a_taken_port_exits_with_one_sentence(env):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, MANAGE, "serve", "--port", str(port)],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "running at" not in result.stdout
    last_line = result.stderr.strip().splitlines()[-1]
    assert f"Port {port} on 127.0.0.1 is already in use" in last_line


def _children(pid):
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _web_processes(proc, consumer_pid, count, gone=None):
    """The serve process's children but the consumer, once there are `count` of them (the
    arbiter forks its workers after it announces the address) and `gone` is not one."""
    for _ in range(150):
        workers = [pid for pid in _children(proc.pid) if pid != consumer_pid]
        if len(workers) == count and gone not in workers:
            return workers
        time.sleep(0.2)
    pytest.fail(f"expected {count} web processes, found {workers}")


def _is_consumer(pid: int) -> bool:
    """serve's task consumer: forked from serve under gunicorn (named huey-consumer), else
    `python -m memsite consumer` (run_huey under the data dir's consumer lock,
    memsite/core/consumer.py)."""
    if Path(f"/proc/{pid}/comm").read_text().strip() == "huey-consumer":
        return True
    cmd = _cmdline(pid)
    return "run_huey" in cmd or "memsite consumer" in cmd


def _cmdline(pid):
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("server", ["gunicorn", "waitress"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_several_web_processes_serve_one_port_and_stop_together(env, tmp_path, signum, server):
    stderr_path = tmp_path / "serve.err"
    settings = {"MEMSITE_WEB_PROCESSES": "3", "MEMSITE_WEB_THREADS": "1"}
    with stderr_path.open("w") as stderr_file:
        proc = _start_serve({**env, **settings, "MEMSITE_WEB_SERVER": server}, stderr_file, 0)
    try:
        url, consumer_pid = _wait_for_ready_line(proc)
        assert proc.lines.get(timeout=10).strip() == (
            "3 web processes serve the same port, 1 request thread(s) each."
        )
        statuses = [_http_status(url) for _ in range(12)]
        assert statuses == [statuses[0]] * 12 and 100 <= statuses[0] < 600, statuses
        # gunicorn's arbiter only watches its three workers; waitress serves in this one too.
        workers = _web_processes(proc, consumer_pid, 3 if server == "gunicorn" else 2)
        consumers = [pid for pid in _children(proc.pid) if _is_consumer(pid)]
        assert consumers == [consumer_pid]  # one consumer, however many web processes
        assert all(_children(pid) == [] for pid in workers)
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == 0, stderr_path.read_text()
        for pid in [consumer_pid, *workers]:
            assert not Path(f"/proc/{pid}").exists(), f"process {pid} was left running"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_web_process_that_dies_stops_the_waitress_server_with_a_sentence(env, tmp_path):
    stderr_path = tmp_path / "serve.err"
    settings = {"MEMSITE_WEB_PROCESSES": "2", "MEMSITE_WEB_SERVER": "waitress"}
    with stderr_path.open("w") as stderr_file:
        proc = _start_serve({**env, **settings}, stderr_file, port=0)
    try:
        _url, consumer_pid = _wait_for_ready_line(proc)
        (worker,) = [pid for pid in _children(proc.pid) if pid != consumer_pid]
        os.kill(worker, signal.SIGKILL)
        assert proc.wait(timeout=20) == 1
        assert f"A web worker process (pid {worker}) exited unexpectedly" in stderr_path.read_text()
        assert not Path(f"/proc/{consumer_pid}").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_gunicorn_replaces_a_web_process_that_dies(env, tmp_path):
    stderr_path = tmp_path / "serve.err"
    settings = {"MEMSITE_WEB_PROCESSES": "2", "MEMSITE_WEB_SERVER": "gunicorn"}
    with stderr_path.open("w") as stderr_file:
        proc = _start_serve({**env, **settings}, stderr_file, port=0)
    try:
        url, consumer_pid = _wait_for_ready_line(proc)
        first, second = _web_processes(proc, consumer_pid, 2)
        os.kill(first, signal.SIGKILL)
        workers = _web_processes(proc, consumer_pid, 2, gone=first)
        assert second in workers
        assert 100 <= _http_status(url) < 600 and proc.poll() is None
        assert Path(f"/proc/{consumer_pid}").exists()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, stderr_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_the_consumer_is_forked_from_serve_holds_the_lock_and_dies_with_it(env, tmp_path):
    """Under gunicorn the consumer is serve's child in a session of its own (Ctrl-C in the
    terminal reaches only serve, which stops it gracefully), it holds the data directory's
    consumer lock, its workers run below the web processes' CPU priority (a bulk import
    leaves the cores to searches), and it goes when serve is killed without a chance to
    clean up."""
    lock = Path(env["MEMSITE_DATA_DIR"]) / "consumer.lock"
    with (tmp_path / "serve.err").open("w") as stderr_file:
        proc = _start_serve({**env, "MEMSITE_WEB_SERVER": "gunicorn"}, stderr_file, port=0)
    try:
        _url, consumer_pid = _wait_for_ready_line(proc)
        assert _parent_pid(consumer_pid) == proc.pid and _is_consumer(consumer_pid)
        assert os.getsid(consumer_pid) == consumer_pid != os.getsid(proc.pid)
        for _ in range(150):
            if lock.exists() and lock.read_text().strip() == str(consumer_pid):
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"the consumer {consumer_pid} never held {lock}")
        for _ in range(150):
            if 10 in _niceness(consumer_pid):  # its worker threads
                break
            time.sleep(0.2)
        else:
            pytest.fail("the consumer's workers run at the web processes' priority")
        assert _niceness(proc.pid) == {0}
        proc.kill()
        proc.wait(timeout=10)
        for _ in range(150):
            if not _running(consumer_pid):
                break
            time.sleep(0.2)
        else:
            pytest.fail("the consumer outlived serve")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _niceness(pid: int) -> set[int]:
    """The niceness of each thread of the process (field 19 of /proc/PID/task/TID/stat)."""
    values = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            values.add(int((task / "stat").read_text().rsplit(")", 1)[1].split()[16]))
        except OSError:
            continue  # the thread ended meanwhile
    return values


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed serve's child waits for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
