"""Decoded AMF values as Python source for `amfkit scaffold`: `Source.expr(value)` is an
expression tree (`Atom`, `Group`), and `lines(node, indent, head, tail)` lays it out as
black lays out code (88 columns: a bracket's items on one line when they fit, else one
per line with a trailing comma; a call whose arguments fit on their own line keeps them
there), so the module needs no formatter to be formatted.

What literals can show is written as literals, with amfkit's types where Python has none
(`MixedArray`, `Date`, `Undefined`, `XML`, `ArrayCollection`...) and the module's own
classes for typed objects. What they cannot (a container met twice, or a cycle; a
Dictionary key Python cannot hash; a value of more than `MAX_NODES` nodes) is `Blob`:
the module keeps it as the base64 of its AMF3 bytes, decoded at import.
"""

from __future__ import annotations

import array
import base64
import datetime as _dt
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Union

from .._types import (
    XML,
    ArrayCollection,
    Date,
    Dictionary,
    FixedVector,
    MixedArray,
    ObjectKey,
    ObjectProxy,
    ObjectVector,
    Opaque,
    TypedObject,
    UndefinedType,
    XMLDocument,
)
from .._values import alias_of, attributes

__all__ = ["Atom", "Blob", "Group", "LINE", "MAX_NODES", "Source", "lines", "flat", "string"]

LINE = 88
#: The most nodes a value written out as literals may have (more: a Blob).
MAX_NODES = 2000
#: The longest ByteArray written as a bytes literal (longer: a Blob).
MAX_BYTES = 64


@dataclass
class Atom:
    text: str


@dataclass
class Group:
    """`head` `open` items `close`: a call (`head` is the callee) or a literal. `items`
    are nodes, or (prefix, node) pairs such as ("name=", node) or ('"key": ', node).
    `literal`: a list, dict or tuple display (black puts each item on its own line when
    they do not fit on one); a call's items may stay together on a line of their own."""

    head: str
    open: str
    items: list[Any]
    close: str
    literal: bool = True
    one_tuple: bool = False


@dataclass
class Concat:
    """A long string of several lines: one literal when it fits, else a literal per line
    inside parentheses (implicit concatenation)."""

    pieces: list[str]


Node = Union[Atom, Group, Concat]


