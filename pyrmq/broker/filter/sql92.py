"""SQL92 message selectors: tokenizer, recursive-descent parser, evaluator.

Java: ``filter/parser/SelectorParser.jj`` (the grammar, read to learn), the
``filter/expression/*`` classes (ComparisonExpression, LogicExpression,
UnaryExpression, ConstantExpression, ...) and ``SqlFilter#compile``. The
grammar, by precedence (loosest first)::

    selector   := or
    or         := and ( OR and )*
    and        := equality ( AND equality )*
    equality   := comparison ( '=' comparison | '<>' comparison | IS NULL | IS NOT NULL )*
    comparison := unary ( ('>'|'>='|'<'|'<=') unary
                        | [NOT] (CONTAINS|STARTSWITH|ENDSWITH) string
                        | [NOT] BETWEEN unary AND unary
                        | [NOT] IN '(' string (',' string)* ')' )*
    unary      := '+' unary | '-' unary | NOT unary | primary
    primary    := literal | identifier | '(' or ')'

Keywords are case-insensitive. Values follow Java's types, because the
outcome depends on them: property values are always strings, integer
constants are ``Integer`` (``Long`` outside the int range), decimals are
``Double``; comparing a string with a number parses the string with
``Integer/Long/Double.valueOf`` (a failure is an evaluation error, which the
broker's filter treats as "no match"); a missing property makes comparisons
``None`` (unknown), and ``None`` never matches. Every check the Java factory
methods make at parse time (``a > 'x'``, ``a = NULL``, ``BETWEEN 5 AND 3``,
``0.0`` below ``Double.MIN_VALUE``, ...) is made here too.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import NoReturn

__all__ = ["BooleanExpression", "Expression", "FilterEvalError", "FilterParseError", "compile_selector"]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_DOUBLE_MAX = 1.7976931348623157e308
_DOUBLE_MIN = 5e-324  # Double.MIN_VALUE (printed 4.9E-324 by Java)


class FilterParseError(Exception):
    """An invalid selector. ``str()`` is Java's ``MQFilterException#getMessage`` (the cause's toString)."""


class FilterEvalError(Exception):
    """Evaluation failed (Java throws; ExpressionMessageFilter logs and does not match)."""


# ----------------------------------------------------------------------------- Java value types


class JInt(int):
    """java.lang.Integer."""

    __slots__ = ()


class JLong(int):
    """java.lang.Long."""

    __slots__ = ()


class JDouble(float):
    """java.lang.Double."""

    __slots__ = ()


def _java_double_str(d: float) -> str:
    from pyrmq.common.java_lang import double_to_string

    return double_to_string(d)


def _parse_java_integer(s: str, lo: int, hi: int, what: str) -> int:
    """Integer/Long.parseLong(s, 10): optional sign, decimal digits (Unicode digits too), no spaces."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or not all(c.isdecimal() for c in body):
        raise FilterEvalError(f'java.lang.NumberFormatException: For input string: "{s}"')
    v = int(s)
    if not lo <= v <= hi:
        raise FilterEvalError(
            f'java.lang.NumberFormatException: For input string: "{s}"' + ("" if what == "int" else " under radix 10")
        )
    return v


_JAVA_FLOAT = re.compile(r"[+-]?(?:NaN|Infinity|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?)", re.ASCII)
_JAVA_HEX_FLOAT = re.compile(
    r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?", re.ASCII
)


def _parse_java_double(s: str) -> float:
    """Double.valueOf(s): trims chars <= ' ', accepts NaN/Infinity, f/d suffixes, hex floats."""
    t = s
    i, j = 0, len(t)
    while i < j and t[i] <= " ":
        i += 1
    while j > i and t[j - 1] <= " ":
        j -= 1
    t = t[i:j]
    if _JAVA_FLOAT.fullmatch(t):
        core = t.rstrip("fFdD") if t[-1:] in "fFdD" and "Infinity" not in t else t
        return float(core)
    m = _JAVA_HEX_FLOAT.fullmatch(t)
    if m:
        v = float.fromhex("0x" + m.group(2))
        return -v if m.group(1) == "-" else v
    raise FilterEvalError(
        f'java.lang.NumberFormatException: For input string: "{s}"'
        if t
        else "java.lang.NumberFormatException: empty String"
    )


