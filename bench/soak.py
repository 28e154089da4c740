"""Soak: load, `kill -9` of the server in the middle of it, restart; nothing acknowledged lost.

    python bench/soak.py [--clients 4] [--rounds 3] [--kill-after 5]

Not a test (it takes about half a minute and uses every core). In a throwaway data directory:
1. migrate and create a read-write API token;
2. each round: start `manage.py serve` (waitress and the Huey consumer) on a free port; the
   clients post turns as agents do (POST /api/v1/turns, a new session id every few turns) and
   keep the id of every turn the server acknowledged (201, or 200 for a retry); half-way a
   `manage.py export` runs; after --kill-after seconds the server and its consumer get
   SIGKILL, mid-load;
3. the server is started again (the start-up repair runs), answers /health, and is stopped;
4. it prints, per round: turns acknowledged, of those stored, lost (acknowledged but not
   stored: must be 0), stored but never acknowledged (answers cut by the kill: harmless, a
   retry with the same key answers 200), the export's `import --dry-run` verdict, the
   export restored for real into a new data dir (`backups load`: migrate, import) with its
   turns counted against the archive's manifest and the agent each one names, and SQLite's
   integrity check.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TURNS_PER_SESSION = 5


def env(data_dir: Path) -> dict:
    return {
        **os.environ,
        "MEMSITE_DATA_DIR": str(data_dir),
        "MEMSITE_API_RATE_LIMIT": "0",  # one token drives every client
        "MEMSITE_LOG_LEVEL": "WARNING",
        "MEMSITE_HUEY_IMMEDIATE": "false",
        "DJANGO_SETTINGS_MODULE": "memsite.settings",
    }


def manage(data_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env(data_dir),
        cwd=ROOT,
        check=check,
        capture_output=True,
        text=True,
    )


def start_server(data_dir: Path) -> tuple[subprocess.Popen, int, int]:
    """The serve process, its port and its Huey consumer's pid."""
    log = open(data_dir / "server.log", "a")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "serve", "--host", "127.0.0.1", "--port", "0"],
        env=env(data_dir),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stdout.readline()
        if match := re.search(r"http://127\.0\.0\.1:(\d+)/ \(Huey consumer pid (\d+)\)", line):
            return proc, int(match.group(1)), int(match.group(2))
        if proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit(f"The server did not start; see {data_dir / 'server.log'}")


def client(port: int, token: str, name: str, stop: threading.Event, acked: list[int]) -> None:
    """Post turns until the server dies or `stop` is set; keep the acknowledged ids."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    n = 0
    while not stop.is_set():
        body = {
            "session_id": f"{name}-{n // TURNS_PER_SESSION}",
            "turn_index": n % TURNS_PER_SESSION,
            "role": "user" if n % 2 == 0 else "assistant",
            "content": f"soak turn {n} of {name}: 我下周三要去杭州面试",
        }
        try:
            conn.request("POST", "/api/v1/turns", json.dumps(body).encode(), headers)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            return  # the server was killed: this answer never came
        if response.status in (200, 201):
            acked.append(json.loads(data)["id"])
            n += 1
        elif response.status != 503:  # 503: busy, the same turn is posted again
            print(f"  {name}: HTTP {response.status} {data[:200]!r}", file=sys.stderr)
            n += 1


def kill_hard(proc: subprocess.Popen, consumer_pid: int) -> None:
    for pid in (proc.pid, consumer_pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def wait_for_health(port: int, limit: float = 30) -> None:
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/v1/health")
            conn.getresponse().read()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("The restarted server does not answer /health.")


STORED = """
import json, sys
from curator.models import ConversationTurn
from django.db import connection
acked = set(json.load(open(sys.argv[1])))
prefix = sys.argv[2]
stored = set(ConversationTurn.objects.filter(session__external_id__startswith=prefix)
             .values_list("id", flat=True))
with connection.cursor() as cursor:
    cursor.execute("PRAGMA integrity_check")
    integrity = cursor.fetchone()[0]
