"""Which implementation of the hot codecs runs: the compiled extension or the pure-Python reference.

pyrmq's hot loops (ROCKETMQ header codec, typed-header parsing, Java string hashing, the
commit-log properties string) are written once in Python, which stays the reference, and a
second time in ``pyrmq/_speedups/_native.pyx`` (Cython), built by ``pip install`` when a C
compiler is there (an optional extension: without one, install still succeeds). Each module
defines its Python function, then passes it through :func:`pick` in one line; this is the only
place that decides. ``PYRMQ_PURE=1`` forces the Python path; ``PYRMQ_REQUIRE_SPEEDUPS=1`` (set
by tools/test) makes tests/unit/test_speedups.py fail when the extension did not build.

A compiled function returns exactly what its reference returns; on any unusual input (bad
lengths, out-of-range values, lone surrogates) it calls the reference, so error types and
messages come from one definition.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get("PYRMQ_PURE", "") not in ("", "0"):
        return None, "PYRMQ_PURE is set"
    try:
        return importlib.import_module("pyrmq._speedups._native"), ""
    except ImportError as e:  # not built (no compiler at install time): the Python path runs
        return None, f"extension not built ({e})"


native, _why_pure = _load()

#: name -> the Python reference, for every function passed through pick()
REFERENCES: dict[str, Callable[..., Any]] = {}


def pick(reference: F, name: str | None = None) -> F:
    """The compiled twin of ``reference`` (same name in _native.pyx) when the extension is
    active, else ``reference`` itself. The reference stays reachable in REFERENCES."""
    key = name or reference.__name__.lstrip("_")
    REFERENCES[key] = reference
    if native is None:
        return reference
    impl: F = getattr(native, key)
    return impl


def reference(name: str) -> Callable[..., Any]:
    """The Python reference registered under ``name`` (the compiled code's error path)."""
    return REFERENCES[name]


def active() -> bool:
    """True when the compiled functions run."""
    return native is not None


def describe() -> str:
    """One line for the start-up log: which implementation runs, and why."""
    if native is not None:
        return "codec speed-ups: compiled (pyrmq._speedups._native; PYRMQ_PURE=1 selects pure Python)"
    return f"codec speed-ups: pure Python ({_why_pure})"
