"""A streamed answer (StreamingHttpResponse, e.g. the LLM proxy's) leaves a gunicorn worker
chunk by chunk: the client reads the first chunk while the view has not produced the second."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

SERVER = """
import os, sys, time
from pathlib import Path
os.environ["DJANGO_SETTINGS_MODULE"] = "memsite.settings"
import django
django.setup()
from django.http import StreamingHttpResponse
from django.core.handlers.wsgi import WSGIHandler
from memsite.gunicorn import serve

gate = Path(sys.argv[1])

def chunks():
    yield b"first\\n"
    while not gate.exists():  # the second chunk waits for the client to have the first
        time.sleep(0.05)
    yield b"second\\n"

class App(WSGIHandler):
    def get_response(self, request):
        return StreamingHttpResponse(chunks(), content_type="text/plain")

def ready(host, port):
    print(f"PORT {port}", flush=True)

sys.exit(serve(App(), "127.0.0.1", 0, ready, on_worker=lambda: None, on_worker_exit=lambda: None))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="gunicorn needs a POSIX system")
def test_a_streamed_response_leaves_the_worker_chunk_by_chunk(tmp_path):
    gate = tmp_path / "gate"
    env = {
        **os.environ,
        "MEMSITE_DATA_DIR": str(tmp_path / "data"),
        "MEMSITE_WEB_PROCESSES": "1",
        "MEMSITE_WEB_THREADS": "2",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(gate)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = int(proc.stdout.readline().split()[1])
        with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
            conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            received = b""
            while b"first" not in received:
                part = conn.recv(4096)
                assert part, received
                received += part
            assert b"second" not in received and not gate.exists()
            gate.touch()
            while part := conn.recv(4096):
                received += part
        assert b"chunked" in received.lower() and b"second" in received
    finally:
        proc.terminate()
        proc.wait(timeout=30)