def _double_compare(a: float, b: float) -> int:
    """Double.compare: NaN above everything and equal to itself, -0.0 below 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    ba = struct.unpack(">q", struct.pack(">d", a if a == a else math.nan))[0]
    bb = struct.unpack(">q", struct.pack(">d", b if b == b else math.nan))[0]
    if a != a or b != b:  # NaN: canonical bits
        ba = 0x7FF8000000000000 if a != a else ba
        bb = 0x7FF8000000000000 if b != b else bb
    return (ba > bb) - (ba < bb)


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


def java_compare(lv, rv, convert: bool = True) -> int:
    """ComparisonExpression#__compare: widen numbers, parse strings against numbers/booleans."""
    lc, rc = type(lv), type(rv)
    if lc is not rc:
        if lc is bool:
            if convert and rc is str:
                # Java casts the Boolean to String here: ClassCastException
                raise FilterEvalError(
                    "java.lang.ClassCastException: class java.lang.Boolean cannot be cast to class java.lang.String"
                )
            return -1
        if lc is JInt:
            if rc is JLong:
                lv = JLong(lv)
            elif rc is JDouble:
                lv = JDouble(lv)
            elif convert and rc is str:
                rv = JInt(_parse_java_integer(rv, _INT_MIN, _INT_MAX, "int"))
            else:
                return -1
        elif lc is JLong:
            if rc is JInt:
                rv = JLong(rv)
            elif rc is JDouble:
                lv = JDouble(float(lv))
            elif convert and rc is str:
                rv = JLong(_parse_java_integer(rv, _LONG_MIN, _LONG_MAX, "long"))
            else:
                return -1
        elif lc is JDouble:
            if rc in (JInt, JLong):
                rv = JDouble(float(rv))
            elif convert and rc is str:
                rv = JDouble(_parse_java_double(rv))
            else:
                return -1
        elif convert and lc is str:
            if rc is bool:
                lv = lv.lower() == "true"
            elif rc is JInt:
                lv = JInt(_parse_java_integer(lv, _INT_MIN, _INT_MAX, "int"))
            elif rc is JLong:
                lv = JLong(_parse_java_integer(lv, _LONG_MIN, _LONG_MAX, "long"))
            elif rc is JDouble:
                lv = JDouble(_parse_java_double(lv))
            else:
                return -1
        else:
            return -1
    if type(lv) is JDouble:
        return _double_compare(lv, rv)
    if type(lv) is str:
        # String#compareTo works on UTF-16 code units; only the sign matters to callers
        return _cmp(lv.encode("utf-16-be"), rv.encode("utf-16-be"))
    return _cmp(lv, rv)


def _java_equals(lv, rv) -> bool:
    if type(lv) is not type(rv):
        return False
    if type(lv) is JDouble:
        return _double_compare(lv, rv) == 0
    return lv == rv


# ----------------------------------------------------------------------------- expression tree

Context = Mapping[str, str]


class Expression:
    """Java Expression: ``evaluate(properties)`` -> value (None = unknown)."""

    __slots__ = ()
    boolean = False  #: Java ``instanceof BooleanExpression``

    def evaluate(self, ctx: Context):
        raise NotImplementedError


class BooleanExpression(Expression):
    __slots__ = ()
    boolean = True

    def matches(self, ctx: Context) -> bool:
        """Java BooleanExpression#matches: only a Boolean TRUE matches."""
        return self.evaluate(ctx) is True


class Constant(Expression):
    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def evaluate(self, ctx: Context):
        return self.value

    def __str__(self) -> str:
        v = self.value
        if v is None:
            return "NULL"
        if type(v) is bool:
            return "TRUE" if v else "FALSE"
        if type(v) is str:
            return "'" + v.replace("'", "''") + "'"
        if type(v) is JDouble:
            return _java_double_str(v)
        return str(int(v))


