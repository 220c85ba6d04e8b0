"""Flex message selectors: the JMS selector grammar (SQL-92 conditions) that BlazeDS 4.7
evaluated with ActiveMQ's parser against a message's headers. A selector is parsed once
into a tree of small closures, then matched against every published message.

    >>> selector = compile_selector("prop1 = 'bob' AND prop2 >= 4")
    >>> selector.matches({"prop1": "bob", "prop2": 5}), selector.matches({"prop1": "bob"})
    (True, False)

Grammar: `OR`, `AND`, `NOT` (NOT binds tightest), `= <> < <= > >=`, `[NOT] LIKE 'p%t_'
[ESCAPE 'c']`, `[NOT] BETWEEN a AND b`, `[NOT] IN ('a', 'b')`, `IS [NOT] NULL`,
`+ - * / %`, unary `+ -`, parentheses; literals `'text'` (`''` is a quote), integers
(decimal, `0x` hex, `0`-led octal, optional `L`), floats (`1.5`, `.5`, `5.`, `1e3`,
optional `d`/`f`), `TRUE FALSE NULL`; header names `[A-Za-z_$][A-Za-z0-9_$]*`; keywords in
any case; `--` and `/* */` comments (as ActiveMQ). Comparisons do not chain.

Evaluation is SQL's three-valued logic and never raises, whatever the headers hold: a
missing header, None or AMF undefined is NULL; a comparison with NULL, or between values
of different kinds (numbers, texts, booleans; a bool is not a number; anything else is
comparable with nothing) is UNKNOWN; a selector matches only when it is TRUE. Ordering
and arithmetic take numbers only, booleans only `=` and `<>`. As in ActiveMQ, `/` and `%`
are floating-point (`7 / 2` is 3.5, `%` keeps the dividend's sign); dividing by zero is
UNKNOWN, and so is integer arithmetic past 64 bits (where Java would wrap).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, NoReturn, Optional

from .._text import shown
from .._types import UndefinedType

__all__ = [
    "MAX_IN_LIST_LENGTH",
    "MAX_SELECTOR_DEPTH",
    "MAX_SELECTOR_LENGTH",
    "Selector",
    "SelectorError",
    "compile_selector",
]

#: Characters allowed in one selector.
MAX_SELECTOR_LENGTH = 4096
#: Deepest nesting of parentheses, NOT, signs and operators in one selector.
MAX_SELECTOR_DEPTH = 32
#: Strings allowed in one IN list.
MAX_IN_LIST_LENGTH = 1024


class SelectorError(ValueError):
    """A selector refused when compiled: what was wrong, and where (`offset`, the 0-based
    character offset in the selector's text)."""

    offset: int

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message}, at character {offset}")
        self.message = message
        self.offset = offset

    def __reduce__(self) -> tuple[type[SelectorError], tuple[str, int]]:
        return (type(self), (self.message, self.offset))


# --- values -------------------------------------------------------------------------
# Header values are brought to one of: None (NULL), bool, int, float, str, or _OPAQUE
# (present, but comparable with nothing). Every closure returns one of these, and a
# condition returns True, False or None (UNKNOWN).


class _Opaque:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<opaque>"


_OPAQUE = _Opaque()

#: An evaluator: headers -> value.
_Fn = Callable[[Mapping[str, Any]], Any]


def _value_cold(value: Any, kind: type) -> Any:
    """A header value that is not exactly str, int, float, bool or None, made plain: a
    subclass of str, int or float by its base type's own conversion (no overridden method
    runs); AMF undefined is NULL; anything else is opaque."""
    if kind is bool:
        return value
    if kind is UndefinedType:
        return None
    try:
        if issubclass(kind, str):
            return str.__str__(value)
        if issubclass(kind, int):  # not bool: bool cannot be subclassed
            return int.__int__(value)
        if issubclass(kind, float):
            return float.__float__(value)
    except Exception:
        pass
    return _OPAQUE


def _header(name: str) -> _Fn:
    def header(h: Mapping[str, Any]) -> Any:
        value = h.get(name)
        kind = type(value)
        if kind is str or kind is int or kind is float or kind is bool or value is None:
            return value
        return _value_cold(value, kind)

    return header


