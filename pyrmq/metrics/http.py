"""The scrape endpoint: a tiny asyncio HTTP/1.1 server on metricsPromExporterHost/Port.

Java's PrometheusHttpServer (prometheus-metrics-exporter-httpserver 1.3.3) answers ``/metrics``
with the text format, or protobuf, or OpenMetrics when the Accept header asks for them (protobuf
first: ExpositionFormats#findWriter), gzipped when Accept-Encoding names gzip, a format as plain
text with ``?debug=text|openmetrics|prometheus-protobuf``; ``/-/healthy`` with a short text; any
other path with an HTML landing page (its DefaultHandler; pyrmq's page is its own); so does this. One request
per connection (``Connection: close``): a scraper reconnects every interval anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gzip
import logging
from collections.abc import Callable
from urllib.parse import parse_qs

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
            status, headers, body = self._respond(head)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            status, headers, body = "400 Bad Request", [("Content-Type", _PLAIN)], b"bad request\n"
        lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers), f"Content-Length: {len(body)}"]
        try:
            writer.write(("\r\n".join([*lines, "Connection: close", "", ""])).encode("ascii") + body)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _respond(self, head: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
        """(status, headers, body) of the answer to a request head: `_answer`'s, gzipped when the
        scrape handler would gzip it (PrometheusScrapeHandler#shouldUseCompression)."""
        status, ctype, body = self._answer(head)
        headers = [("Content-Type", ctype)]
        if status == "200 OK" and ctype in _SCRAPE_TYPES and _wants_gzip(_header(head, b"accept-encoding")):
            headers.append(("Content-Encoding", "gzip"))
            body = gzip.compress(body) if body else body
        return status, headers, body

    def _answer(self, head: bytes) -> tuple[str, str, bytes]:
        """(status, content type, body). As com.sun.net.httpserver routes Java's three contexts:
        the longest of ``/-/healthy``, ``/metrics`` and ``/`` that starts the path wins (so
        ``/metrics/x`` scrapes and ``/x`` gets the landing page), whatever the method; HEAD gets
        no body."""
        if len(head) > _MAX_HEAD:
            return "431 Request Header Fields Too Large", _PLAIN, b"header too large\n"
        parts = head.split(b"\r\n", 1)[0].split(b" ")
        if len(parts) != 3 or not parts[0].isalpha() or not parts[1].startswith(b"/"):
            return "400 Bad Request", _PLAIN, b"bad request\n"
        method, (path, _, query) = parts[0], parts[1].partition(b"?")
        if path.startswith(b"/-/healthy"):
            status, ctype, body = "200 OK", _PLAIN, b"Exporter is healthy.\n"
        elif path.startswith(b"/metrics"):
            status, ctype, body = self._scrape(head, parse_qs(query.decode("latin-1")).get("debug"))
        else:
            status, ctype, body = "200 OK", "text/html; charset=utf-8", _LANDING_PAGE
        return status, ctype, b"" if method == b"HEAD" else body

    def _scrape(self, head: bytes, debug: list[str] | None) -> tuple[str, str, bytes]:
        """PrometheusScrapeHandler: the format the Accept header asks for (protobuf, then
        OpenMetrics, else text); with ``?debug=`` a format shown as plain text instead."""
        if debug is not None:
            return self._debug(debug[0])
        accept = _header(head, b"accept")
        if self.render_protobuf is not None and protobuf.wants_protobuf(accept):
            return "200 OK", protobuf.CONTENT_TYPE, self.render_protobuf()
        if self.render_openmetrics is not None and wants_openmetrics(accept):
            return "200 OK", OPENMETRICS_CONTENT_TYPE, self.render_openmetrics().encode("utf-8")
        return "200 OK", CONTENT_TYPE, self.render().encode("utf-8")

    def _debug(self, which: str) -> tuple[str, str, bytes]:
        if which == "text":
            return "200 OK", _PLAIN, self.render().encode("utf-8")
        if which == "openmetrics" and self.render_openmetrics is not None:
            return "200 OK", _PLAIN, self.render_openmetrics().encode("utf-8")
        if which == "prometheus-protobuf" and self.render_protobuf is not None:
            return "200 OK", _PLAIN, protobuf.debug_text(self.render_protobuf()).encode("utf-8")
        return "500 Internal Server Error", _PLAIN, _UNSUPPORTED_DEBUG.format(which).encode("utf-8")


_PLAIN = "text/plain; charset=utf-8"
#: the answers the scrape handler may gzip (not the debug, health or landing pages)
_SCRAPE_TYPES = (CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE, protobuf.CONTENT_TYPE)
_UNSUPPORTED_DEBUG = (
    "debug={}: Unsupported query parameter. Valid values are 'openmetrics', 'text', and 'prometheus-protobuf'."
)
_LANDING_PAGE = b"""<html>
<head><title>pyrmq broker metrics</title></head>
<body>
<h1>pyrmq broker metrics</h1>
<ul>
<li><a href="metrics">metrics</a>: the scrape endpoint; the format follows the Accept header</li>
<li><a href="metrics?debug=text">text format 0.0.4</a>, <a href="metrics?debug=openmetrics">OpenMetrics</a>,
<a href="metrics?debug=prometheus-protobuf">protobuf</a>: each as plain text</li>
<li><a href="-/healthy">-/healthy</a>: whether the endpoint answers</li>
</ul>
</body>
</html>
"""


def _wants_gzip(accept_encoding: str) -> bool:
    """A coding exactly "gzip" in the list (Java trims each and compares, so "gzip;q=1" is not)."""
    return any(e.strip().lower() == "gzip" for e in accept_encoding.split(","))


def _header(head: bytes, name: bytes) -> str:
    """The value of header `name` (lower case) in a request head, "" when absent; repeated
    headers joined with commas as HTTP allows."""
    values = []
    for line in head.split(b"\r\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == name:
            values.append(value.strip().decode("latin-1"))
    return ",".join(values)
