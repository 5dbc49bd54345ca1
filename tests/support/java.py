"""The Java side of the compat harness: build check, classpaths, mqadmin and
one JUnit case per call, all as plain `java -cp` processes (no Maven at test
time; compat/java-tests/build.sh writes <module>/target/classpath.txt).

A missing JDK or Maven is a failure, never a skip.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JAVA_TESTS = ROOT / "compat" / "java-tests"

CLIENT_VERSIONS = ("5.5.0", "4.9.8")
CLIENT_MODULE = {"5.5.0": "client5", "4.9.8": "client4"}
TOOLS_MODULE = {"5.5.0": "tools5", "4.9.8": "tools4"}
SCENARIO_PACKAGE = "io.pyrmq.compat.scenarios"

# Small, fast-starting JVMs: the machine has 2 cores shared with other suites.
JVM_FLAGS = [
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-XX:-UsePerfData",
    "-Djava.net.preferIPv4Stack=true",
]
CLIENT_HEAP = ["-Xms64m", "-Xmx384m"]
#: a dynamic CDS archive starts with this (little-endian) magic; anything else is a cut dump
_CDS_MAGIC = (0xF00BABA8).to_bytes(4, "little")
_CDS_CLAIM_STALE_S = 600
SERVER_HEAP = ["-Xms128m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m"]


class HarnessError(RuntimeError):
    """The harness itself cannot run (no JDK, no Maven, build failed)."""


def java_exe() -> str:
    exe = shutil.which("java")
    if exe is None:
        raise HarnessError(
            "java not found on PATH: the Java compat suite needs a JDK 17 (this is a failure, not a skip)"
        )
    return exe


@functools.cache
def ensure_built() -> None:
    """Run compat/java-tests/build.sh once per test process (a no-op when nothing changed)."""
    java_exe()
    if shutil.which("mvn") is None:
        raise HarnessError("mvn not found on PATH: compat/java-tests needs Maven 3.8+ (this is a failure, not a skip)")
    r = subprocess.run([str(JAVA_TESTS / "build.sh")], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise HarnessError(f"compat/java-tests/build.sh failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")


def classpath(module: str, with_tests: bool = False) -> str:
    """The module's runtime (test-scope) classpath, with its own classes first."""
    ensure_built()
    mod = JAVA_TESTS / module
    cp_file = mod / "target" / "classpath.txt"
    if not cp_file.is_file():
        raise HarnessError(f"{cp_file} missing; run compat/java-tests/build.sh")
    parts = []
    if with_tests:
        parts.append(str(mod / "target" / "test-classes"))
    parts.append(str(mod / "target" / "classes"))
    parts.append(cp_file.read_text().strip())
    return os.pathsep.join(parts)


LOGBACK_TOOLS = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by tests/support/java.py: mqadmin 4.9.x insists on $ROCKETMQ_HOME/conf/logback_tools.xml. -->
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${user.home}/logs/rocketmqlogs/tools.log</file>
    <encoder><pattern>%d %-5level %logger{0} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


def prepare_home(home: Path) -> Path:
    """A ROCKETMQ_HOME / user.home for Java processes: logs land in home/logs/rocketmqlogs."""
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "logs" / "rocketmqlogs").mkdir(parents=True, exist_ok=True)
    f = home / "conf" / "logback_tools.xml"
    if not f.exists():
        f.write_text(LOGBACK_TOOLS)
    return home


def java_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ROCKETMQ_HOME"] = str(home)
    env.pop("NAMESRV_ADDR", None)  # the clients would fall back to it; route only via what we pass
    env.pop("JAVA_TOOL_OPTIONS", None)
    return env


def java_argv(
    module: str,
    main: str,
    args: list[str],
    home: Path,
    props: dict | None = None,
    heap: list[str] | None = None,
    with_tests: bool = False,
) -> list[str]:
    cp = classpath(module, with_tests)
    argv = [java_exe(), *(heap or CLIENT_HEAP), *JVM_FLAGS, *cds_flags(module, cp, main)]
    argv += [f"-Duser.home={home}", f"-Drocketmq.home.dir={home}"]
    argv += [f"-D{k}={v}" for k, v in (props or {}).items()]
    argv += ["-cp", cp, main, *args]
    return argv