def _constant(value: Any) -> _Fn:
    def constant(h: Mapping[str, Any]) -> Any:
        return value

    return constant


def _always_true(h: Mapping[str, Any]) -> bool:
    return True


# --- comparisons -----------------------------------------------------------------------

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
#: `c OP x` is `x FLIPPED[OP] c`.
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _compare(op: Callable[[Any, Any], bool], ordering: bool, a: Any, b: Any) -> Optional[bool]:
    """`a op b` on plain values: numbers with numbers; with `=`/`<>` also texts with
    texts and booleans with booleans; otherwise UNKNOWN."""
    ka = type(a)
    kb = type(b)
    if (ka is int or ka is float) and (kb is int or kb is float):
        return op(a, b)
    if not ordering and ka is kb and (ka is str or ka is bool):
        return op(a, b)
    return None


def _compare_header(op: Callable[[Any, Any], bool], ordering: bool, name: str, constant: Any) -> _Fn:
    """`header op constant`, the common case, without the generic path's calls."""
    kind = type(constant)
    if kind is int or kind is float:

        def number(h: Mapping[str, Any]) -> Optional[bool]:
            value = h.get(name)
            k = type(value)
            if k is int or k is float:
                return op(value, constant)
            if value is None or k is str or k is bool:
                return None
            value = _value_cold(value, k)
            k = type(value)
            return op(value, constant) if k is int or k is float else None

        return number
    if kind is str:

        def text(h: Mapping[str, Any]) -> Optional[bool]:
            value = h.get(name)
            if type(value) is str:
                return op(value, constant)
            if value is None:
                return None
            value = _value_cold(value, type(value))
            return op(value, constant) if type(value) is str else None

        return text

    def boolean(h: Mapping[str, Any]) -> Optional[bool]:
        value = h.get(name)
        return op(value, constant) if value is True or value is False else None

    return boolean


def _compare_any(op: Callable[[Any, Any], bool], ordering: bool, left: _Fn, right: _Fn) -> _Fn:
    def compare(h: Mapping[str, Any]) -> Optional[bool]:
        return _compare(op, ordering, left(h), right(h))

    return compare


def _between_header(name: str, low: Any, high: Any, negate: bool) -> _Fn:
    """`header [NOT] BETWEEN low AND high` with number literals for bounds."""

    def between(h: Mapping[str, Any]) -> Optional[bool]:
        v = h.get(name)
        k = type(v)
        if k is not int and k is not float:
            if v is None or k is str or k is bool:
                return None
            v = _value_cold(v, k)
            if type(v) is not int and type(v) is not float:
                return None
        return (v < low or v > high) if negate else low <= v <= high

    return between


def _between(value: _Fn, low: _Fn, high: _Fn, negate: bool) -> _Fn:
    """`v BETWEEN lo AND hi` is `v >= lo AND v <= hi`; NOT BETWEEN is `v < lo OR v > hi`."""

    def between(h: Mapping[str, Any]) -> Optional[bool]:
        v = value(h)
        if type(v) is not int and type(v) is not float:
            return None
        if negate:  # v < lo OR v > hi
            under = _compare(operator.lt, True, v, low(h))
            over = _compare(operator.gt, True, v, high(h))
            if under is True or over is True:
                return True
            return None if under is None or over is None else False
        above = _compare(operator.ge, True, v, low(h))
        below = _compare(operator.le, True, v, high(h))
        if above is False or below is False:
            return False
        return None if above is None or below is None else True

    return between


# --- logic ---------------------------------------------------------------------------
# A condition operand that is not True or False (a NULL, a number, a text) is UNKNOWN.


def _and(parts: list[_Fn]) -> _Fn:
    if len(parts) == 2:
        first, second = parts

        def and2(h: Mapping[str, Any]) -> Optional[bool]:
            a = first(h)
            if a is False:
                return False
            b = second(h)
            if b is False:
                return False
            return True if a is True and b is True else None

        return and2

    def and_n(h: Mapping[str, Any]) -> Optional[bool]:
        result: Optional[bool] = True
        for part in parts:
            r = part(h)
            if r is False:
                return False
            if r is not True:
                result = None
        return result

    return and_n


