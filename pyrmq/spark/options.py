"""A data source's options as Spark hands them over: one definition for the batch sources and
the streaming source."""

from __future__ import annotations

from collections.abc import Mapping

Options = Mapping[str, str]


def opt(options: Options, name: str) -> str | None:
    """An option's value; None when absent or empty."""
    v = options.get(name)
    return None if v is None or v == "" else v


def opt_or(options: Options, name: str, default: str) -> str:
    v = opt(options, name)
    return default if v is None else v
