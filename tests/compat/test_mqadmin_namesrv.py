"""Official mqadmin (rocketmq-tools 5.5.0 and 4.9.8) against pyrmq's NameServer,
compared with the same command against the official Java NameServer.

Each name server has its own Java broker 5.5.0 with the same cluster and broker
name, so both runs should print the same thing once addresses, ports and
per-run numbers are normalised. mqadmin exits 0 even when a sub command fails,
so every test also checks the output for the expected content.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from support import probe
from support.java import CLIENT_VERSIONS

pytestmark = [pytest.mark.compat, pytest.mark.java]

CLUSTER = "CompatCluster"
BROKER = "broker-mqadmin"
TOPIC = "MqadminTopic"
KV_NS, KV_KEY, KV_VALUE = "COMPAT_NS", "compat.key", "compat-value-1"
GET_KV_CONFIG, QUERY_NOT_FOUND = 101, 22
ADDR = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d{2,5}\b")


class Side:
    """One name server with its broker, and mqadmin pointed at it."""

    def __init__(self, label, ns, broker, mqadmin):
        self.label, self.ns, self.broker, self._mqadmin = label, ns, broker, mqadmin

    def run(self, version, *args):
        return self._mqadmin(version, *args, namesrv=self.ns.addr, timeout=90)

    def norm(self, text: str) -> str:
        text = text.replace(self.broker.addr, "<broker>").replace(self.ns.addr, "<namesrv>")
        return ADDR.sub("<addr>", text)


@pytest.fixture(scope="module")
def sides(pyrmq_namesrv, java_namesrv, java_broker, mqadmin):
    pair = []
    for label, ns in (("pyrmq", pyrmq_namesrv), ("java", java_namesrv)):
        b = java_broker(ns.addr, name=BROKER, cluster=CLUSTER)
        pair.append(Side(label, ns, b, mqadmin))
    # The topic every test can rely on, created through mqadmin on each broker.
    for s in pair:
        out = s.run("5.5.0", "updateTopic", "-b", s.broker.addr, "-t", TOPIC, "-r", "4", "-w", "4")
        assert "success" in out.stdout.lower(), out.stdout + out.stderr
        _wait(lambda s=s: probe.topic_route(s.ns.addr, TOPIC).code == probe.SUCCESS, f"route of {TOPIC} at {s.label}")
    return pair


def _wait(cond, what, timeout=30.0):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def both(sides, version, *args):
    """Run the command on both sides at once (mqadmin JVMs mostly wait on I/O)."""
    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(lambda s: s.run(version, *args), sides))
    for s, r in zip(sides, results, strict=False):
        assert r.returncode == 0, f"[{s.label}] mqadmin {version} {args} exit {r.returncode}\n{r.stdout}\n{r.stderr}"
        assert "Exception" not in r.stdout or "getTransferedTps" in r.stderr, (
            f"[{s.label}] mqadmin {version} {args} failed:\n{r.stdout}\n{r.stderr}"
        )
    return results


def show(sides, results) -> str:
    return "\n".join(
        f"--- {s.label} ({s.ns.addr}) ---\n{r.stdout}\n{r.stderr[-3000:]}" for s, r in zip(sides, results, strict=False)
    )


def _cluster_rows(side, text):
    rows = []
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[0] == CLUSTER:
            rows.append((cols[0], cols[1], cols[2], side.norm(cols[3]), cols[4]))
    return rows


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_cluster_list(sides, version):
    results = both(sides, version, "clusterList")
    rows = [_cluster_rows(s, r.stdout) for s, r in zip(sides, results, strict=False)]
    # 4.9.8 mqadmin prints an NPE on stderr for 5.x brokers (getTransferedTps missing from
    # the broker's runtime info); it comes from the broker, not the name server, and still prints the row.
    assert rows[1] == [(CLUSTER, BROKER, "0", "<broker>", "V5_5_0")], show(sides, results)
    assert rows[0] == rows[1], show(sides, results)


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_topic_list(sides, version):
    results = both(sides, version, "topicList")
    topics = [{line.strip() for line in r.stdout.splitlines() if line.strip()} for r in results]
    assert {TOPIC, BROKER, CLUSTER} <= topics[1], show(sides, results)
    assert topics[0] == topics[1], show(sides, results)


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_topic_route(sides, version):
    results = both(sides, version, "topicRoute", "-t", TOPIC)
    texts = [s.norm(r.stdout) for s, r in zip(sides, results, strict=False)]
    for t in texts:
        assert BROKER in t and "<broker>" in t, show(sides, results)
    assert texts[0] == texts[1], show(sides, results)


def _kv(side):
    return probe.request(side.ns.addr, GET_KV_CONFIG, {"namespace": KV_NS, "key": KV_KEY})


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_kv_config(sides, version):
    """updateKvConfig, read back with GET_KV_CONFIG (no mqadmin getKvConfig in 4.9.8 or 5.5.0), deleteKvConfig."""
    value = f"{KV_VALUE}-{version}"
    results = both(sides, version, "updateKvConfig", "-s", KV_NS, "-k", KV_KEY, "-v", value)
    for r in results:
        assert "success" in r.stdout.lower(), show(sides, results)
    assert results[0].stdout == results[1].stdout, show(sides, results)
    got = [_kv(s) for s in sides]
    for s, g in zip(sides, got, strict=False):
        assert (g.code, g.ext_fields.get("value")) == (probe.SUCCESS, value), f"[{s.label}] {g}"

    results = both(sides, version, "deleteKvConfig", "-s", KV_NS, "-k", KV_KEY)
    for r in results:
        assert "success" in r.stdout.lower(), show(sides, results)
    assert results[0].stdout == results[1].stdout, show(sides, results)
    got = [_kv(s) for s in sides]
    assert got[1].code == QUERY_NOT_FOUND, got[1]
    assert (got[0].code, got[0].remark) == (got[1].code, got[1].remark), got


def _perm(side):
    """The `perm` of TOPIC's queue data in the name server's route."""
    r = probe.topic_route(side.ns.addr, TOPIC)
    m = re.search(r'"perm"\s*:\s*(\d+)', r.text)
    assert r.code == probe.SUCCESS and m, f"[{side.label}] {r}"
    return int(m.group(1))


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_write_perm(sides, version):
    results = both(sides, version, "wipeWritePerm", "-b", BROKER)
    texts = [s.norm(r.stdout) for s, r in zip(sides, results, strict=False)]
    assert "wipe write perm of broker[" + BROKER in texts[1], show(sides, results)
    assert texts[0] == texts[1], show(sides, results)
    assert [_perm(s) for s in sides] == [4, 4]  # PermName.PERM_READ only

    results = both(sides, version, "addWritePerm", "-b", BROKER)
    texts = [s.norm(r.stdout) for s, r in zip(sides, results, strict=False)]
    assert "add write perm of broker[" + BROKER in texts[1], show(sides, results)
    assert texts[0] == texts[1], show(sides, results)
    assert [_perm(s) for s in sides] == [6, 6]  # read | write


def _config(side, text):
    conf = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("="):
            k, _, v = line.partition("=")
            v = v.strip()
            k = k.strip()
            if k == "listenPort" and v == str(side.ns.port):
                v = "<port>"
            conf[k] = "<path>" if v.startswith("/") else side.norm(v)
    return conf


# Keys only one side has for a reason of the harness: pyrmq's own expiry key.
PYRMQ_ONLY_KEYS = {"brokerChannelExpiredTime"}


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_namesrv_config(sides, version):
    value = "46" if version == "5.5.0" else "47"
    results = both(sides, version, "updateNamesrvConfig", "-k", "waitSecondsForService", "-v", value)
    for r in results:
        assert "success" in r.stdout.lower(), show(sides, results)
    assert next(s.norm(r.stdout) for s, r in zip(sides, results, strict=False)) == sides[1].norm(results[1].stdout), (
        show(sides, results)
    )

    results = both(sides, version, "getNamesrvConfig")
    confs = [_config(s, r.stdout) for s, r in zip(sides, results, strict=False)]
    assert confs[1].get("waitSecondsForService") == value, show(sides, results)
    assert confs[0].get("waitSecondsForService") == value, show(sides, results)
    pyrmq = {k: v for k, v in confs[0].items() if k not in PYRMQ_ONLY_KEYS}
    assert sorted(set(pyrmq) ^ set(confs[1])) == [], show(sides, results)
    assert pyrmq == confs[1], show(sides, results)