def _or(parts: list[_Fn]) -> _Fn:
    if len(parts) == 2:
        first, second = parts

        def or2(h: Mapping[str, Any]) -> Optional[bool]:
            a = first(h)
            if a is True:
                return True
            b = second(h)
            if b is True:
                return True
            return False if a is False and b is False else None

        return or2

    def or_n(h: Mapping[str, Any]) -> Optional[bool]:
        result: Optional[bool] = False
        for part in parts:
            r = part(h)
            if r is True:
                return True
            if r is not False:
                result = None
        return result

    return or_n


def _not(part: _Fn) -> _Fn:
    def not_(h: Mapping[str, Any]) -> Optional[bool]:
        r = part(h)
        if r is True:
            return False
        return True if r is False else None

    return not_


def _is_null(part: _Fn, negate: bool) -> _Fn:
    if negate:
        return lambda h: part(h) is not None
    return lambda h: part(h) is None


def _text_test(part: _Fn, name: Optional[str], test: Callable[[str], bool], negate: bool) -> _Fn:
    """LIKE and IN: `test` of a text value; UNKNOWN for NULL and for anything not text."""
    if name is not None:

        def header_test(h: Mapping[str, Any]) -> Optional[bool]:
            v = h.get(name)
            if type(v) is not str:
                if v is None:
                    return None
                v = _value_cold(v, type(v))
                if type(v) is not str:
                    return None
            return test(v) is not negate

        return header_test

    def text_test(h: Mapping[str, Any]) -> Optional[bool]:
        v = part(h)
        if type(v) is str:
            return test(v) is not negate
        return None

    return text_test


# --- arithmetic ----------------------------------------------------------------------

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def _operands(a: Any, b: Any) -> int:
    """0: not two numbers (or an int past 64 bits); 1: two ints; 2: floats involved."""
    ka = type(a)
    kb = type(b)
    if ka is int:
        if not _LONG_MIN <= a <= _LONG_MAX:
            return 0
    elif ka is not float:
        return 0
    if kb is int:
        if not _LONG_MIN <= b <= _LONG_MAX:
            return 0
    elif kb is not float:
        return 0
    return 1 if ka is int and kb is int else 2


def _long(n: int) -> Optional[int]:
    return n if _LONG_MIN <= n <= _LONG_MAX else None


def _add(a: Any, b: Any) -> Any:
    k = _operands(a, b)
    if k == 1:
        return _long(a + b)
    return float(a) + float(b) if k else None


def _subtract(a: Any, b: Any) -> Any:
    k = _operands(a, b)
    if k == 1:
        return _long(a - b)
    return float(a) - float(b) if k else None


def _multiply(a: Any, b: Any) -> Any:
    k = _operands(a, b)
    if k == 1:
        return _long(a * b)
    return float(a) * float(b) if k else None


def _divide(a: Any, b: Any) -> Any:
    if not _operands(a, b) or b == 0:
        return None
    try:
        return float(a) / float(b)
    except ArithmeticError:
        return None


def _modulo(a: Any, b: Any) -> Any:
    if not _operands(a, b) or b == 0:
        return None
    try:
        return math.fmod(float(a), float(b))
    except (ArithmeticError, ValueError):  # fmod(inf, x) is a domain error
        return None


def _negate(a: Any) -> Any:
    if type(a) is int:
        return _long(-a) if _LONG_MIN <= a <= _LONG_MAX else None
    return -a if type(a) is float else None


def _plus(a: Any) -> Any:
    return a if type(a) is int or type(a) is float else None


_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": _add,
    "-": _subtract,
    "*": _multiply,
    "/": _divide,
    "%": _modulo,
}


def _arithmetic(op: Callable[[Any, Any], Any], left: _Fn, right: _Fn) -> _Fn:
    return lambda h: op(left(h), right(h))


def _unary(op: Callable[[Any], Any], part: _Fn) -> _Fn:
    return lambda h: op(part(h))