class Blob(Exception):
    """A value to be kept as AMF3 bytes: `why` says which kind."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class _TooLarge(Blob):
    """The whole value is kept: it has more than MAX_NODES nodes."""


def string(s: str, prefix: str = "") -> str:
    """A str (or, with prefix "b", a latin-1 str of bytes) literal the way black writes
    it: double quotes unless single ones need fewer escapes."""
    quote = "'" if s.count("'") < s.count('"') else '"'
    out = []
    for ch in s:
        if ch == quote or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif prefix == "b" and not 32 <= ord(ch) < 127:
            out.append(f"\\x{ord(ch):02x}")
        elif not ch.isprintable():
            o = ord(ch)
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
        else:
            out.append(ch)
    return f"{prefix}{quote}{''.join(out)}{quote}"


def flat(node: Node) -> str:
    """The node on one line."""
    if isinstance(node, Atom):
        return node.text
    if isinstance(node, Concat):
        return string("".join(node.pieces))
    parts = [(p + flat(n)) if isinstance(p, str) else flat(n) for p, n in map(_pair, node.items)]
    inner = ", ".join(parts) + ("," if node.one_tuple else "")
    return f"{node.head}{node.open}{inner}{node.close}"


def _pair(item: Any) -> tuple[str | None, Node]:
    return (item[0], item[1]) if isinstance(item, tuple) else (None, item)


def lines(node: Node, indent: str, head: str = "", tail: str = "") -> list[str]:
    """`head` + node + `tail` at `indent`, split the way black splits it."""
    one = indent + head + flat(node) + tail
    if isinstance(node, Concat) and len(one) > LINE:
        return [indent + head + "(", *(indent + "    " + string(p) for p in node.pieces), indent + ")" + tail]
    if len(one) <= LINE or not isinstance(node, Group) or not node.items:
        return [one]
    inner = indent + "    "
    opening = indent + head + node.head + node.open
    closing = indent + node.close + tail
    items = [_pair(i) for i in node.items]
    if len(items) == 1 or not node.literal:
        body = ", ".join((p or "") + flat(n) for p, n in items) + ("," if node.one_tuple else "")
        if len(inner + body) <= LINE and (len(items) == 1 or not node.literal):
            return [opening, inner + body, closing]
        if len(items) == 1 and not node.one_tuple:
            p, n = items[0]
            return [opening, *lines(n, inner, p or ""), closing]
    out = [opening]
    for p, n in items:
        out.extend(lines(n, inner, p or "", ","))
    out.append(closing)
    return out


@dataclass
class Source:
    """Turns values into nodes. `class_of(alias)` names the module's class for a typed
    object's alias (its members in the order `members_of(alias)` gives); `names` collects
    what the module must import (amfkit names, and "datetime", "math", "array")."""

    class_of: Callable[[str], str]
    params_of: Callable[[str], dict[str, str]]
    #: Keeps a value literals cannot show (as AMF3) and returns the name it has.
    keep: Callable[[Any, str], str]
    names: set[str] = field(default_factory=set)

    def expr(self, value: Any) -> Node:
        """The node of `value`: literals, with the parts they cannot show kept (`keep`):
        the whole value when it holds a container twice (shared or cyclic), else each
        part that is too large or has a key Python cannot hash."""
        if _shares(value):
            return Atom(self.keep(value, "a shared or cyclic reference"))
        names = set(self.names)
        try:
            return self._child(value, [MAX_NODES])
        except _TooLarge:
            self.names = names
            return Atom(self.keep(value, "too large to write out"))

    def _child(self, v: Any, budget: list[int]) -> Node:
        try:
            return self._expr(v, set(), budget)
        except _TooLarge:
            raise
        except Blob as b:
            return Atom(self.keep(v, b.why))

    def _expr(self, v: Any, seen: set[int], budget: list[int]) -> Node:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooLarge("too large to write out")
        if v is None:
            return Atom("None")
        if isinstance(v, UndefinedType):
            self.names.add("Undefined")
            return Atom("Undefined")
        if isinstance(v, bool):
            return Atom("True" if v else "False")
        if isinstance(v, int):
            return Atom(str(v))
        if isinstance(v, float):
            return Atom(self._float(v))
        if isinstance(v, XMLDocument):
            self.names.add("XMLDocument")
            return Group("XMLDocument", "(", [Atom(string(str(v)))], ")", literal=False)
        if isinstance(v, XML):
            self.names.add("XML")
            return Group("XML", "(", [Atom(string(str(v)))], ")", literal=False)
        if isinstance(v, str):
            if len(v) > 60 and "\n" in v.rstrip("\n"):
                return Concat(v.splitlines(keepends=True))
            return Atom(string(v))
        if isinstance(v, (bytes, bytearray, memoryview)):
            if len(v) > MAX_BYTES:
                raise Blob(f"a ByteArray of {len(v)} bytes")
            return Atom(string(bytes(v).decode("latin-1"), "b"))
        if isinstance(v, _dt.datetime):
            self.names.add("datetime")
            args = [v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond]
            while len(args) > 3 and args[-1] == 0:
                args.pop()
            items: list[Any] = [Atom(str(a)) for a in args]
            if v.tzinfo is not None:
                items.append(("tzinfo=", Atom("datetime.timezone.utc")))
            return Group("datetime.datetime", "(", items, ")", literal=False)
        if isinstance(v, Date):
            self.names.add("Date")
            items = [Atom(self._float(v.millis))]
            if v.tz:
                items.append(("tz=", Atom(str(v.tz))))
            return Group("Date", "(", items, ")", literal=False)
        if isinstance(v, Opaque):
            raise Blob(f"an object of the externalizable class {v.alias!r}, which amfkit cannot read, kept as its bytes")
        ident = id(v)
        if ident in seen:
            raise Blob("a shared or cyclic reference")
        seen.add(ident)
        if isinstance(v, array.array):
            self.names.add("array")
            kind = "FixedVector" if isinstance(v, FixedVector) else "array.array"
            if kind == "FixedVector":
                self.names.add("FixedVector")
            items = [Atom(string(v.typecode)), self._list(list(v), seen, budget)]
            return Group(kind, "(", items, ")", literal=False)
        if isinstance(v, ObjectVector):
            self.names.add("ObjectVector")
            items = [self._list(list(v), seen, budget)]
            if v.type_name:
                items.append(("type_name=", Atom(string(v.type_name))))
            if v.fixed:
                items.append(("fixed=", Atom("True")))
            return Group("ObjectVector", "(", items, ")", literal=False)
        if isinstance(v, ArrayCollection):
            self.names.add("ArrayCollection")
            return Group("ArrayCollection", "(", [self._list(list(v), seen, budget)], ")", literal=False)
        if isinstance(v, (list, tuple)):
            return self._list(list(v), seen, budget)
        if isinstance(v, TypedObject):
            return self._typed(v.alias, list(v.items()), seen, budget)
        if isinstance(v, (MixedArray, Dictionary, ObjectProxy)):
            name = type(v).__name__
            self.names.add(name)
            items = [self._dict(v, seen, budget)]
            if isinstance(v, MixedArray) and v.length is not None:
                items.append(("length=", Atom(str(v.length))))
            if isinstance(v, Dictionary) and v.weak_keys:
                items.append(("weak_keys=", Atom("True")))
            return Group(name, "(", items, ")", literal=False)
        if isinstance(v, dict):
            return self._dict(v, seen, budget)
        # an instance of a class registered in this process: its alias and members
        return self._typed(alias_of(v), attributes(v), seen, budget)

    def _float(self, f: float) -> str:
        if math.isnan(f):
            self.names.add("math")
            return "math.nan"
        if math.isinf(f):
            self.names.add("math")
            return "math.inf" if f > 0 else "-math.inf"
        return repr(f)

    def _list(self, items: list[Any], seen: set[int], budget: list[int]) -> Group:
        return Group("", "[", [self._child(x, budget) for x in items], "]")

    def _dict(self, d: dict[Any, Any], seen: set[int], budget: list[int]) -> Group:
        items = []
        for k, x in d.items():
            if isinstance(k, ObjectKey) or not isinstance(k, (str, int, float, bool)) and k is not None:
                raise Blob("a Dictionary key Python cannot hash")
            items.append((flat(self._expr(k, seen, budget)) + ": ", self._child(x, budget)))
        return Group("", "{", items, "}")

    def _typed(self, alias: str, members: list[tuple[Any, Any]], seen: set[int], budget: list[int]) -> Group:
        cls = self.class_of(alias)
        params = self.params_of(alias)
        items = []
        for k, x in members:
            items.append((f"{params[str(k)]}=", self._child(x, budget)))
        return Group(cls, "(", items, ")", literal=False)


def _shares(value: Any) -> bool:
    """Whether `value` holds one container (or ByteArray) twice: a cycle or a shared
    reference, which literals would write as copies."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if v is None or isinstance(v, (str, int, float, bool, _dt.date, Date, UndefinedType)):
            continue
        if id(v) in seen:
            return True
        seen.add(id(v))
        if isinstance(v, dict):
            stack.extend(v.values())
            stack.extend(k.value for k in v if isinstance(k, ObjectKey))
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif hasattr(v, "__dict__") and not isinstance(v, type):
            stack.extend(x for _, x in attributes(v))
    return False


def blob_text(data: bytes) -> list[str]:
    """The base64 of `data` in string literals of at most 76 characters."""
    text = base64.b64encode(data).decode("ascii")
    return [text[i : i + 76] for i in range(0, len(text), 76)] or [""]
