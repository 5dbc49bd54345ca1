"""What every `pyrmq admin` command is: mqadmin's name, description, options and Java class.

Java: ``tools/command/SubCommand`` (commandName, commandDesc, buildCommandlineOptions,
execute). The Java class's simple name appears in failures (``UpdateTopicSubCommand command
failed``), so each command keeps it.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TextIO

from pyrmq.admin.client import AdminClient
from pyrmq.admin.javafmt import jfmt
from pyrmq.admin.options import OptionSet


class Ctx:
    """One run: the admin client, the parsed options, stdout."""

    def __init__(self, client: AdminClient, opts: dict[str, str | bool], out: TextIO | None = None) -> None:
        self.client = client
        self.opts = opts
        self.out = out or sys.stdout

    def printf(self, fmt: str, *args: Any) -> None:
        self.out.write(jfmt(fmt, *args))

    def has(self, key: str) -> bool:
        return key in self.opts

    def get(self, key: str, default: str | None = None) -> str | None:
        """An optional option's value, trimmed (``commandLine.getOptionValue(k).trim()``)."""
        v = self.opts.get(key, default)
        return v.strip() if isinstance(v, str) else default

    def value(self, key: str) -> str:
        """The value of an option known to be there: a required one, or one checked with has()."""
        v = self.opts[key]
        if not isinstance(v, str):
            raise TypeError(f"option -{key} takes no value")
        return v.strip()


Run = Callable[[Ctx], Awaitable[None]]


@dataclass(slots=True)
class Command:
    name: str
    desc: str
    java_class: str
    options: OptionSet
    run: Run


REGISTRY: dict[str, Command] = {}


def command(name: str, desc: str, java_class: str, options: OptionSet) -> Callable[[Run], Run]:
    def deco(fn: Run) -> Run:
        REGISTRY[name] = Command(name, desc, java_class, options, fn)
        return fn

    return deco


class PrintHelp(Exception):
    """The command found neither of its alternative options (mqadmin prints the help then)."""


def java_int(s: str | None, what: str = "") -> int:
    """Integer.parseInt / Long.parseLong; ValueError reads like Java's NumberFormatException."""
    s = (s or "").strip()
    try:
        if not s or not s.lstrip("+-").isdigit():
            raise ValueError
        return int(s)
    except ValueError:
        raise NumberFormatError(f'For input string: "{s}"') from None


def java_bool(s: str | None) -> bool:
    """Boolean.parseBoolean: only "true" (any case) is true."""
    return (s or "").strip().lower() == "true"


class NumberFormatError(ValueError):
    java_class = "java.lang.NumberFormatException"