# --- LIKE ----------------------------------------------------------------------------
# The pattern is cut at each `%` into fixed-length segments (`_` is any one character).
# The first segment must sit at the start, the last at the end, and each middle one is
# placed at its leftmost fit: no backtracking, so no pattern can take exponential time
# (one regular expression of `.*` runs would, for `%a%a%a...%b` against a long text).


class _Segment:
    __slots__ = ("length", "literal", "regex")

    def __init__(self, parts: list[Optional[str]]) -> None:
        self.length = len(parts)
        self.literal: Optional[str] = None
        self.regex: Optional[re.Pattern[str]] = None
        if None in parts:
            source = "".join("." if p is None else re.escape(p) for p in parts)
            self.regex = re.compile(source, re.DOTALL)
        else:
            self.literal = "".join(p for p in parts if p is not None)

    def at(self, text: str, start: int) -> bool:
        if self.literal is not None:
            return text.startswith(self.literal, start)
        assert self.regex is not None
        return self.regex.match(text, start) is not None

    def find(self, text: str, start: int, end: int) -> int:
        if self.literal is not None:
            return text.find(self.literal, start, end)
        assert self.regex is not None
        found = self.regex.search(text, start, end)
        return -1 if found is None else found.start()


def _like_matcher(pattern: str, escape: Optional[str]) -> Callable[[str], bool]:
    """A test of a text against a LIKE pattern; the escape character makes the `%`, `_`
    or escape character after it literal (before any other it is itself, as ActiveMQ)."""
    parts: list[list[Optional[str]]] = [[]]
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == escape and i + 1 < n and pattern[i + 1] in ("%", "_", escape):
            parts[-1].append(pattern[i + 1])
            i += 2
            continue
        if c == "%":
            parts.append([])
        else:
            parts[-1].append(None if c == "_" else c)
        i += 1
    segments = [_Segment(p) for p in parts]
    if len(segments) == 1:  # no %: the whole text
        literal = segments[0].literal
        if literal is not None:
            return literal.__eq__
        whole = segments[0].regex
        assert whole is not None
        return lambda text: whole.fullmatch(text) is not None
    texts = [s.literal for s in segments if s.literal is not None]
    if len(texts) == len(segments):  # no _: plain text tests
        head, tail, inner = texts[0], texts[-1], [t for t in texts[1:-1] if t]
        if not inner:  # 'ab%', '%yz', 'ab%yz', '%'
            size = len(head) + len(tail)
            return lambda text: len(text) >= size and text.startswith(head) and text.endswith(tail)
        if len(inner) == 1 and not head and not tail:  # '%ab%'
            needle = inner[0]
            return lambda text: needle in text
    first = segments[0]
    last = segments[-1]
    middle = [s for s in segments[1:-1] if s.length]
    shortest = sum(s.length for s in segments)

    def like(text: str) -> bool:
        end = len(text) - last.length
        if len(text) < shortest or not first.at(text, 0) or not last.at(text, end):
            return False
        at = first.length
        for segment in middle:
            found = segment.find(text, at, end)
            if found < 0:
                return False
            at = found + segment.length
        return True

    return like


# --- tokens --------------------------------------------------------------------------

_KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "LIKE", "ESCAPE", "IN", "IS", "TRUE", "FALSE", "NULL"})
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER = re.compile(
    r"""(?P<float>(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[dDfF]?
                 |[0-9]+[eE][+-]?[0-9]+[dDfF]?
                 |[0-9]+[dDfF])
       |(?P<hex>0[xX][0-9a-fA-F]+)[lL]?
       |(?P<int>[0-9]+)[lL]?""",
    re.VERBOSE,
)
_WORD_RUN = re.compile(r"[A-Za-z0-9_$.]*")
_SPACE = " \t\n\r\f"
_OPERATOR_CHARS = "=<>+-*/%(),"


