"""The architecture's arrows, checked: which pyrmq packages may import what.

Arrows only go down: admin/, namesrv/, broker/ and spark/ sit above store/ and
remoting/, which sit on protocol/ and common/. Relative imports are resolved
before the check, so ``from ..broker import x`` counts as ``pyrmq.broker``.
A new arrow is a reviewed edit of RULES.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "pyrmq"

_ABOVE_STORE = (
    "pyrmq.broker",
    "pyrmq.controller",
    "pyrmq.namesrv",
    "pyrmq.admin",
    "pyrmq.spark",
    "pyrmq.testing",
    "pyrmq.cli",
    "pyrmq.startup",
)

#: package (relative to pyrmq/) -> import prefixes it must not use
RULES: dict[str, tuple[str, ...]] = {
    "common": ("asyncio", "pyrmq.protocol", "pyrmq.remoting", "pyrmq.store", *_ABOVE_STORE),
    "protocol": ("asyncio", "pyrmq.remoting", "pyrmq.store", *_ABOVE_STORE),
    "remoting": ("pyrmq.store", *_ABOVE_STORE),
    # the DLedger commit log runs on a member (dledger_commitlog.Member), not on its sockets
    "store": ("pyrmq.remoting", "pyrmq.dledger.server", *_ABOVE_STORE),
    "ha": ("pyrmq.remoting", *_ABOVE_STORE),
    # sans-IO Raft log under the DLedger commit log (store) and the controller: nothing above common/protocol
    "dledger": ("asyncio", "pyrmq.remoting", "pyrmq.store", "pyrmq.ha", *_ABOVE_STORE),
    # its asyncio driver (the DLedger port and the calls to the peers) is the one module above remoting
    "dledger/server": ("pyrmq.store", "pyrmq.ha", *_ABOVE_STORE),
    "admin": ("pyrmq.broker", "pyrmq.namesrv", "pyrmq.spark", "pyrmq.testing", "pyrmq.startup"),
    "spark": ("asyncio", "pyrmq.remoting", "pyrmq.broker", "pyrmq.namesrv", "pyrmq.admin", "pyrmq.testing"),
    "namesrv": ("pyrmq.broker", "pyrmq.admin", "pyrmq.spark", "pyrmq.testing"),
    "controller": (
        "pyrmq.store",
        "pyrmq.ha",
        "pyrmq.broker",
        "pyrmq.namesrv",
        "pyrmq.admin",
        "pyrmq.spark",
        "pyrmq.testing",
        "pyrmq.cli",
    ),
    "broker": ("pyrmq.admin", "pyrmq.spark", "pyrmq.testing"),
    # sans-IO users, ACLs and signatures: the broker and the tools build on it
    "auth": ("asyncio", "pyrmq.remoting", "pyrmq.store", "pyrmq.ha", *_ABOVE_STORE),
    # metrics instruments, the Prometheus text writer and its HTTP endpoint: common only
    # the gRPC endpoint (the Java proxy's local mode): beside remoting, turning each call into a broker
    # request; it uses the broker's client tables, the broker starts it
    "grpc": ("pyrmq.namesrv", "pyrmq.controller", "pyrmq.admin", "pyrmq.spark", "pyrmq.testing", "pyrmq.cli"),
    "metrics": ("pyrmq.protocol", "pyrmq.remoting", "pyrmq.store", "pyrmq.ha", *_ABOVE_STORE),
    # picks the compiled codecs or their Python references for common, protocol and store: below
    # them all (its compiled module, not scanned here, reaches protocol lazily at its first call)
    "_speedups": (
        "asyncio",
        "pyrmq.common",
        "pyrmq.protocol",
        "pyrmq.remoting",
        "pyrmq.store",
        "pyrmq.ha",
        "pyrmq.dledger",
        "pyrmq.auth",
        "pyrmq.grpc",
        "pyrmq.metrics",
        *_ABOVE_STORE,
    ),
}


def _module_of(path: Path, root: Path) -> tuple[str, bool]:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def imports_of(path: Path, root: Path = PKG.parent) -> set[str]:
    """Absolute names of every module ``path`` (under ``root``) imports, relative imports resolved."""
    module, is_package = _module_of(path, root)
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            names.add(target)
            names.update(f"{target}.{alias.name}" for alias in node.names)
    return names


def _cases():
    for path in sorted(PKG.rglob("*.py")):
        top = path.relative_to(PKG).parts[0]
        banned = RULES.get(path.relative_to(PKG).with_suffix("").as_posix(), RULES.get(top))
        if banned is not None:
            yield pytest.param(path, banned, id=path.relative_to(PKG).as_posix())


@pytest.mark.parametrize(("path", "banned"), list(_cases()))
def test_module_respects_layering(path: Path, banned: tuple[str, ...]) -> None:
    bad = sorted(name for name in imports_of(path) for b in banned if name == b or name.startswith(b + "."))
    assert not bad, f"{path.relative_to(PKG)} imports {bad}, which the architecture forbids"


def test_relative_imports_are_resolved(tmp_path: Path) -> None:
    """The checker itself: relative imports of a forbidden package are caught."""
    store = tmp_path / "pyrmq" / "store" / "sub"
    store.mkdir(parents=True)
    (store / "__init__.py").write_text("from ...broker import controller\n")
    (store / "mod.py").write_text("from ..x import y\nfrom ... import namesrv\n")
    assert "pyrmq.broker.controller" in imports_of(store / "__init__.py", tmp_path)
    assert {"pyrmq.store.x.y", "pyrmq.namesrv"} <= imports_of(store / "mod.py", tmp_path)


def test_every_package_has_rules() -> None:
    packages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages - {"testing"} <= set(RULES), f"packages without layering rules: {packages - set(RULES)}"


def module_graph(root: Path = PKG.parent) -> dict[str, set[str]]:
    """pyrmq module -> the pyrmq modules it imports (type-checking imports included: they are
    design arrows too). ``from pkg import sub`` points at the submodule, not at ``pkg``."""
    modules = {_module_of(p, root)[0]: p for p in (root / "pyrmq").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        names = imports_of(path, root)
        targets = {n for n in names if n in modules and n != name}
        # a package is only an arrow when nothing more specific from it was imported
        targets -= {t for t in targets if any(o.startswith(t + ".") for o in targets)}
        graph[name] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_cycles() -> None:
    """No two pyrmq modules import each other, directly or around a circle: the controllers
    build processors and services from managers, and nothing they build imports them back."""
    assert import_cycles(module_graph()) == []


def test_cycle_finder_sees_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pyrmq" / "broker"
    pkg.mkdir(parents=True)
    (tmp_path / "pyrmq" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "controller.py").write_text("from pyrmq.broker.processor import P\n")
    (pkg / "processor.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import controller\n"
    )
    (pkg / "other.py").write_text("from pyrmq.broker import processor\n")
    assert import_cycles(module_graph(tmp_path)) == [["pyrmq.broker.controller", "pyrmq.broker.processor"]]