class BooleanConstant(Constant, BooleanExpression):
    """TRUE, FALSE and NULL (Java BooleanConstantExpression)."""

    __slots__ = ()


TRUE, FALSE, NULL = BooleanConstant(True), BooleanConstant(False), BooleanConstant(None)


class Property(Expression):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, ctx: Context):
        return ctx.get(self.name) if ctx is not None else None

    def __str__(self) -> str:
        return self.name


class _Fn(BooleanExpression):
    """A boolean node evaluated by a closure (keeps the node classes few)."""

    __slots__ = ("fn", "text")

    def __init__(self, fn: Callable[[Context], object], text: str) -> None:
        self.fn = fn
        self.text = text

    def evaluate(self, ctx: Context):
        return self.fn(ctx)

    def __str__(self) -> str:
        return self.text


class _Negate(Expression):
    __slots__ = ("right",)

    def __init__(self, right: Expression) -> None:
        self.right = right

    def evaluate(self, ctx: Context):
        v = self.right.evaluate(ctx)
        t = type(v)
        if t is JInt:
            return JInt(((-v - _INT_MIN) % 2**32) + _INT_MIN)  # Java int overflow wraps
        if t is JLong:
            return JLong(((-v - _LONG_MIN) % 2**64) + _LONG_MIN)
        if t is JDouble:
            return JDouble(-v)
        return None

    def __str__(self) -> str:
        return f"(- {self.right})"


def _rt(msg: str) -> FilterParseError:
    return FilterParseError(f"java.lang.RuntimeException: {msg}")


# --- factories with Java's parse-time checks (ComparisonExpression.create*, UnaryExpression.create*) ---


def _as_boolean(e: Expression) -> BooleanExpression:
    """SelectorParser#asBooleanExpression: a property becomes a boolean cast."""
    if e.boolean:
        return e  # type: ignore[return-value]
    if isinstance(e, Property):

        def cast(ctx, r=e):
            v = r.evaluate(ctx)
            if v is None:
                return None
            return v if type(v) is bool else False

        return _Fn(cast, str(e))
    raise FilterParseError(
        f"org.apache.rocketmq.filter.parser.ParseException: Expression will not result in a boolean value: {e}"
    )


def _check_less_than_operand(e: Expression) -> None:
    if isinstance(e, Constant):
        if type(e.value) in (JInt, JLong, JDouble):
            return
        raise _rt(f"Value '{e}' cannot be compared.")
    if e.boolean:
        raise _rt(f"Value '{e}' cannot be compared.")


def _check_equal_operand(e: Expression) -> None:
    if isinstance(e, Constant) and e.value is None:
        raise _rt(f"'{e}' cannot be compared.")


def create_not(e: BooleanExpression) -> BooleanExpression:
    def ev(ctx, r=e):
        v = r.evaluate(ctx)
        if v is None:
            return None
        if type(v) is not bool:
            raise FilterEvalError("java.lang.ClassCastException: not a Boolean")
        return not v

    return _Fn(ev, f"(NOT {e})")


def create_and(a: BooleanExpression, b: BooleanExpression) -> BooleanExpression:
    def ev(ctx):
        lv = a.evaluate(ctx)
        if lv is False:
            return False
        rv = b.evaluate(ctx)
        if rv is False:
            return False
        if lv is None or rv is None:
            return None
        return True

    return _Fn(ev, f"({a} && {b})")


def create_or(a: BooleanExpression, b: BooleanExpression) -> BooleanExpression:
    def ev(ctx):
        lv = a.evaluate(ctx)
        if lv is True:
            return True
        rv = b.evaluate(ctx)
        if rv is True:
            return True
        if lv is None or rv is None:
            return None
        return False

    return _Fn(ev, f"({a} || {b})")


def _do_create_equal(left: Expression, right: Expression) -> BooleanExpression:
    def ev(ctx):
        lv = left.evaluate(ctx)
        rv = right.evaluate(ctx)
        if (lv is None) ^ (rv is None):
            return None if lv is None else False
        if lv is None or _java_equals(lv, rv):
            return True
        return java_compare(lv, rv) == 0

    return _Fn(ev, f"({left} == {right})")