class _Token(NamedTuple):
    kind: str  # "id", "kw", "str", "num", "op", "end"
    value: Any  # the name, the KEYWORD, the text, the number, the operator
    start: int
    end: int


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    n = len(text)
    i = 0
    while i < n:
        c = text[i]
        if c in _SPACE:
            i += 1
        elif c == "-" and text.startswith("--", i):
            newline = [k for k in (text.find("\n", i), text.find("\r", i)) if k >= 0]
            i = min(newline) if newline else n
        elif c == "/" and text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0:
                raise SelectorError("unterminated comment", i)
            i = close + 2
        elif c == "'":
            chunks = []
            j = i + 1
            while True:
                quote = text.find("'", j)
                if quote < 0:
                    raise SelectorError("unterminated string", i)
                chunks.append(text[j:quote])
                if text.startswith("'", quote + 1):
                    chunks.append("'")
                    j = quote + 2
                    continue
                break
            tokens.append(_Token("str", "".join(chunks), i, quote + 1))
            i = quote + 1
        elif "0" <= c <= "9" or (c == "." and i + 1 < n and "0" <= text[i + 1] <= "9"):
            number = _NUMBER.match(text, i)
            assert number is not None
            end = number.end()
            if end < n and (text[end] in "._$" or text[end].isascii() and text[end].isalnum()):
                run = _WORD_RUN.match(text, end)
                raise SelectorError(f"malformed number {shown(text[i : run.end() if run else end])}", i)
            tokens.append(_Token("num", _number_value(number, i), i, end))
            i = end
        elif c in _OPERATOR_CHARS:
            two = text[i : i + 2]
            op = two if two in ("<>", "<=", ">=") else c
            tokens.append(_Token("op", op, i, i + len(op)))
            i += len(op)
        else:
            word = _IDENTIFIER.match(text, i)
            if word is None:
                raise SelectorError(f"unexpected character {shown(c)}", i)
            name = word.group()
            upper = name.upper()
            if upper in _KEYWORDS:
                tokens.append(_Token("kw", upper, i, word.end()))
            else:
                tokens.append(_Token("id", name, i, word.end()))
            i = word.end()
    tokens.append(_Token("end", None, n, n))
    return tokens


def _number_value(number: re.Match[str], start: int) -> Any:
    if number.group("float") is not None:
        digits = number.group("float")
        return float(digits[:-1] if digits[-1] in "dDfF" else digits)
    if number.group("hex") is not None:
        return int(number.group("hex")[2:], 16)
    digits = number.group("int")
    if len(digits) > 1 and digits[0] == "0":
        if "8" in digits or "9" in digits:
            raise SelectorError(f"malformed octal number {shown(digits)}", start)
        return int(digits, 8)
    try:
        return int(digits)
    except ValueError:  # past sys.get_int_max_str_digits()
        raise SelectorError(f"number of {len(digits)} digits is too long", start) from None


# --- parser --------------------------------------------------------------------------
# Static kinds of expressions, named for messages.
_CONDITION = "a condition"
_NUMBER_KIND = "a number"
_TEXT = "a string"
_NULL = "NULL"
_HEADER = "a header"  # any kind, known only from the message

_NO_CONSTANT: Any = object()


class _Expr:
    """A parsed expression: its static kind, its evaluator, its height in the tree, and
    the header name or constant it is, if it is one (for specialised comparisons)."""

    __slots__ = ("kind", "fn", "height", "start", "name", "constant")

    def __init__(
        self, kind: str, fn: _Fn, height: int, start: int, name: Optional[str] = None, constant: Any = _NO_CONSTANT
    ) -> None:
        self.kind = kind
        self.fn = fn
        self.height = height
        self.start = start
        self.name = name
        self.constant = constant


def _literal(kind: str, value: Any, start: int) -> _Expr:
    return _Expr(kind, _constant(value), 1, start, constant=value)


