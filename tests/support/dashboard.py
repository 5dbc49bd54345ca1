"""The official RocketMQ Dashboard 2.1.0 and a headless chromium driving its pages.

compat/dashboard/build.sh resolves the dashboard's jars and puppeteer-core; drive.mjs runs a list
of steps (go to a page, click, type) and records what each step showed: the visible text of the
page or of the open dialog and the JSON answers of the dashboard's API calls.

The 2.1.0 front end calls http://localhost:8082 (fixed in its JavaScript), so the dashboard must
listen on 8082; one dashboard serves both sides of a comparison by switching its name server
(the OPS page's own call, /ops/updateNameSvrAddr.do).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from support.java import java_env, java_exe, prepare_home
from support.procs import ManagedProcess

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "compat" / "dashboard"
PORT = 8082
BASE = f"http://localhost:{PORT}"
CLUSTER_CACHE_MS = 1000  # rocketmq.cluster.cache.expire: refreshed every 0.5 s


class DashboardError(RuntimeError):
    pass


def ensure_built() -> None:
    """build.sh (jars, puppeteer-core, chromium check); a missing tool fails here, loudly."""
    r = subprocess.run([str(HARNESS / "build.sh")], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise DashboardError(f"compat/dashboard/build.sh failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def api(path: str, method: str = "GET", timeout: float = 30) -> object:
    """One call of the dashboard's JSON API; returns its `data` (status 0) or raises."""
    req = urllib.request.Request(BASE + path, method=method)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        answer = json.loads(r.read())
    if answer.get("status") != 0:
        raise DashboardError(f"{path}: {answer}")
    return answer.get("data")


class Dashboard:
    """org.apache.rocketmq.dashboard.App 2.1.0 on port 8082 with its data under `workdir`."""

    def __init__(
        self,
        workdir: Path,
        namesrv_addr: str,
        start_timeout: float = 180,
        access_key: str | None = None,
        secret_key: str | None = None,
    ):
        """With `access_key`/`secret_key` (rocketmq.config.accessKey/secretKey, fixed for the
        dashboard's lifetime) its admin client and producers sign every request (AclClientRPCHook)."""
        ensure_built()
        if not _port_free(PORT):
            raise DashboardError(f"port {PORT} is taken: the dashboard's front end only calls localhost:{PORT}")
        dash_dir = Path((HARNESS / "target" / "dashboard-dir.txt").read_text().strip())
        cp = (HARNESS / "target" / "classpath.txt").read_text().strip()
        home = prepare_home(workdir / "home")
        argv = [
            java_exe(),
            "-Xmx384m",
            "-XX:+UseSerialGC",
            f"-Duser.home={home}",
            "-cp",
            f"{dash_dir / 'rocketmq-dashboard-2.1.0-classes.jar'}:{cp}",
            "org.apache.rocketmq.dashboard.App",
            f"--server.port={PORT}",
            f"--rocketmq.config.namesrvAddrs={namesrv_addr}",
            f"--rocketmq.config.dataPath={workdir / 'data'}",
            # its ClusterInfoService caches the cluster (brokers' addresses) and refreshes it every
            # half expiry (60 s by default): a switch of name server must not keep the last one's
            f"--rocketmq.cluster.cache.expire={CLUSTER_CACHE_MS}",
        ]
        if access_key is not None and secret_key is not None:
            argv += [f"--rocketmq.config.accessKey={access_key}", f"--rocketmq.config.secretKey={secret_key}"]
        self.managed = ManagedProcess("dashboard", argv, workdir / "dashboard.out", env=java_env(home), cwd=workdir)
        self.managed.wait_port(PORT, start_timeout)
        self.use_namesrv(namesrv_addr)

    def use_namesrv(self, addr: str) -> None:
        api(f"/ops/updateNameSvrAddr.do?nameSvrAddrList={addr}", method="POST")
        current = api("/ops/homePage.query")
        if not isinstance(current, dict) or current.get("currentNamesrv") != addr:
            raise DashboardError(f"the dashboard did not switch to {addr}: {current}")
        # three refreshes of the cached cluster (the ACL, topic-type and group lists read it)
        time.sleep(3 * CLUSTER_CACHE_MS / 2 / 1000)

    def drive(self, steps: list[dict], workdir: Path, timeout: float = 900) -> list[dict]:
        """Run drive.mjs over `steps`; screenshots go to workdir/shots (kept as test artifacts)."""
        workdir.mkdir(parents=True, exist_ok=True)
        steps_file, out_file = workdir / "steps.json", workdir / "out.json"
        steps_file.write_text(json.dumps(steps, indent=1))
        r = subprocess.run(
            ["node", str(HARNESS / "drive.mjs"), str(steps_file), str(out_file), str(workdir / "shots"), BASE],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=HARNESS,
        )
        if r.returncode != 0:
            raise DashboardError(f"drive.mjs failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return json.loads(out_file.read_text())

    def tail(self, lines: int = 60) -> str:
        return self.managed.tail(lines)

    def stop(self) -> None:
        self.managed.stop()