def create_equal(left: Expression, right: Expression) -> BooleanExpression:
    _check_equal_operand(left)
    _check_equal_operand(right)
    if isinstance(left, Constant) and isinstance(right, Constant) and left.boolean and not right.boolean:
        raise _rt(f"'{left}' cannot be compared with '{right}'")
    return _do_create_equal(left, right)


_ORDER = {">": lambda c: c > 0, ">=": lambda c: c >= 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0}


def create_order(op: str, left: Expression, right: Expression) -> BooleanExpression:
    _check_less_than_operand(left)
    _check_less_than_operand(right)
    test = _ORDER[op]

    def ev(ctx):
        lv = left.evaluate(ctx)
        if lv is None:
            return None
        rv = right.evaluate(ctx)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:
            try:
                lv, rv = JDouble(_parse_java_double(lv)), JDouble(_parse_java_double(rv))
            except FilterEvalError as e:
                raise FilterEvalError(
                    f"It's illegal to compare string by '>=', '>', '<', '<='. lv={lv}, rv={rv}"
                ) from e
        return test(java_compare(lv, rv))

    return _Fn(ev, f"({left} {op} {right})")


def create_between(value: Expression, low: Expression, high: Expression) -> BooleanExpression:
    if isinstance(low, Constant) and isinstance(high, Constant):
        lv, rv = low.value, high.value
        if lv is None or rv is None:
            raise _rt("Illegal values of between, values can not be null!")
        try:
            ret = java_compare(rv, lv)
        except FilterEvalError as e:
            msg = str(e)
            raise (_rt(msg) if "NumberFormatException" in msg else FilterParseError(msg)) from None
        if ret < 0:
            raise _rt(
                f"Illegal values of between, left value({_plain(lv)}) must less than or equal to right "
                f"value({_plain(rv)})"
            )
    return create_and(create_order(">=", value, low), create_order("<=", value, high))


def _plain(v) -> str:
    if type(v) is bool:
        return "true" if v else "false"
    if type(v) is JDouble:
        return _java_double_str(v)
    return str(v) if type(v) is str else str(int(v))


def create_not_between(value: Expression, low: Expression, high: Expression) -> BooleanExpression:
    return create_or(create_order("<", value, low), create_order(">", value, high))


def create_in(left: Expression, items: list[str], negate: bool) -> BooleanExpression:
    if not isinstance(left, Property):
        raise _rt(f"Expected a property for In expression, got: {left}")
    values = frozenset(items)

    def ev(ctx):
        v = left.evaluate(ctx)
        if v is None or type(v) is not str:
            return None
        return (v in values) ^ negate

    return _Fn(ev, f"{left} {'NOT IN' if negate else 'IN'} ( {', '.join(items)} )")


_STRING_OPS = {"CONTAINS": str.__contains__, "STARTSWITH": str.startswith, "ENDSWITH": str.endswith}


def create_string_op(op: str, left: Expression, search: str, negate: bool) -> BooleanExpression:
    test = _STRING_OPS[op]

    def ev(ctx):
        if not search:
            return False
        v = left.evaluate(ctx)
        if v is None or type(v) is not str:
            return False
        return test(v, search) ^ negate

    return _Fn(ev, f"({'NOT ' if negate else ''}{op} {left})")


# ----------------------------------------------------------------------------- tokenizer

KEYWORDS = frozenset(
    ["NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS", "STARTSWITH", "ENDSWITH"]
)


@dataclass(slots=True, frozen=True)
class Token:
    kind: str  #: a keyword, 'ID', 'DECIMAL', 'FLOAT', 'STRING', an operator, or 'EOF'
    image: str
    line: int
    column: int