class _Parser:
    """Recursive descent over the tokens. Recursion happens only at a parenthesis, and
    `nesting` (parentheses, NOTs and signs open around the current point) is checked
    before it, so no input reaches Python's recursion limit; `_node` checks the height
    of what is built, so evaluation stays as shallow."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.at = 0
        self.nesting = 0

    # tokens

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self) -> _Token:
        token = self.tokens[self.at]
        if token.kind != "end":
            self.at += 1
        return token

    def keyword(self, word: str) -> Optional[_Token]:
        token = self.tokens[self.at]
        if token.kind == "kw" and token.value == word:
            self.at += 1
            return token
        return None

    def operator(self, *ops: str) -> Optional[_Token]:
        token = self.tokens[self.at]
        if token.kind == "op" and token.value in ops:
            self.at += 1
            return token
        return None

    def fail(self, message: str, token: _Token) -> NoReturn:
        raise SelectorError(message, token.start)

    def expected(self, what: str) -> NoReturn:
        token = self.peek()
        found = "the end" if token.kind == "end" else shown(self.text[token.start : token.end])
        self.fail(f"expected {what}, found {found}", token)

    def nest(self, count: int, token: _Token) -> None:
        self.nesting += count
        if self.nesting > MAX_SELECTOR_DEPTH:
            self.fail(f"selector nested deeper than {MAX_SELECTOR_DEPTH} levels", token)

    # checks

    @staticmethod
    def node(kind: str, fn: _Fn, token: _Token, *parts: _Expr) -> _Expr:
        height = 1 + max(p.height for p in parts)
        if height > MAX_SELECTOR_DEPTH:
            raise SelectorError(f"selector nested deeper than {MAX_SELECTOR_DEPTH} levels", token.start)
        return _Expr(kind, fn, height, parts[0].start if parts else token.start)

    @staticmethod
    def need(expr: _Expr, kinds: tuple[str, ...], what: str) -> None:
        if expr.kind not in kinds:
            raise SelectorError(f"{what}, found {expr.kind}", expr.start)

    def condition(self, expr: _Expr) -> _Expr:
        self.need(expr, (_CONDITION, _HEADER, _NULL), "expected a condition")
        return expr

    # grammar

    def selector(self) -> _Expr:
        expr = self.condition(self.disjunction())
        if self.peek().kind != "end":
            self.expected("an operator or the end")
        return expr

    def disjunction(self) -> _Expr:
        first = self.conjunction()
        token = self.keyword("OR")
        if token is None:
            return first
        parts = [self.condition(first)]
        while True:
            parts.append(self.condition(self.conjunction()))
            if self.keyword("OR") is None:
                return self.node(_CONDITION, _or([p.fn for p in parts]), token, *parts)

    def conjunction(self) -> _Expr:
        first = self.negation()
        token = self.keyword("AND")
        if token is None:
            return first
        parts = [self.condition(first)]
        while True:
            parts.append(self.condition(self.negation()))
            if self.keyword("AND") is None:
                return self.node(_CONDITION, _and([p.fn for p in parts]), token, *parts)

    def negation(self) -> _Expr:
        nots = []
        while True:
            token = self.keyword("NOT")
            if token is None:
                break
            nots.append(token)
            self.nest(1, token)
        expr = self.predicate()
        self.nesting -= len(nots)
        for token in reversed(nots):
            self.condition(expr)
            expr = self.node(_CONDITION, _not(expr.fn), token, expr)
            expr.start = token.start
        return expr

    def predicate(self) -> _Expr:
        left = self.sum()
        token = self.peek()
        if token.kind == "op" and token.value in _OPERATORS:
            self.take()
            expr = self.comparison(token, left, self.sum())
        elif token.kind == "kw" and token.value in ("NOT", "LIKE", "BETWEEN", "IN", "IS"):
            self.take()
            negate = token.value == "NOT"
            if negate:
                word = self.peek()
                if not (word.kind == "kw" and word.value in ("LIKE", "BETWEEN", "IN")):
                    self.expected("LIKE, BETWEEN or IN after NOT")
                self.take()
            else:
                word = token
            if word.value == "LIKE":
                expr = self.like(word, left, negate)
            elif word.value == "BETWEEN":
                expr = self.between(word, left, negate)
            elif word.value == "IN":
                expr = self.in_list(word, left, negate)
            else:
                negate = self.keyword("NOT") is not None
                if self.keyword("NULL") is None:
                    self.expected("NULL after IS" if not negate else "NULL after IS NOT")
                expr = self.node(_CONDITION, _is_null(left.fn, negate), token, left)
        else:
            return left
        after = self.peek()
        if (after.kind == "op" and after.value in _OPERATORS) or (
            after.kind == "kw" and after.value in ("LIKE", "BETWEEN", "IN", "IS")
        ):
            self.fail("comparisons do not chain: add parentheses", after)
        return expr

    def comparison(self, token: _Token, left: _Expr, right: _Expr) -> _Expr:
        op = token.value
        ordering = op not in ("=", "<>")
        if ordering:
            for side in (left, right):
                self.need(side, (_NUMBER_KIND, _HEADER), f"'{op}' compares numbers")
        else:
            for side in (left, right):
                if side.kind == _NULL:
                    hint = "IS NULL" if op == "=" else "IS NOT NULL"
                    raise SelectorError(f"NULL cannot be compared with '{op}': use {hint}", side.start)
            if left.kind != _HEADER and right.kind != _HEADER and left.kind != right.kind:
                self.fail(f"cannot compare {left.kind} with {right.kind}", token)
        if left.name is not None and right.constant is not _NO_CONSTANT:
            fn = _compare_header(_OPERATORS[op], ordering, left.name, right.constant)
        elif right.name is not None and left.constant is not _NO_CONSTANT:
            fn = _compare_header(_OPERATORS[_FLIPPED[op]], ordering, right.name, left.constant)
        else:
            fn = _compare_any(_OPERATORS[op], ordering, left.fn, right.fn)
        return self.node(_CONDITION, fn, token, left, right)

    def like(self, token: _Token, left: _Expr, negate: bool) -> _Expr:
        self.need(left, (_TEXT, _HEADER), "LIKE takes a string")
        pattern = self.peek()
        if pattern.kind != "str":
            self.expected("a string pattern after LIKE")
        self.take()
        escape: Optional[str] = None
        if self.keyword("ESCAPE"):
            literal = self.peek()
            if literal.kind != "str":
                self.expected("a string after ESCAPE")
            self.take()
            escape = literal.value
            if len(literal.value) != 1:
                self.fail(f"ESCAPE takes one character, found {shown(literal.value)}", literal)
        fn = _text_test(left.fn, left.name, _like_matcher(pattern.value, escape), negate)
        return self.node(_CONDITION, fn, token, left)

    def between(self, token: _Token, left: _Expr, negate: bool) -> _Expr:
        low = self.sum()
        if self.keyword("AND") is None:
            self.expected("AND in BETWEEN")
        high = self.sum()
        for side in (left, low, high):
            self.need(side, (_NUMBER_KIND, _HEADER), "BETWEEN compares numbers")
        if left.name is not None and low.constant is not _NO_CONSTANT and high.constant is not _NO_CONSTANT:
            fn = _between_header(left.name, low.constant, high.constant, negate)
        else:
            fn = _between(left.fn, low.fn, high.fn, negate)
        return self.node(_CONDITION, fn, token, left, low, high)

    def in_list(self, token: _Token, left: _Expr, negate: bool) -> _Expr:
        self.need(left, (_TEXT, _HEADER), "IN takes a string")
        if self.operator("(") is None:
            self.expected("'(' after IN")
        items: set[str] = set()
        count = 0
        while True:
            item = self.peek()
            if item.kind != "str":
                self.expected("a string in the IN list")
            self.take()
            count += 1
            if count > MAX_IN_LIST_LENGTH:
                self.fail(f"IN list of more than {MAX_IN_LIST_LENGTH} strings", item)
            items.add(item.value)
            if self.operator(",") is None:
                break
        if self.operator(")") is None:
            self.expected("',' or ')' in the IN list")
        fn = _text_test(left.fn, left.name, frozenset(items).__contains__, negate)
        return self.node(_CONDITION, fn, token, left)

    def sum(self) -> _Expr:
        left = self.product()
        while True:
            token = self.operator("+", "-")
            if token is None:
                return left
            left = self.arithmetic(token, left, self.product())

    def product(self) -> _Expr:
        left = self.signed()
        while True:
            token = self.operator("*", "/", "%")
            if token is None:
                return left
            left = self.arithmetic(token, left, self.signed())

    def arithmetic(self, token: _Token, left: _Expr, right: _Expr) -> _Expr:
        op = _ARITHMETIC[token.value]
        for side in (left, right):
            self.need(side, (_NUMBER_KIND, _HEADER), f"'{token.value}' takes numbers")
        if left.constant is not _NO_CONSTANT and right.constant is not _NO_CONSTANT:
            value = op(left.constant, right.constant)
            if value is not None:
                return _literal(_NUMBER_KIND, value, left.start)
        return self.node(_NUMBER_KIND, _arithmetic(op, left.fn, right.fn), token, left, right)

    def signed(self) -> _Expr:
        signs = []
        while True:
            token = self.operator("+", "-")
            if token is None:
                break
            signs.append(token)
            self.nest(1, token)
        expr = self.primary()
        self.nesting -= len(signs)
        for token in reversed(signs):
            self.need(expr, (_NUMBER_KIND, _HEADER), f"a sign '{token.value}' takes a number")
            negate = token.value == "-"
            if expr.constant is not _NO_CONSTANT:  # a number literal: exact, as written
                expr = _literal(_NUMBER_KIND, -expr.constant if negate else expr.constant, token.start)
            else:
                expr = self.node(_NUMBER_KIND, _unary(_negate if negate else _plus, expr.fn), token, expr)
                expr.start = token.start
        return expr

    def primary(self) -> _Expr:
        token = self.peek()
        kind = token.kind
        if kind == "num":
            self.take()
            return _literal(_NUMBER_KIND, token.value, token.start)
        if kind == "str":
            self.take()
            return _literal(_TEXT, token.value, token.start)
        if kind == "id":
            self.take()
            return _Expr(_HEADER, _header(token.value), 1, token.start, name=token.value)
        if kind == "kw" and token.value in ("TRUE", "FALSE"):
            self.take()
            return _literal(_CONDITION, token.value == "TRUE", token.start)
        if kind == "kw" and token.value == "NULL":
            self.take()
            return _Expr(_NULL, _constant(None), 1, token.start)
        if kind == "op" and token.value == "(":
            self.take()
            self.nest(1, token)
            expr = self.disjunction()
            if self.operator(")") is None:
                self.expected("')'")
            self.nesting -= 1
            expr.start = token.start
            return expr
        self.expected("a value")


# --- public --------------------------------------------------------------------------


class Selector:
    """A compiled selector: `matches(headers)` says whether a message with these headers
    passes it. Empty (or blank) text matches every message. Immutable; equal by text."""

    __slots__ = ("_text", "_fn")

    def __init__(self, text: str) -> None:
        if type(text) is not str:
            if not issubclass(type(text), str):
                raise SelectorError(f"a selector is text, found {shown(text)}", 0)
            text = str.__str__(text)
        if len(text) > MAX_SELECTOR_LENGTH:
            raise SelectorError(
                f"selector of {len(text)} characters exceeds the {MAX_SELECTOR_LENGTH} allowed", MAX_SELECTOR_LENGTH
            )
        self._text = text
        parser = _Parser(text)
        self._fn: Optional[_Fn] = None if parser.peek().kind == "end" else parser.selector().fn

    @property
    def text(self) -> str:
        """The selector's source text."""
        return self._text

    def matches(self, headers: Mapping[str, object]) -> bool:
        """Whether the selector is TRUE for these headers (UNKNOWN and FALSE are no
        match). Never raises: a header can hold any value. A `headers` that is not a
        mapping is taken as no headers."""
        fn = self._fn
        if fn is None:
            return True
        if type(headers) is not dict and not isinstance(headers, dict):
            headers = _plain_headers(headers)
        return fn(headers) is True

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Selector):
            return self._text == other._text
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._text)

    def __reduce__(self) -> tuple[type[Selector], tuple[str]]:
        return (Selector, (self._text,))

    def __repr__(self) -> str:
        return f"Selector({shown(self._text)})"


def _plain_headers(headers: object) -> dict[str, Any]:
    if isinstance(headers, Mapping):
        try:
            return dict(headers)
        except Exception:
            pass
    return {}


def compile_selector(text: str) -> Selector:
    """The `Selector` for `text`, parsed once; SelectorError (with the character offset)
    for text that is not a valid selector, longer than `MAX_SELECTOR_LENGTH`, nested
    deeper than `MAX_SELECTOR_DEPTH`, or with an IN list past `MAX_IN_LIST_LENGTH`.
    Empty or blank text (no selector) gives a Selector that matches everything."""
    return Selector(text)