print(json.dumps({"acknowledged": len(acked), "stored": len(acked & stored),
                  "unacknowledged": len(stored - acked), "integrity": integrity}))
"""


def stored_counts(data_dir: Path, acked: list[int], prefix: str) -> dict:
    ids = data_dir / "acked.json"
    ids.write_text(json.dumps(acked))
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + STORED, str(ids), prefix],
        env=env(data_dir),
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def soak_round(data_dir: Path, token: str, number: int, args) -> dict:
    proc, port, consumer = start_server(data_dir)
    stop, acked = threading.Event(), []
    prefix = f"soak{number}-"
    threads = [
        threading.Thread(target=client, args=(port, token, f"{prefix}{i}", stop, acked))
        for i in range(args.clients)
    ]
    for t in threads:
        t.start()
    time.sleep(args.kill_after / 2)
    backup = data_dir / f"live-{number}.zip"
    exported = manage(data_dir, "export", str(backup), check=False)  # while the load runs
    time.sleep(args.kill_after / 2)
    kill_hard(proc, consumer)
    stop.set()
    for t in threads:
        t.join(15)
    proc, port, consumer = start_server(data_dir)  # the start-up repair runs here
    wait_for_health(port)
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    result = stored_counts(data_dir, acked, prefix)
    if exported.returncode:
        result["export"] = f"failed: {exported.stderr.strip()[-200:]}"
        result["restored"] = "-"
    else:
        check = manage(data_dir, "import", "--dry-run", str(backup), check=False)
        result["export"] = "restores" if check.returncode == 0 else check.stderr.strip()[-200:]
        result["restored"] = restored(data_dir, backup, number)
    return result


RESTORED = """
import json, sys, zipfile
from curator.models import ConversationTurn
want = json.loads(zipfile.ZipFile(sys.argv[1]).read("manifest.json"))["counts"]["turns"]
turns = ConversationTurn.objects
print(json.dumps({"want": want, "turns": turns.count(),
                  "named": turns.filter(agent__name="soak").count()}))
"""


def restored(data_dir: Path, backup: Path, number: int) -> str:
    """The mid-load export restored for real into a new data dir: turns and agent links."""
    target = data_dir.parent / f"{data_dir.name}-restored-{number}"
    try:
        done = manage(target, "backups", "load", str(backup), check=False)
        if done.returncode:
            return "FAILED: " + (done.stderr.strip().splitlines() or ["?"])[-1][:150]
        counted = subprocess.run(
            [sys.executable, "-c", "import django; django.setup()\n" + RESTORED, str(backup)],
            env=env(target),
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        c = json.loads(counted.stdout.strip().splitlines()[-1])
        ok = c["turns"] == c["want"] == c["named"]
        return f"{'ok' if ok else 'MISMATCH'}: {c['turns']}/{c['want']} turns, {c['named']} by soak"
    finally:
        import shutil

        shutil.rmtree(target, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kill-after", type=float, default=5.0, help="seconds of load")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="memsite-soak-"))
    manage(data_dir, "migrate", "--noinput")
    token = manage(data_dir, "api_token", "create", "--name", "soak").stdout.strip().split()[-1]
    print(f"Data directory: {data_dir}")
    print(
        f"{'round':<7}{'acked':>7}{'stored':>8}{'lost':>6}{'unacked':>9}  export    integrity"
        "  restored into a new data dir"
    )
    lost = 0
    for number in range(1, args.rounds + 1):
        r = soak_round(data_dir, token, number, args)
        missing = r["acknowledged"] - r["stored"]
        lost += missing
        print(
            f"{number:<7}{r['acknowledged']:>7}{r['stored']:>8}{missing:>6}"
            f"{r['unacknowledged']:>9}  {r['export']:<9} {r['integrity']:<10} {r['restored']}",
            flush=True,
        )
    print("No acknowledged turn was lost." if not lost else f"LOST {lost} acknowledged turns.")
    if not args.keep:
        import shutil

        shutil.rmtree(data_dir, ignore_errors=True)
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