_TOKEN_RE = re.compile(
    r"""
      (?P<ws>[ \t\n\r\f]+)
    | (?P<line_comment>--[^\n\r]*(?:\r\n|\n|\r))
    | (?P<block_comment>/\*[^*]*\*+(?:[^*/][^*]*\*+)*/)
    | (?P<FLOAT>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
    | (?P<DECIMAL>0|[1-9][0-9]*[lL]?)
    | (?P<STRING>'(?:''|[^'])*')
    | (?P<word>[a-zA-Z_$][a-zA-Z0-9_$]*)
    | (?P<op><>|>=|<=|[=<>(),+\-])
    """,
    re.VERBOSE,
)


def tokenize(text: str) -> Iterator[Token]:
    """Longest-match tokens like the JavaCC token manager, produced lazily: as in Java, a lexical
    error after the end of the selector the parser stops at is never seen."""
    pos, line, line_start = 0, 1, 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        col = pos - line_start + 1
        if m is None:
            raise FilterParseError(
                f"org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line {line}, column {col}.  "
                f'Encountered: "{text[pos]}" ({ord(text[pos])}), after : ""'
            )
        kind = m.lastgroup
        assert kind is not None  # every alternative of _TOKEN_RE is a named group
        image = m.group()
        if kind == "word":
            up = image.upper()
            kind = up if up in KEYWORDS else "ID"
        elif kind == "op":
            kind = image
        if kind not in ("ws", "line_comment", "block_comment"):
            yield Token(kind, image, line, col)
        for i, c in enumerate(image):
            if c == "\n" or (c == "\r" and image[i + 1 : i + 2] != "\n"):
                line += 1
                line_start = pos + i + 1
        pos = m.end()
    yield Token("EOF", "", line, n - line_start + 1)


# ----------------------------------------------------------------------------- parser


class _Parser:
    def __init__(self, text: str) -> None:
        self._source = tokenize(text)
        self.toks: list[Token] = []
        self.i = 0

    def peek(self, k: int = 0) -> Token:
        while len(self.toks) <= self.i + k:
            if self.toks and self.toks[-1].kind == "EOF":
                return self.toks[-1]
            self.toks.append(next(self._source))
        return self.toks[self.i + k]

    def take(self) -> Token:
        t = self.peek()
        self.i += 1
        return t

    def expect(self, kind: str) -> Token:
        t = self.peek()
        if t.kind != kind:
            self.fail(t, kind)
        return self.take()

    def fail(self, t: Token, expecting: str | None = None) -> NoReturn:
        what = "<EOF>" if t.kind == "EOF" else f'"{t.image}"'
        msg = (
            f'org.apache.rocketmq.filter.parser.ParseException: Encountered " {what} " at line {t.line}, '
            f"column {t.column}."
        )
        if expecting:
            msg += f'\nWas expecting:\n    "{expecting}" ...'
        raise FilterParseError(msg)

    def parse(self) -> BooleanExpression:
        """Java JmsSelector(): one or-expression; like JavaCC's, whatever follows it is ignored."""
        return _as_boolean(self.or_expr())

    def or_expr(self) -> Expression:
        left = self.and_expr()
        while self.peek().kind == "OR":
            self.take()
            right = self.and_expr()
            left = create_or(_as_boolean(left), _as_boolean(right))
        return left

    def and_expr(self) -> Expression:
        left = self.equality()
        while self.peek().kind == "AND":
            self.take()
            right = self.equality()
            left = create_and(_as_boolean(left), _as_boolean(right))
        return left

    def equality(self) -> Expression:
        left = self.comparison()
        while True:
            k = self.peek().kind
            if k == "=":
                self.take()
                left = create_equal(left, self.comparison())
            elif k == "<>":
                self.take()
                left = create_not(create_equal(left, self.comparison()))
            elif k == "IS":
                self.take()
                if self.peek().kind == "NOT":
                    self.take()
                    self.expect("NULL")
                    left = create_not(_do_create_equal(left, NULL))
                else:
                    self.expect("NULL")
                    left = _do_create_equal(left, NULL)
            else:
                return left

    def comparison(self) -> Expression:
        left = self.unary()
        while True:
            t = self.peek()
            k = t.kind
            if k in _ORDER:
                self.take()
                left = create_order(k, left, self.unary())
                continue
            negate = False
            if k == "NOT" and self.peek(1).kind in ("CONTAINS", "STARTSWITH", "ENDSWITH", "BETWEEN", "IN"):
                self.take()
                negate = True
                k = self.peek().kind
            if k in _STRING_OPS:
                self.take()
                left = create_string_op(k, left, self.string_literal(), negate)
            elif k == "BETWEEN":
                self.take()
                low = self.unary()
                self.expect("AND")
                high = self.unary()
                left = create_not_between(left, low, high) if negate else create_between(left, low, high)
            elif k == "IN":
                self.take()
                self.expect("(")
                items = [self.string_literal()]
                while self.peek().kind == ",":
                    self.take()
                    items.append(self.string_literal())
                self.expect(")")
                left = create_in(left, items, negate)
            else:
                return left

    def unary(self) -> Expression:
        k = self.peek().kind
        if k == "+":
            self.take()
            return self.unary()
        if k == "-":
            self.take()
            return _Negate(self.unary())
        if k == "NOT":
            self.take()
            return create_not(_as_boolean(self.unary()))
        return self.primary()

    def primary(self) -> Expression:
        t = self.peek()
        k = t.kind
        if k == "STRING":
            return Constant(self.string_literal())
        if k == "DECIMAL":
            self.take()
            return Constant(_decimal(t.image))
        if k == "FLOAT":
            self.take()
            return Constant(_float(t.image))
        if k == "TRUE":
            self.take()
            return TRUE
        if k == "FALSE":
            self.take()
            return FALSE
        if k == "NULL":
            self.take()
            return NULL
        if k == "ID":
            self.take()
            return Property(t.image)
        if k == "(":
            self.take()
            e = self.or_expr()
            self.expect(")")
            return e
        self.fail(t)

    def string_literal(self) -> str:
        t = self.expect("STRING")
        return t.image[1:-1].replace("''", "'")


