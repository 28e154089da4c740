"""The web app under gunicorn, started from `manage.py serve` (not from gunicorn's command).

gunicorn is the maintained, widely used pre-fork server: an arbiter process forks one worker
per core, restarts a worker that dies, and stops them all on SIGINT or SIGTERM. Its gthread
workers answer each request on a thread of a small pool and write a streamed response
(StreamingHttpResponse) chunk by chunk as the iterator yields it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from django.conf import settings
from django.db import connections
from gunicorn.app.base import BaseApplication

# A worker that has not reported for this long is killed and replaced. gthread workers report
# from their main loop, whatever their request threads do; the margin is for a busy machine.
WORKER_TIMEOUT = 120
GRACE_SECONDS = 10


class _Application(BaseApplication):
    def __init__(self, app, options: dict):
        self.app, self.options = app, options
        super().__init__()

    def load_config(self):
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        return self.app


def serve(
    app,
    host: str,
    port: int,
    ready: Callable[[str, int], None],
    on_worker: Callable[[], None],
    on_worker_exit: Callable[[], None],
) -> int:
    """Serve `app` until a signal stops the arbiter; its exit status. `ready(host, port)` is
    called once listening (port 0 gives the port the system chose), `on_worker()` in each
    worker before it takes requests, `on_worker_exit()` in each as it leaves."""

    def when_ready(server):
        bound = server.LISTENERS[0].sock.getsockname()
        ready(bound[0], bound[1])

    def pre_fork(server, worker):
        connections.close_all()  # a worker must never share the arbiter's SQLite handles

    def post_worker_init(worker):
        on_worker()

    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    options = {
        "bind": [bind],
        "workers": settings.WEB_PROCESSES,
        "worker_class": "gthread",
        # Chat streams through the proxy hold a thread while the model talks: they get
        # threads of their own; serve's StreamLanes keeps every other request to WEB_THREADS.
        "threads": settings.WEB_THREADS + settings.PROXY_STREAM_THREADS,
        "backlog": 1024,
        "timeout": WORKER_TIMEOUT,
        "graceful_timeout": GRACE_SECONDS,
        "keepalive": 5,
        "loglevel": "warning",
        "errorlog": "-",
        "accesslog": None,
        "proc_name": "memory-curator",
        "when_ready": when_ready,
        "pre_fork": pre_fork,
        "post_worker_init": post_worker_init,
    }
    arbiter = os.getpid()
    try:
        _Application(app, options).run()
    except SystemExit as exc:  # the arbiter exits once its workers have stopped
        code = exc.code if isinstance(exc.code, int) else 1
        if os.getpid() != arbiter:
            # A worker leaving: it was forked inside run(), so its exit would otherwise
            # unwind through the caller's code (stopping the consumer from every worker).
            on_worker_exit()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    return 0