def cds_flags(module: str, cp: str, main: str) -> list[str]:
    """Class-data sharing for one (classpath, main class): the first JVM of a kind dumps the
    classes it loaded when it exits (-XX:ArchiveClassesAtExit), every later one maps them
    (-XX:SharedArchiveFile), which takes about 40% off a JVM's start-up CPU; the suite starts
    hundreds of mqadmin, client and server JVMs on 2 cores. The archive is keyed by the JDK, the
    classpath and the main class, so a changed jar never meets a stale one (a mismatch is
    ignored by the JVM anyway). The JVM's own log is off: a CDS warning on stdout would end up
    in an mqadmin output a test compares."""
    if os.environ.get("PYRMQ_JAVA_CDS", "1") == "0":
        return []
    if any(os.path.isdir(p) and os.listdir(p) for p in cp.split(os.pathsep)):
        # a dump refuses classes from a directory ("Cannot have non-empty directory in paths"):
        # the JVM then exits 1 after its work, so JVMs of test-classes scenarios go without
        return []
    key = hashlib.sha256(f"{java_exe()}\0{cp}\0{main}".encode()).hexdigest()[:16]
    folder = JAVA_TESTS / module / "target" / "cds"
    archive = folder / f"{main.rsplit('.', 1)[-1]}-{key}.jsa"
    quiet = ["-Xlog:disable"]
    try:
        with archive.open("rb") as f:
            if f.read(4) == _CDS_MAGIC:
                return [*quiet, f"-XX:SharedArchiveFile={archive}"]
    except OSError:
        pass
    folder.mkdir(parents=True, exist_ok=True)
    claim = archive.with_suffix(".claim")
    try:  # one JVM dumps; a claim whose JVM died before dumping is retried after a while
        if time.time() - claim.stat().st_mtime > _CDS_CLAIM_STALE_S:
            claim.unlink(missing_ok=True)
            archive.unlink(missing_ok=True)
    except OSError:
        pass
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return quiet
    return [*quiet, f"-XX:ArchiveClassesAtExit={archive}"]


def mqadmin(
    version: str,
    *args: str,
    namesrv: str | None = None,
    home: Path,
    timeout: float = 60,
    props: dict | None = None,
) -> subprocess.CompletedProcess:
    """Official mqadmin (rocketmq-tools `version`), text output. `-n namesrv` is appended when given.

    mqadmin's exit code is 0 even when a sub command fails (it prints the
    exception), so callers must also check the output. `props` become -D options (tls.enable, ...).
    """
    module = TOOLS_MODULE[version]
    prepare_home(home)
    argv = java_argv(module, "org.apache.rocketmq.tools.command.MQAdminStartup", list(args), home, props)
    if namesrv:
        argv += ["-n", namesrv]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env=java_env(home), stdin=subprocess.DEVNULL
    )


def mqadmin_batch_argv(version: str, lines: list[str], namesrv: str, workdir: Path, **subst: str) -> list[str]:
    """argv of one MqadminBatch JVM (compat/java-tests scenarios) running `lines` against `namesrv`.

    Each `$NAME` in a line is replaced by subst[NAME]; `$WD` is `workdir`, where the script and its
    per-line outputs (workdir/out/<i>.out, .err, .exit) go. Lines not starting with `@` are mqadmin
    command lines (space separated) and get `-n namesrv`; `@timed` lines too.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    script = []
    for line in lines:
        for name, value in {**subst, "WD": str(workdir)}.items():
            line = line.replace(f"${name}", value)
        tool = not line.startswith("@") or line.startswith("@timed ")
        script.append("\t".join([*line.split(" "), "-n", namesrv]) if tool else line)
    (workdir / "script.txt").write_text("\n".join(script) + "\n")
    home = prepare_home(workdir / "home")
    return java_argv(
        CLIENT_MODULE[version],
        "io.pyrmq.compat.scenarios.MqadminBatch",
        [str(workdir / "script.txt"), str(workdir / "out")],
        home,
        {"namesrv": namesrv, "java.security.manager": "allow"},
        with_tests=True,
    )


class JUnitFailed(AssertionError):
    pass


def run_junit(
    module: str,
    test_class: str,
    method: str | None = None,
    props: dict | None = None,
    timeout: float = 300,
    home: Path | None = None,
) -> subprocess.CompletedProcess:
    """Run ONE JUnit 5 case (class, or class#method) with the console launcher.

    Passing returns the completed process; anything else raises JUnitFailed
    carrying the whole Java output. `props` become -D system properties (the
    scenarios read namesrv, topic, counts from there).
    """
    if module in CLIENT_MODULE:
        module = CLIENT_MODULE[module]
    if "." not in test_class:
        test_class = f"{SCENARIO_PACKAGE}.{test_class}"
    if home is None:
        raise ValueError("run_junit needs a home directory (logs go to home/logs)")
    prepare_home(home)
    select = f"--select-method={test_class}#{method}" if method else f"--select-class={test_class}"
    args = [
        "execute",
        select,
        "--disable-banner",
        "--disable-ansi-colors",
        "--details=tree",
        "--details-theme=ascii",
        "--fail-if-no-tests",
    ]
    argv = java_argv(module, "org.junit.platform.console.ConsoleLauncher", args, home, props, with_tests=True)
    what = f"{module} {test_class}{'#' + method if method else ''}"
    try:
        r = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env=java_env(home), stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        raise JUnitFailed(f"JUnit {what} timed out after {timeout}s\n{out}") from None
    if r.returncode != 0:
        raise JUnitFailed(
            f"JUnit {what} failed (exit {r.returncode})\n--- stdout ---\n{r.stdout}"
            f"\n--- stderr ---\n{r.stderr[-20000:]}"
        )
    return r
