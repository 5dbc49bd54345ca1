"""Command-line options with mqadmin's look: commons-cli parsing rules and HelpFormatter output.

Java: ``srvutil/ServerUtil#parseCmdLine`` (DefaultParser, ``HelpFormatter`` width 110) and each
SubCommand's ``buildCommandlineOptions``. mqadmin prints ``usage: mqadmin <cmd> ...`` and the
option table; a parse error prints the commons-cli message on stderr and the help on stdout.
The rendering rules (sort by key ignoring case, ``[...]`` for optional options, ``a | b`` for
option groups, descriptions wrapped at 110 columns under their own column) are reimplemented
here so that scripts and eyes see the same text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

WIDTH = 110


class UsageError(Exception):
    """Bad command line; the message is what commons-cli would say."""


@dataclass(slots=True)
class Opt:
    short: str | None
    long: str | None
    has_arg: bool
    desc: str
    required: bool = False
    group: str | None = None  # options sharing a group name are mutually exclusive

    @property
    def key(self) -> str:
        return self.short if self.short is not None else self.long  # type: ignore[return-value]


@dataclass(slots=True)
class Group:
    name: str
    required: bool
    members: list[Opt] = field(default_factory=list)


COMMON = [
    Opt("h", "help", False, "Print help"),
    Opt("n", "namesrvAddr", True, "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'"),
]


class OptionSet:
    """The options of one command, in declaration order (that order decides error messages)."""

    def __init__(self, opts: list[Opt], required_groups: tuple[str, ...] = ()) -> None:
        self.opts = [*COMMON, *opts]
        self.groups: dict[str, Group] = {}
        for o in self.opts:
            if o.group:
                g = self.groups.setdefault(o.group, Group(o.group, o.group in required_groups))
                g.members.append(o)

    # ------------------------------------------------------------------ parsing
    def _find(self, token: str) -> Opt | None:
        if token.startswith("--"):
            name = token[2:]
            exact = [o for o in self.opts if o.long == name]
            if exact:
                return exact[0]
            prefixed = [o for o in self.opts if o.long and o.long.startswith(name)]
            return prefixed[0] if len(prefixed) == 1 else None
        name = token[1:]
        for o in self.opts:
            if o.short == name:
                return o
        for o in self.opts:  # DefaultParser also accepts a long name after one dash
            if o.long == name:
                return o
        return None

    def parse(self, argv: list[str]) -> dict[str, str | bool]:
        """Values keyed by Opt.key (flags -> True). Raises UsageError with commons-cli's wording."""
        values: dict[str, str | bool] = {}
        chosen: dict[str, Opt] = {}
        i = 0
        while i < len(argv):
            tok = argv[i]
            i += 1
            if not tok.startswith("-") or tok == "-":
                continue  # commons-cli keeps stray arguments as getArgs(); mqadmin ignores them
            inline = None
            if tok.startswith("--") and "=" in tok:
                tok, inline = tok.split("=", 1)
            opt = self._find(tok)
            if opt is None and not tok.startswith("--") and len(tok) > 2:
                head = self._find(tok[:2])  # -tTopic: short option with its value attached
                if head is not None and head.has_arg:
                    opt, inline = head, tok[2:]
            if opt is None:
                raise UsageError(f"Unrecognized option: {tok}")
            if opt.group:
                prev = chosen.get(opt.group)
                if prev is not None and prev is not opt:
                    raise UsageError(
                        f"The option '{opt.key}' was specified but an option from this group "
                        f"has already been selected: '{prev.key}'"
                    )
                chosen[opt.group] = opt
            if opt.has_arg:
                if inline is None:
                    if i >= len(argv) or (argv[i].startswith("-") and self._find(argv[i]) is not None):
                        raise UsageError(f"Missing argument for option: {opt.key}")
                    inline = argv[i]
                    i += 1
                values[opt.key] = inline
            else:
                values[opt.key] = True
        if "h" in values:
            return values
        missing: list[str] = []
        seen_groups: set[str] = set()
        for o in self.opts:
            if o.group:
                g = self.groups[o.group]
                if g.required and g.name not in seen_groups and g.name not in chosen:
                    seen_groups.add(g.name)
                    inner = ", ".join(f"{_flag(m)} {m.desc}" for m in g.members)
                    missing.append(f"[{inner}]")
            elif o.required and o.key not in values:
                missing.append(o.key)
        if missing:
            s = "s" if len(missing) > 1 else ""
            raise UsageError(f"Missing required option{s}: {', '.join(missing)}")
        return values

    # ------------------------------------------------------------------ help
    def help_text(self, app: str) -> str:
        return self.usage(app) + "\n" + self.table()

    def _sorted(self) -> list[Opt]:
        return sorted(self.opts, key=lambda o: o.key.lower())

    def usage(self, app: str) -> str:
        buf = f"usage: {app} "
        done: set[str] = set()
        parts = self._sorted()
        for n, o in enumerate(parts):
            if o.group:
                if o.group not in done:
                    done.add(o.group)
                    g = self.groups[o.group]
                    inner = " | ".join(_usage_item(m) for m in sorted(g.members, key=lambda m: m.key.lower()))
                    buf += inner if g.required else f"[{inner}]"
            else:
                item = _usage_item(o)
                buf += item if o.required else f"[{item}]"
            if n < len(parts) - 1:
                buf += " "
        return wrap(buf, WIDTH, buf.index(" ") + 1)

    def table(self) -> str:
        prefixes = []
        for o in self._sorted():
            if o.short is None:
                p = f"    --{o.long}"
            else:
                p = f" -{o.short}" + (f",--{o.long}" if o.long else "")
            if o.has_arg:
                p += " <arg>"
            prefixes.append((p, o))
        width = max(len(p) for p, _ in prefixes)
        lines = []
        for p, o in prefixes:
            text = p.ljust(width) + "   " + o.desc
            lines.append(wrap(text, WIDTH, width + 3))
        return "\n".join(lines) + "\n"


def _flag(o: Opt) -> str:
    return f"-{o.short}" if o.short is not None else f"--{o.long}"


def _usage_item(o: Opt) -> str:
    return _flag(o) + (" <arg>" if o.has_arg else "")


def _wrap_pos(text: str, width: int, start: int) -> int:
    for ch in ("\n", "\t"):
        p = text.find(ch, start)
        if p != -1 and p <= width:
            return p + 1
    if start + width >= len(text):
        return -1
    pos = start + width
    while pos >= start and text[pos] not in " \n\r":
        pos -= 1
    if pos > start:
        return pos
    pos = start + width
    return -1 if pos == len(text) else pos


def wrap(text: str, width: int, tab: int) -> str:
    """commons-cli renderWrappedText: break at the last blank before `width`, indent by `tab`."""
    out = []
    text = text.rstrip()
    pos = _wrap_pos(text, width, 0)
    if pos == -1:
        return text
    out.append(text[:pos].rstrip())
    if tab >= width:
        tab = 1
    pad = " " * tab
    while True:
        text = pad + text[pos:].strip()
        pos = _wrap_pos(text, width, 0)
        if pos == -1:
            out.append(text)
            return "\n".join(out)
        if len(text) > width and pos == tab - 1:
            pos = width
        out.append(text[:pos].rstrip())