def _decimal(text: str) -> JInt | JLong:
    """ConstantExpression#createFromDecimal: Long, narrowed to Integer when it fits."""
    if text[-1] in "lL":
        text = text[:-1]
    v = int(text)
    if v > _LONG_MAX:
        raise FilterParseError(f'java.lang.NumberFormatException: For input string: "{text}"')
    return JInt(v) if _INT_MIN <= v <= _INT_MAX else JLong(v)


def _float(text: str) -> JDouble:
    """ConstantExpression#createFloat: finite and not below Double.MIN_VALUE (so 0.0 is refused, as in Java)."""
    v = float(text)
    if v > _DOUBLE_MAX:
        raise _rt(f"{text} is greater than 1.7976931348623157E308")
    if v < _DOUBLE_MIN:
        raise _rt(f"{text} is less than 4.9E-324")
    return JDouble(v)


_CACHE: dict[str, BooleanExpression | FilterParseError] = {}
_CACHE_MAX = 100


def compile_selector(sql: str | None) -> BooleanExpression:
    """Java SqlFilter#compile (SelectorParser#parse, with its small cache of results and errors)."""
    if sql is None:
        raise FilterParseError("java.lang.NullPointerException")
    hit = _CACHE.get(sql)
    if hit is not None:
        if isinstance(hit, FilterParseError):
            raise hit
        return hit
    try:
        expr = _Parser(sql).parse()
    except FilterParseError as e:
        result: BooleanExpression | FilterParseError = e
    except RecursionError:
        result = FilterParseError("java.lang.StackOverflowError")
    else:
        result = expr
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[sql] = result
    if isinstance(result, FilterParseError):
        raise result
    return result


def evaluate_matches(expr: BooleanExpression, properties: Mapping[str, str] | None) -> bool:
    """ExpressionMessageFilter#isMatchedByCommitLog's verdict: TRUE matches; None or an error does not."""
    try:
        return expr.evaluate(properties if properties is not None else {}) is True
    except (FilterEvalError, RecursionError):
        return False
