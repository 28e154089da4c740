"""`manage.py serve`: the web app and the Huey consumer, started and stopped together.

One foreground process owns both, so Ctrl-C or SIGTERM shuts everything down and nothing is
left running (background jobs started by `make` would ignore Ctrl-C). The web app runs in
one process per core (MEMSITE_WEB_PROCESSES): under gunicorn's arbiter with threaded
(gthread) workers where gunicorn runs, else waitress in processes this command forks.
"""

import contextlib
import ctypes
import errno
import os
import signal
import socket
import sys
import threading
import time
import traceback

from django.conf import settings
from django.core.management.base import BaseCommand
from waitress import create_server

from memsite.core import consumer as consumer_process

# Huey gets consumer.SHUTDOWN_TIMEOUT to finish running tasks after SIGTERM; we kill it after
# GRACE_SECONDS.
GRACE_SECONDS = 10
PR_SET_PDEATHSIG = 1


class Command(BaseCommand):
    help = "Serve Memory Curator on every core and run the Huey task consumer beside it."
    # System checks run before handle() (the default), so bad configuration stops start-up.

    def add_arguments(self, parser):
        parser.add_argument("--host", help="Address to listen on (default: MEMSITE_HOST).")
        parser.add_argument("--port", type=int, help="Port to listen on (default: MEMSITE_PORT).")

    def handle(self, *args, **options):
        host = options["host"] or settings.HOST
        port = settings.PORT if options["port"] is None else options["port"]
        self.check_migrations()  # warns about unapplied migrations, like runserver does
        self._stopping = False
        self._consumer_died = False
        self._worker_died = None
        self._workers = []
        self._ensure_port_free(host, port)
        self._install_signal_handlers()
        self._consumer = None
        error = None
        try:
            error = self._serve(host, port)
        except KeyboardInterrupt:
            pass  # a signal arrived outside waitress's loop: same clean shutdown
        finally:
            self._stop_consumer(self._consumer)
        consumer = self._consumer
        if self._worker_died:
            error = f"A web worker process (pid {self._worker_died}) exited unexpectedly."
        if self._consumer_died:
            error = (
                f"The Huey consumer (pid {consumer.pid}) exited unexpectedly with code "
                f"{consumer.returncode}, so Memory Curator stopped (see the log above)."
            )
        if error:
            self._fail(error)

    def _serve(self, host, port):
        """Serve until SIGINT/SIGTERM; return an error message if the server could not start."""
        if settings.WEB_SERVER == "gunicorn":
            return self._serve_gunicorn(host, port)
        self._consumer = consumer = self._start_consumer()
        try:
            app = _wsgi_application()
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
            sock = socket.create_server((host, port), family=family, backlog=1024)
        except OSError as exc:
            # Only when another program took the port after _ensure_port_free.
            return self._bind_error_message(host, port, exc)
        processes = settings.WEB_PROCESSES if hasattr(os, "fork") else 1  # Windows: one
        self._workers = [_fork_worker(app, sock) for _ in range(processes - 1)]
        server = create_server(app, sockets=[sock], threads=_threads())
        self._watch_consumer(consumer)
        self._watch_workers()
        threading.Thread(target=_warm_up, name="search-warm-up", daemon=True).start()
        self._announce(server, host, port, consumer.pid)
        if self._workers:
            self.stdout.write(
                f"{len(self._workers) + 1} web processes serve the same port, "
                f"{settings.WEB_THREADS} request thread(s) each."
            )
            self.stdout.flush()
        try:
            server.run()  # returns once a signal handler raised KeyboardInterrupt
        finally:
            self._stop_workers()
        return None

    def _serve_gunicorn(self, host, port):
        """gunicorn's arbiter in this process: it forks the workers, replaces one that dies,
        and stops them all on SIGINT (at once) or SIGTERM (requests finished first). What
        every process needs is loaded here first, then the consumer and the workers are
        forked from this process and share those pages (docs/performance.md)."""
        from memsite.gunicorn import serve

        _share_before_fork()
        # Forked, not started: a fresh interpreter would load Django, the app and jieba's
        # dictionary again (about 70 MB of its own).
        self._consumer = consumer = consumer_process.fork()

        def ready(effective_host, effective_port):
            self._watch_consumer(consumer)
            self._announce(None, effective_host, effective_port, consumer.pid)
            if settings.WEB_PROCESSES > 1:
                self.stdout.write(
                    f"{settings.WEB_PROCESSES} web processes serve the same port, "
                    f"{settings.WEB_THREADS} request thread(s) each."
                )
                self.stdout.flush()

        code = serve(
            _wsgi_application(),
            host,
            port,
            ready,
            on_worker=_warm_up_thread,
            on_worker_exit=_flush_recalls,
        )
        if code and not self._consumer_died:
            return "The web server stopped with an error (see the log above)."
        return None

    def _watch_workers(self):
        """A worker process that dies takes the whole server down, like the consumer."""

        def wait(pid):
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:  # reaped by _stop_workers
                return
            # 0: it stopped on a signal (Ctrl-C reaches every process of the terminal).
            if os.waitstatus_to_exitcode(status) != 0 and not self._stopping:
                self._worker_died = pid
                os.kill(os.getpid(), signal.SIGTERM)

        for pid in self._workers:
            threading.Thread(target=wait, args=(pid,), daemon=True).start()

    def _stop_workers(self):
        self._stopping = True
        for pid in self._workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)  # each stops its waitress like Ctrl-C does here
        deadline = time.monotonic() + GRACE_SECONDS
        for pid in self._workers:
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(pid):  # never signal a pid that is no longer our child
                os.kill(pid, signal.SIGKILL)

    def _install_signal_handlers(self):
        # Turning SIGTERM into the same KeyboardInterrupt as Ctrl-C gives one shutdown path.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, frame):
        # waitress's run() catches KeyboardInterrupt and stops its threads before returning.
        raise KeyboardInterrupt

    def _ensure_port_free(self, host, port):
        """Fail in one sentence before the consumer starts, so a taken port leaves nothing."""
        try:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
            with socket.create_server((host, port), family=family):
                pass
        except OSError as exc:
            self._fail(self._bind_error_message(host, port, exc))

    def _bind_error_message(self, host, port, exc):
        if exc.errno == errno.EADDRINUSE:
            return (
                f"Port {port} on {host} is already in use; stop the other program "
                "or choose another port with MEMSITE_PORT or --port."
            )
        return f"Cannot listen on {host}:{port} ({exc.strerror or exc})."

    def _start_consumer(self):
        # Workers and worker type come from settings.HUEY["consumer"]; checks already ran here.
        # The consumer waits while another process (a stdio MCP server) runs one on this data
        # directory, and takes over when it stops (memsite.core.consumer).
        return consumer_process.start()

    def _watch_consumer(self, consumer):
        """Turn an unexpected consumer exit into our own shutdown, so tasks never silently stop."""

        def wait():
            consumer.wait()
            if not self._stopping:
                self._consumer_died = True
                os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=wait, name="huey-consumer-watch", daemon=True).start()

    def _announce(self, server, host, port, consumer_pid):
        # effective_* holds the real port when --port 0 asked the OS for a free one.
        host = getattr(server, "effective_host", host)
        port = getattr(server, "effective_port", port)
        shown_host = f"[{host}]" if ":" in str(host) else host
        self.stdout.write(
            f"Memory Curator is running at http://{shown_host}:{port}/ "
            f"(Huey consumer pid {consumer_pid}). Press Ctrl-C to stop."
        )
        self.stdout.flush()  # stdout is block-buffered when piped; people and tests wait for it

    def _stop_consumer(self, consumer):
        self._stopping = True
        # Further signals would interrupt this cleanup half-way; it is bounded by GRACE_SECONDS.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
        if consumer is not None:  # None: stopped while loading, before it was forked
            consumer_process.stop(consumer, GRACE_SECONDS)  # graceful: running tasks finish first

    def _fail(self, message):
        self.stderr.write(message)
        sys.exit(1)


