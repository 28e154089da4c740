"""Talking to the upstream over HTTP (stdlib http.client: nothing buffers between the
upstream's socket and the client's, so each server-sent event goes on as it arrives).

Only the upstream's own key is sent; the client's headers (its curator token above all) never
are. Errors name the upstream's address, never its key.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_variables

from memsite.proxy.upstream import Upstream

CONNECT_TIMEOUT = 10.0
READ_SIZE = 64 * 1024
# Headers of the upstream's answer that describe the body as sent; the proxy sets its own.
HOP_HEADERS = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "server",
    "date",
}


class UpstreamDown(Exception):
    """No answer at all: refused, unknown host, TLS failure, timeout before the status line."""

    def __init__(self, upstream: Upstream, reason: str):
        super().__init__(reason)
        self.where = address(upstream)
        self.reason = reason

    @property
    def message(self) -> str:
        return _("The upstream %(url)s cannot be reached: %(reason)s") % {
            "url": self.where,
            "reason": self.reason,
        }


def address(upstream: Upstream) -> str:
    """The base URL without any user:password part."""
    parts = urlsplit(upstream.base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


@dataclass
class Answer:
    status: int
    content_type: str
    headers: dict = field(default_factory=dict)
    response: http.client.HTTPResponse | None = None
    connection: http.client.HTTPConnection | None = None

    def read_all(self) -> bytes:
        try:
            return self.response.read()
        finally:
            self.close()

    def chunks(self):
        """The body as the upstream sends it, one read at a time."""
        while True:
            data = self.response.read1(READ_SIZE)
            if not data:
                return
            yield data

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def _connection(upstream: Upstream) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(upstream.base_url)
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(
            parts.hostname,
            parts.port,
            timeout=CONNECT_TIMEOUT,
            context=ssl.create_default_context(),
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=CONNECT_TIMEOUT)
    return conn, parts.path.rstrip("/")


# Opens upstream connections while the context is being built: for a remote upstream the TCP
# and TLS handshakes (tens of milliseconds) then cost nothing on the way to the first token.
_OPENER = ThreadPoolExecutor(max_workers=8, thread_name_prefix="proxy-connect")


def open_soon(upstream: Upstream) -> Future | None:
    """A connection being opened in the background (None without an upstream)."""
    if not upstream.configured:
        return None
    return _OPENER.submit(_open, upstream)


def _open(upstream: Upstream):
    conn, prefix = _connection(upstream)
    try:
        conn.connect()
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        return exc, prefix
    return conn, prefix


@sensitive_variables("headers", "upstream")  # Django's error reports never show the key
def call(
    upstream: Upstream,
    method: str,
    path: str,
    body: dict | None = None,
    opening: Future | None = None,
) -> Answer:
    """Send one request and wait for the status line; raise UpstreamDown without one.
    `opening`: the connection open_soon started for this request."""
    conn, prefix = opening.result() if opening is not None else _open(upstream)
    if isinstance(conn, BaseException):
        raise UpstreamDown(upstream, _reason(conn))
    headers = {"Accept": "application/json, text/event-stream", "User-Agent": "memory-curator"}
    data = None
    if body is not None:
        data = json.dumps(body, ensure_ascii=False).encode()
        headers["Content-Type"] = "application/json"
    if upstream.api_key:
        headers["Authorization"] = f"Bearer {upstream.api_key}"
    try:
        conn.sock.settimeout(settings.PROXY_UPSTREAM_TIMEOUT)
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.request(method, prefix + path, body=data, headers=headers)
        response = conn.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        raise UpstreamDown(upstream, _reason(exc)) from None
    kept = {k: v for k, v in response.getheaders() if k.lower() not in HOP_HEADERS}
    content_type = response.getheader("Content-Type", "application/json")
    return Answer(response.status, content_type, kept, response, conn)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return _("connection refused")
    if isinstance(exc, socket.timeout | TimeoutError):
        return _("no answer in time")
    if isinstance(exc, socket.gaierror):
        return _("unknown host")
    return exc.__class__.__name__ + (f" ({exc})" if str(exc) else "")
