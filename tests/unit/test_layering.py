"""The architecture's arrows, checked: which pyrmq packages may import what.

store never imports broker (the Spark reader and tools load it alone); spark
never imports broker or asyncio; the sans-IO codec modules never import
asyncio. A new arrow is a reviewed edit of FORBIDDEN.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "pyrmq"

#: module-path prefix (relative to pyrmq/) -> imports it must not make
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "store/": ("pyrmq.broker", "pyrmq.namesrv", "asyncio"),
    "spark/": ("pyrmq.broker", "pyrmq.namesrv", "asyncio"),
    "remoting/codes.py": ("asyncio",),
    "remoting/command.py": ("asyncio",),
    "remoting/framing.py": ("asyncio",),
    "remoting/headers.py": ("asyncio",),
    "remoting/bodies.py": ("asyncio",),
    "remoting/errors.py": ("asyncio",),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _cases():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        for prefix, banned in FORBIDDEN.items():
            if rel.startswith(prefix):
                yield pytest.param(path, banned, id=rel)


@pytest.mark.parametrize("path,banned", list(_cases()))
def test_module_respects_layering(path: Path, banned: tuple[str, ...]) -> None:
    bad = sorted(
        name for name in _imports(path) for b in banned if name == b or name.startswith(b + ".")
    )
    assert not bad, f"{path.relative_to(PKG)} imports {bad}, which the architecture forbids"


def test_layering_rules_cover_existing_files() -> None:
    assert (PKG / "store").is_dir() and (PKG / "remoting").is_dir()
    assert list(_cases()), "no module matched the layering rules"
