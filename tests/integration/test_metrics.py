"""`pyrmq dev` with its Prometheus endpoint, scraped while pyrmq's own client sends and pulls.

The series carry Java's names, types and labels (see docs/operations.md) and move with the load:
counters by what was sent and pulled, the rpc histogram by the requests, a long-polling pull with
is_long_polling=true once a message wakes it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from support.ports import free_port, free_port_block
from support.procs import ManagedProcess
from support.prom import parse, scrape
from support.pyrmq_proc import venv_python
from support.requests import pull, send_v2

from pyrmq.protocol.codes import ResponseCode
from pyrmq.remoting.client import RemotingClient

ROOT = Path(__file__).resolve().parents[2]
BASE = {"cluster": "DefaultCluster", "node_id": "broker-m", "node_type": "broker", "otel_scope_name": "broker-meter"}


def test_dev_serves_java_named_metrics_that_move_with_the_load(tmp_path):
    ns_port, m_port = free_port(), free_port()
    b_port = free_port_block((-2, 0))
    dev = ManagedProcess(
        "dev-metrics",
        [
            venv_python(),
            "-m",
            "pyrmq",
            "dev",
            "--namesrv-port",
            str(ns_port),
            "--broker-port",
            str(b_port),
            "--metrics-port",
            str(m_port),
            "--broker-name",
            "broker-m",
            "--store",
            str(tmp_path / "s"),
            "--grpc-port",
            "-1",
        ],
        tmp_path / "dev.out",
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp_path)),
    )
    url = f"http://127.0.0.1:{m_port}/metrics"
    try:
        dev.wait_line(f"metrics {url}")
        ctype, text = scrape(url)
        assert ctype == "text/plain; version=0.0.4; charset=utf-8"
        before = parse(text)
        assert before.types["rocketmq_topic_number"] == "gauge"
        assert before.total("rocketmq_messages_in_total") == 0
        broker = f"127.0.0.1:{b_port}"

        async def load() -> int:
            async with RemotingClient() as c:
                wrote = 0
                for i in range(5):
                    r = await c.invoke(broker, send_v2("MetT", "broker-m", b"m" * (100 + i)), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                r = await c.invoke(broker, pull("MetT", "MetG", 0), 5)
                assert r.code == ResponseCode.SUCCESS
                wrote = len(r.body)
                held = asyncio.ensure_future(c.invoke(broker, pull("MetT", "MetG", 5, suspend_ms=5000), 10))
                await asyncio.sleep(0.5)
                r = await c.invoke(broker, send_v2("MetT", "broker-m", b"late"), 5)
                assert r.code == ResponseCode.SUCCESS
                assert (await held).code == ResponseCode.SUCCESS
                return wrote

        wrote = asyncio.run(load())
        s = parse(scrape(url)[1])
        topic = {**BASE, "topic": "MetT", "is_system": "false"}
        assert s.series("rocketmq_messages_in_total") == {
            tuple(sorted({**topic, "message_type": "normal"}.items())): 6.0
        }
        assert s.total("rocketmq_messages_out_total", topic="MetT", consumer_group="MetG") == 6
        assert s.total("rocketmq_throughput_out_total", consumer_group="MetG") > wrote > 5 * 100
        assert s.total("rocketmq_message_size_count", topic="MetT") == 6
        sends = s.series("rocketmq_rpc_latency_milliseconds_count", request_code="send_message_v2")
        assert sum(sends.values()) == 6 and all(dict(k)["result"] == "success" for k in sends)
        held = s.total("rocketmq_rpc_latency_milliseconds_count", request_code="pull_message", is_long_polling="true")
        assert held == 1
        # the held pull waited about 0.5 s: it is counted above the 100 ms bucket
        assert (
            s.total(
                "rocketmq_rpc_latency_milliseconds_bucket",
                request_code="pull_message",
                is_long_polling="true",
                le="100.0",
            )
            == 0
        )
        assert s.total("rocketmq_topic_number") > before.total("rocketmq_topic_number")
        assert s.total("rocketmq_storage_size_bytes") > 0
        assert {"rocketmq_storage_flush_behind_bytes", "rocketmq_processor_watermark"} <= s.names()
    finally:
        assert dev.stop(10) == 0


def test_endpoint_answers_bad_requests_with_http_errors_and_keeps_serving():
    """Paths route as Java's HTTP server routes them (/metrics..., /-/healthy..., anything else the
    landing page), any method; garbage, a half-sent or an oversized head get 400."""
    from pyrmq.metrics.http import MetricsHttpServer

    async def scenario() -> list[bytes]:
        server = MetricsHttpServer("127.0.0.1", 0, lambda: "# TYPE target_info gauge\ntarget_info 1\n")
        await server.start()
        answers = []
        try:
            for raw in (
                b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                b"HEAD / HTTP/1.1\r\n\r\n",
                b"GET /-/healthy HTTP/1.1\r\n\r\n",
                b"GET /nope HTTP/1.1\r\n\r\n",
                b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
                b"\x00\x01garbage\r\n\r\n",
                b"GET /metrics HTTP/1.1\r\n",  # the client gives up before the blank line
                b"GET /metrics HTTP/1.1\r\n" + b"X: " + b"a" * 70000 + b"\r\n\r\n",
            ):
                reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                writer.write(raw)
                await writer.drain()
                if raw.endswith(b"HTTP/1.1\r\n"):
                    writer.write_eof()
                answers.append(await asyncio.wait_for(reader.read(), 15))
                writer.close()
        finally:
            await server.close()
        return answers

    answers = asyncio.run(scenario())
    status = [a.split(b"\r\n", 1)[0] for a in answers]
    assert status == [
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 400 Bad Request",
        b"HTTP/1.1 400 Bad Request",
        b"HTTP/1.1 400 Bad Request",
    ]
    assert answers[0].endswith(b"target_info 1\n") and b"version=0.0.4" in answers[0]
    assert answers[1].endswith(b"\r\n\r\n")  # HEAD: headers only
    assert b"Content-Type: text/html; charset=utf-8" in answers[3]  # the landing page
    assert answers[4].endswith(b"target_info 1\n")  # POST scrapes too


def test_a_taken_metrics_port_fails_the_broker_start_in_one_line(tmp_path):
    """Java's PrometheusHttpServer cannot bind: the broker does not start; pyrmq's neither, clearly."""
    import socket

    from support.servers import write_properties

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        conf = write_properties(
            tmp_path / "broker.conf",
            {
                "brokerName": "b-busy",
                "listenPort": free_port_block((-2, 0)),
                "namesrvAddr": "127.0.0.1:1",
                "storePathRootDir": tmp_path / "store",
                "metricsExporterType": "PROM",
                "metricsPromExporterHost": "127.0.0.1",
                "metricsPromExporterPort": port,
            },
        )
        proc = ManagedProcess(
            "broker-busy",
            [venv_python(), "-m", "pyrmq", "broker", "-c", str(conf)],
            tmp_path / "broker.out",
            cwd=ROOT,
            env=dict(os.environ, HOME=str(tmp_path)),
        )
        try:
            rc = proc.proc.wait(30)
        finally:
            proc.stop(5)
    out = (tmp_path / "broker.out").read_text()
    assert rc == 1, out
    assert str(port) in out and "Traceback" not in out, out
