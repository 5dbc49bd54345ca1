"""The scrape endpoint: a tiny asyncio HTTP/1.1 server on metricsPromExporterHost/Port.

Java's PrometheusHttpServer (prometheus-metrics-exporter-httpserver) answers GET on ``/`` and
``/metrics`` with the text format, or protobuf, or OpenMetrics when the Accept header asks for
them (protobuf first: ExpositionFormats#findWriter), and ``/-/healthy`` with a short text; so
does this. One request
per connection (``Connection: close``): a scraper reconnects every interval anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import Callable

from pyrmq.metrics import protobuf
from pyrmq.metrics.exposition import CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE, wants_openmetrics

log = logging.getLogger("pyrmq.metrics")

__all__ = ["MetricsHttpServer"]

_MAX_HEAD = 16 * 1024
_READ_TIMEOUT_S = 10.0


class MetricsHttpServer:
    """Serves `render()` (the exposition text) to every GET of ``/`` or ``/metrics``,
    `render_protobuf()` to those asking for protobuf and `render_openmetrics()` to those asking
    for OpenMetrics, when they are given."""

    def __init__(
        self,
        host: str,
        port: int,
        render: Callable[[], str],
        render_openmetrics: Callable[[], str] | None = None,
        render_protobuf: Callable[[], bytes] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.render = render
        self.render_openmetrics = render_openmetrics
        self.render_protobuf = render_protobuf
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
        except OSError as e:  # the start-up line names what could not bind, in Java's words
            why = "Address already in use" if e.errno == errno.EADDRINUSE else (e.strerror or str(e))
            raise OSError(e.errno, f"cannot serve metrics on {self.host}:{self.port}: {why}") from e
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        log.info("metrics endpoint http://%s:%d/metrics", self.host, self.port)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_S)
            status, ctype, body = self._answer(head)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            status, ctype, body = "400 Bad Request", "text/plain; charset=utf-8", b"bad request\n"
        try:
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode("ascii")
                + body
            )
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _answer(self, head: bytes) -> tuple[str, str, bytes]:
        if len(head) > _MAX_HEAD:
            return "431 Request Header Fields Too Large", "text/plain; charset=utf-8", b"header too large\n"
        parts = head.split(b"\r\n", 1)[0].split(b" ")
        if len(parts) != 3:
            return "400 Bad Request", "text/plain; charset=utf-8", b"bad request\n"
        method, target = parts[0], parts[1].split(b"?", 1)[0]
        if method not in (b"GET", b"HEAD"):
            return "405 Method Not Allowed", "text/plain; charset=utf-8", b"method not allowed\n"
        if target == b"/-/healthy":
            return "200 OK", "text/plain; charset=utf-8", b"Exporter is healthy.\n"
        if target not in (b"/", b"/metrics"):
            return "404 Not Found", "text/plain; charset=utf-8", b"not found\n"
        accept = _header(head, b"accept")
        if self.render_protobuf is not None and protobuf.wants_protobuf(accept):
            ctype, body = protobuf.CONTENT_TYPE, self.render_protobuf()
        elif self.render_openmetrics is not None and wants_openmetrics(accept):
            ctype, body = OPENMETRICS_CONTENT_TYPE, self.render_openmetrics().encode("utf-8")
        else:
            ctype, body = CONTENT_TYPE, self.render().encode("utf-8")
        return "200 OK", ctype, b"" if method == b"HEAD" else body


def _header(head: bytes, name: bytes) -> str:
    """The value of header `name` (lower case) in a request head, "" when absent; repeated
    headers joined with commas as HTTP allows."""
    values = []
    for line in head.split(b"\r\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == name:
            values.append(value.strip().decode("latin-1"))
    return ",".join(values)
