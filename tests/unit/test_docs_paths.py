"""Every `pyrmq/...` and `tests/...` path the docs name exists (a moved file must take its docs along).

Paths are found anywhere in docs/*.md and README.md: a path with a file extension must be a
file (or `module.attr` of an existing `module.py`), a path ending in `/` a directory, `{a,b}`
is expanded and a `*` pattern must match something. Placeholders (`<case>`) are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

# Starts at a word boundary, so `h11/tests/helpers.py` or `compat/java-tests/pom.xml` are not ours.
_PATH = re.compile(r"(?<![\w/.<>-])((?:pyrmq|tests)/[\w/.{},*-]*)")
_BRACES = re.compile(r"\{([^{}]*)\}")


def _expand(path: str) -> list[str]:
    m = _BRACES.search(path)
    if m is None:
        return [path]
    return [x for alt in m.group(1).split(",") for x in _expand(path[: m.start()] + alt + path[m.end() :])]


def _exists(path: str) -> bool:
    if "*" in path:
        return any(ROOT.glob(path))
    target = ROOT / path
    if path.endswith("/"):
        return target.is_dir()
    if target.exists():
        return True
    module, _, _attr = path.rpartition(".")
    return bool(module) and (ROOT / f"{module}.py").is_file()  # `pyrmq/common/java_lang.double_to_string`


def named_paths(text: str) -> list[str]:
    """The checkable paths a Markdown text names: with a file extension or a trailing slash."""
    out = []
    for m in _PATH.finditer(text):
        path = m.group(1).rstrip(".,")
        if path.endswith("/") or "." in path.rsplit("/", 1)[-1]:
            out += _expand(path)
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_named_paths_exist(doc: Path) -> None:
    missing = sorted({p for p in named_paths(doc.read_text(encoding="utf-8")) if not _exists(p)})
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_checker_finds_stale_paths() -> None:
    text = (
        "See `pyrmq/protocol/{codes,framing}.py`, `tests/golden/remoting/*.hex`, `pyrmq/remoting/codes.py`,"
        " `pyrmq/common/java_lang.double_to_string`, h11's `h11/tests/helpers.py` and tests/unit/<package>/."
    )
    paths = named_paths(text)
    assert "h11/tests/helpers.py" not in paths and "tests/helpers.py" not in paths
    assert [p for p in paths if not _exists(p)] == ["pyrmq/remoting/codes.py"]
