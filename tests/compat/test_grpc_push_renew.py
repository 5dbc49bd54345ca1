"""An official 5.x SDK PushConsumer (rocketmq-client-java, compat/java-tests GrpcLongListener) whose
listener takes longer than the invisible time the endpoint gives a push consumer's messages.

The SDK asks with auto_renew and no invisible duration: the endpoint hands the message out for
the Java proxy's defaultInvisibleTimeMills (60 s) and renews it while the client holds it
(pyrmq/grpc/renew.py, Java's DefaultReceiptHandleManager). The listener takes 75 s; the message
must not come back meanwhile, is acked once, and does not come back in the 30 s after the ack.
Soak (opt-in PYRMQ_SOAK=1, about 2.5 minutes a side): pyrmq, and the Java proxy 5.5.0 in local mode
as the reference (PYRMQ_COMPAT_REFERENCE=1 as well).
"""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from compat.test_grpc_java_client import create_resources, grpc_servers, of
from support import java

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.soak]

LISTEN_MS = 75_000  # past the 60 s invisible time
AFTER_MS = 30_000  # a window for a redelivery after the ack


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture(scope="module")
def server(broker_kind, request, java_harness, tmp_path_factory):
    yield from grpc_servers(broker_kind, request, tmp_path_factory, "grpc-renew", {})


def test_listener_longer_than_the_invisible_time_is_not_redelivered(server, tmp_path):
    ns, broker = server
    prefix = f"GR{uuid.uuid4().hex[:6]}"
    # the Java SDK test's topics and groups; this one uses its NORMAL "push" pair
    create_resources(ns, broker, prefix, tmp_path / "admin")
    topic, group = f"{prefix}-push", f"{prefix}-push-g"
    home = java.prepare_home(tmp_path / "home")
    argv = java.java_argv(
        "grpcclient",
        "io.pyrmq.compat.grpc.GrpcLongListener",
        [broker.grpc_addr, topic, group],
        home,
        {"listenMs": LISTEN_MS, "afterMs": AFTER_MS},
    )
    r = subprocess.run(
        argv, capture_output=True, text=True, timeout=400, env=java.java_env(home), stdin=subprocess.DEVNULL
    )
    (tmp_path / "long.out").write_text(f"exit {r.returncode}\n--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}")
    evs = [json.loads(line[3:]) for line in r.stdout.splitlines() if line.startswith("@@ ")]
    (done,) = of(evs, "done")
    assert done["ok"], (done, r.stderr[-3000:])
    (sent,) = of(evs, "sent")
    received = of(evs, "received")
    # once, on the first attempt: no redelivery while the listener ran past the invisible time,
    # none after the ack
    assert [(e["id"], e["attempt"]) for e in received] == [(sent["id"], 1)], evs
    (consumed,) = of(evs, "consumed")
    assert consumed["now"] - received[0]["now"] >= LISTEN_MS, evs
    assert done["deliveries"] == 1, evs