def _wsgi_application():
    from memsite.wsgi import application  # imported late: settings are already configured

    return StreamLanes(application, settings.WEB_THREADS)


# Chat streams through the proxy (/llm/, the playground's) hold their thread for as long as
# the model talks, mostly waiting on the upstream. They get threads of their own
# (PROXY_STREAM_THREADS more in the pool), and every other request still runs at most
# WEB_THREADS at a time, the number measured best for the API (docs/performance.md).
STREAM_PATHS = ("/llm/", "/playground/chat/")


def _threads() -> int:
    return settings.WEB_THREADS + settings.PROXY_STREAM_THREADS


class StreamLanes:
    def __init__(self, app, limit: int):
        self.app, self.gate = app, threading.BoundedSemaphore(limit)

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "").startswith(STREAM_PATHS):
            return self.app(environ, start_response)
        with self.gate:  # the page or API response is built inside; only sending is outside
            return self.app(environ, start_response)


def _fork_worker(app, sock) -> int:
    """Another process serving the same socket: each has its own GIL, so the Python half of
    every request (Django, django-ninja, loading and scoring candidates) runs on every core
    instead of one. Forked before this process starts any thread."""
    from django.db import connections

    connections.close_all()  # a child must never share the parent's SQLite handles
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        if sys.platform.startswith("linux"):
            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        threading.Thread(target=_warm_up, name="search-warm-up", daemon=True).start()
        create_server(app, sockets=[sock], threads=_threads()).run()
    except KeyboardInterrupt:  # SIGTERM from the parent, or Ctrl-C in the terminal
        pass
    except BaseException:
        code = 1
        traceback.print_exc()  # os._exit below would swallow a re-raised error
    finally:
        os._exit(code)  # never return into the parent's code (its cleanup is the parent's)


def _alive(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:  # already reaped (by its watcher thread)
        return False


def _warm_up():
    from retrieval.search import warm_up

    warm_up()


def _flush_recalls():
    """A worker's searches recorded since its last write (the recall log, access counts)."""
    if "retrieval.search" in sys.modules:
        from retrieval.search import flush_recalls

        flush_recalls()


def _warm_up_thread():
    threading.Thread(target=_warm_up, name="search-warm-up", daemon=True).start()


def _share_before_fork():
    """Load jieba's dictionary (61 MB), the keyword postings (about 0.5 KB an item), the
    vector file's map and the embedding engine's expanded weights (27 MB) before the consumer
    and the workers fork, so they share those pages instead of each loading its own; frozen,
    no garbage collection in a child writes to (and so copies) them. Each worker then
    follows the database's later changes itself. The engine is loaded, not run: a run
    would start its threads, which must not be forked."""
    from retrieval.search import warm_up

    warm_up(engine=False)
