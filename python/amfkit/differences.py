"""Where two AMF payloads differ: `diff(a, b)` (also `amfkit.diff`) reads each in its own
form and compares what their bytes say, down to what only the wire shows.

    >>> import amfkit
    >>> flash = bytes.fromhex("0a00000001020003486921")              # AMF0 ["Hi!"]
    >>> ruffle = bytes.fromhex("0800000001000130020003486921000009")  # AMF0 {"0": "Hi!"}
    >>> for d in amfkit.diff(ruffle, flash):
    ...     print(d)
    $: ECMA array vs strict array
    >>> amfkit.diff(flash, flash.hex())                          # the same bytes, in hex
    []

Each payload goes through `amfkit.payload.read` (any input form; a remoting packet, one
value or a stream) and is compared as its exact document (`amfkit.wire`), which keeps
what a decoded Python value does not: an ECMA array against a strict array, sealed
members against dynamic ones, a reference against an inline copy of the same value,
the traits of every object, where AMF0 switched to AMF3, a packet's length fields.

A `Difference` has a `path` into the values (`$.bodies[0][0].name`: the first item of
the first body's value; the same paths as the decoder's errors), a `kind` and what each
side holds there (`a`, `b`), shown in a few words. The kinds:

| kind | what differs |
|---|---|
| `form` | a packet against a value, AMF0 against AMF3, one value against a stream |
| `version`, `count`, `target`, `response`, `name`, `must_understand`, `length`, `strings` | a packet's version, number of headers or bodies, a part's fields, its length field as written, its string references |
| `type` | the AMF types (`ECMA array` vs `strict array`, `integer` vs `double`) |
| `switch` | AMF3 after an AVM+ switch against AMF0 |
| `reference` | a reference against an inline copy, or references to different values |
| `class`, `traits`, `body` | an object's class, its traits (sealed members, dynamic, written again or referenced), an externalizable body's kind |
| `missing`, `order`, `items` | a member on one side only, members in another order, arrays of different lengths |
| `value` | the values themselves |

`diff_documents(a, b)` compares two exact documents directly.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Iterator, Union

__all__ = ["MAX_DIFFERENCES", "Difference", "diff", "diff_documents", "read_document"]

#: The most differences one comparison reports (the rest are counted, not listed).
MAX_DIFFERENCES = 1000

_Buffer = Union[bytes, bytearray, memoryview, str]
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_OBJECT_TAGS = ("__alias__", "__members__")
_OWN = frozenset(
    ("__alias__", "__sealed__", "__dynamic__", "__traits__", "__members__", "__external__", "__small__", "__flags__", "__opaque__")
)


@dataclass(frozen=True)
class Difference:
    """One place where the two payloads differ: `path` into the values, `kind` (see the
    module's docstring), and what each side holds there, shown in a few words."""

    path: str
    kind: str
    a: str
    b: str

    def __str__(self) -> str:
        return f"{self.path}: {self.a} vs {self.b}"

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "a": self.a, "b": self.b}


def read_document(data: _Buffer, **options: Any) -> tuple[str, Any, str]:
    """`(form, document, description)` of one payload: `amfkit.payload.read` with
    `options`, then its exact document. Raises what `payload.read` raises."""
    from . import payload

    p = payload.read(data, **options)
    form = f"amf{p.version}-stream" if p.kind == "stream" else p.form
    return form, p.document(), p.describe()


def diff(a: _Buffer, b: _Buffer, *, max_differences: int = MAX_DIFFERENCES, **options: Any) -> list[Difference]:
    """Every place where payloads `a` and `b` differ (an empty list when their AMF is
    the same), each read in its own form (`options` go to `amfkit.payload.read`: `form`,
    `packet`, `version`, `stream`, the limits and the lenient options). At most
    `max_differences` are listed; a last one of kind `more` counts the rest."""
    form_a, doc_a, what_a = read_document(a, **options)
    form_b, doc_b, what_b = read_document(b, **options)
    if form_a != form_b:
        return [Difference("$", "form", _form_name(form_a, what_a), _form_name(form_b, what_b))]
    return diff_documents(doc_a, doc_b, form=form_a, max_differences=max_differences)


def _form_name(form: str, what: str) -> str:
    return what.split(",")[0] if form != "packet" else "amf packet"


def diff_documents(a: Any, b: Any, *, form: str = "packet", max_differences: int = MAX_DIFFERENCES) -> list[Difference]:
    """Every place where the exact documents `a` and `b` (`amfkit.wire.read`) of the
    same `form` differ: `"packet"`, `"amf0"`, `"amf3"`, `"amf0-stream"` or
    `"amf3-stream"`."""
    walk = _Walk(a, b, max_differences)
    if form == "packet":
        walk.packet(a, b)
    elif form.endswith("-stream"):
        walk.sequence(a, b, "$", "$", "$", form.startswith("amf3"), "values")
    else:
        walk.pair(a, b, "$", "$", "$", form == "amf3", form == "amf3")
    walk.run()
    return walk.result()


# -- the walk ----------------------------------------------------------------------------


def _key_step(key: str) -> str:
    """A member's step in a JSON path, as `amfkit.wire` writes paths."""
    if _IDENT.match(key) and key.isascii():
        return "." + key
    return "[" + json.dumps(key, ensure_ascii=False) + "]"


def _index(doc: Any) -> dict[str, Any]:
    """Every container of a document by its JSON path (what `__ref__` names)."""
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [("$", doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            out[path] = node
            stack.extend((path + _key_step(k), v) for k, v in node.items() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            out[path] = node
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node) if isinstance(v, (dict, list)))
    return out


def _tag(node: Any) -> str | None:
    """The tag of a tagged value, "object" for an object, None for plain JSON."""
    if not isinstance(node, dict):
        return None
    for key in node:
        if key.startswith("__") and key.endswith("__") and key not in _OWN:
            return key
    return "object"


def _kind(node: Any, amf3: bool) -> str:
    """The AMF type a document node is, in a few words."""
    if node is None:
        return "null"
    if isinstance(node, bool):
        return "boolean"
    if isinstance(node, int):
        return "integer" if amf3 else "number"
    if isinstance(node, float):
        return "double" if amf3 else "number"
    if isinstance(node, str):
        return "string"
    if isinstance(node, list):
        return "array" if amf3 else "strict array"
    tag = _tag(node)
    names = {
        "__undefined__": "undefined",
        "__unsupported__": "unsupported",
        "__float__": "double" if amf3 else "number",
        "__date__": "date",
        "__xml__": "XML",
        "__xmldocument__": "XMLDocument" if amf3 else "XML document",
        "__bytes__": "ByteArray",
        "__array__": "array with named members",
        "__ecma__": "ECMA array",
        "__dictionary__": "Dictionary",
        "__ref__": "reference",
        "__amf3__": "AMF3 value",
    }
    if tag in names:
        return names[tag]
    if tag == "__vector__":
        return {"int": "Vector.<int>", "uint": "Vector.<uint>", "number": "Vector.<Number>"}.get(
            node.get("__vector__"), "Vector.<Object>"
        )
    alias = node.get("__alias__", "")
    if "__opaque__" in node:
        return f"externalizable {alias!r} (opaque)"
    if "__small__" in node or "__external__" in node:
        return f"externalizable {alias!r}"
    return f"typed object {alias!r}" if alias else "object"


def _shown(node: Any, amf3: bool) -> str:
    """A node in a few words: its type, and its value when it is short."""
    kind = _kind(node, amf3)
    if isinstance(node, bool):
        return f"{kind} {'true' if node else 'false'}"
    if isinstance(node, (int, float)):
        return f"{kind} {node!r}"
    if isinstance(node, str):
        text = node if len(node) <= 60 else node[:60] + "…"
        return f"{kind} {text!r}"
    if isinstance(node, dict):
        tag = _tag(node)
        if tag in ("__float__", "__date__", "__xml__", "__xmldocument__"):
            value = node[tag]
            text = value if not isinstance(value, str) or len(value) <= 60 else value[:60] + "…"
            return f"{kind} {text!r}" + (f" (tz {node['tz']})" if "tz" in node else "")
        if tag == "__bytes__":
            return f"{kind} ({_b64_len(node[tag])} bytes)"
    return kind


def _b64_len(text: str) -> int:
    return len(text) * 3 // 4 - text[-2:].count("=") if text else 0


class _Walk:
    def __init__(self, a: Any, b: Any, limit: int) -> None:
        self.nodes = (_index(a), _index(b))
        self.limit = limit
        self.out: list[Difference] = []
        self.more = 0
        # A's document path -> B's, for every pair of containers compared (sharing must
        # pair the same way), and the display path of each of A's and B's.
        self.paired: dict[str, str] = {}
        self.shown_a: dict[str, str] = {}
        self.shown_b: dict[str, str] = {}
        self.seen: set[tuple[str, str]] = set()
        # (a, b, display path, A's document path, B's document path, A in AMF3, B in AMF3)
        self.stack: list[Any] = []

    def note(self, path: str, kind: str, a: str, b: str) -> None:
        if len(self.out) < self.limit:
            self.out.append(Difference(path, kind, a, b))
        else:
            self.more += 1

    def result(self) -> list[Difference]:
        if self.more:
            self.out.append(Difference("$", "more", f"{self.more} more differences", "not listed"))
        return self.out

    def pair(self, a: Any, b: Any, path: str, da: str, db: str, amf3_a: bool, amf3_b: bool) -> None:
        self.stack.append((a, b, path, da, db, amf3_a, amf3_b))

    def run(self) -> None:
        while self.stack:
            item = self.stack.pop()
            if item[0] is _NOTE:
                self.note(*item[1])
            else:
                self.compare(*item)

    def push_all(self, items: list[Any]) -> None:
        self.stack.extend(reversed(items))

    # -- packets ------------------------------------------------------------------------

    def packet(self, a: dict, b: dict) -> None:
        if a.get("__packet__") != b.get("__packet__"):
            self.note("$", "version", f"version {a.get('__packet__')}", f"version {b.get('__packet__')}")
        items: list[tuple[Any, Any, str, str, str, bool, bool]] = []
        for part in ("headers", "bodies"):
            pa, pb = a.get(part, []), b.get(part, [])
            if len(pa) != len(pb):
                self.note("$", "count", _count(len(pa), part), _count(len(pb), part))
        for part, fields in (("headers", ("name", "must_understand")), ("bodies", ("target", "response"))):
            pa, pb = a.get(part, []), b.get(part, [])
            for i, (x, y) in enumerate(zip(pa, pb)):
                path = f"$.{part}[{i}]"
                for f in fields:
                    if x.get(f) != y.get(f):
                        self.note(path, f, f"{f} {x.get(f)!r}", f"{f} {y.get(f)!r}")
                if x.get("length") != y.get("length"):
                    self.note(path, "length", _length(x.get("length")), _length(y.get("length")))
                if bool(x.get("inline_strings")) != bool(y.get("inline_strings")):
                    self.note(path, "strings", _strings(x), _strings(y))
                doc = f"{path}.value"
                items.append((x.get("value"), y.get("value"), path, doc, doc, False, False))
        self.push_all(items)

    # -- values -------------------------------------------------------------------------

    def compare(self, a: Any, b: Any, path: str, da: str, db: str, amf3_a: bool, amf3_b: bool) -> None:
        # The AVM+ switch: noted where one side switched and the other did not.
        sa, sb = _tag(a) == "__amf3__", _tag(b) == "__amf3__"
        if sa or sb:
            if sa != sb:
                self.note(path, "switch", "AMF3 after an AVM+ switch" if sa else "AMF0", "AMF3 after an AVM+ switch" if sb else "AMF0")
            if sa:
                a, da, amf3_a = a["__amf3__"], da + ".__amf3__", True
            if sb:
                b, db, amf3_b = b["__amf3__"], db + ".__amf3__", True
            self.pair(a, b, path, da, db, amf3_a, amf3_b)
            return
        ra, rb = _tag(a) == "__ref__", _tag(b) == "__ref__"
        if ra and rb:
            ta, tb = a["__ref__"], b["__ref__"]
            if self.paired.get(ta) != tb:
                self.note(path, "reference", f"a reference to {self.shown_a.get(ta, ta)}", f"a reference to {self.shown_b.get(tb, tb)}")
            return
        if ra or rb:
            if ra:
                target = a["__ref__"]
                self.note(path, "reference", f"a reference to {self.shown_a.get(target, target)}", f"an inline {_kind(b, amf3_b)}")
                a, da = self.nodes[0].get(target), target
            else:
                target = b["__ref__"]
                self.note(path, "reference", f"an inline {_kind(a, amf3_a)}", f"a reference to {self.shown_b.get(target, target)}")
                b, db = self.nodes[1].get(target), target
            if (da, db) in self.seen or a is None or b is None:
                return
        if isinstance(a, (dict, list)):
            self.seen.add((da, db))
            self.paired.setdefault(da, db)
            self.shown_a.setdefault(da, path)
        if isinstance(b, (dict, list)):
            self.shown_b.setdefault(db, path)
        if amf3_a == amf3_b and _same_scalar(a, b):
            return
        ka, kb = _kind(a, amf3_a), _kind(b, amf3_b)
        if ka != kb:
            self.note(path, "type", _shown(a, amf3_a), _shown(b, amf3_b))
            # Look inside two containers of different kinds that hold members or items
            # alike (an ECMA array and a strict array, two objects of other classes).
            ma, mb = self.members(a, amf3_a, da), self.members(b, amf3_b, db)
            if ma is not None and mb is not None:
                self.members_pair(ma, mb, path, amf3_a, amf3_b, report_order=False)
            return
        self.same_kind(a, b, path, da, db, amf3_a, amf3_b)

    def same_kind(self, a: Any, b: Any, path: str, da: str, db: str, amf3_a: bool, amf3_b: bool) -> None:
        if not isinstance(a, (dict, list)):
            self.note(path, "value", _shown(a, amf3_a), _shown(b, amf3_b))
            return
        if isinstance(a, list):
            self.sequence(a, b, path, da, db, amf3_a, "items", amf3_b)
            return
        tag = _tag(a)
        if tag in ("__float__", "__date__", "__xml__", "__xmldocument__", "__bytes__", "__undefined__", "__unsupported__"):
            if not _same_leaf(a, b):
                self.note(path, "value", _shown(a, amf3_a), _shown(b, amf3_b))
            return
        if tag == "__vector__":
            if a.get("fixed", False) != b.get("fixed", False):
                self.note(path, "traits", "fixed" if a.get("fixed") else "not fixed", "fixed" if b.get("fixed") else "not fixed")
            if a.get("type", "") != b.get("type", ""):
                self.note(path, "class", f"of {a.get('type', '')!r}", f"of {b.get('type', '')!r}")
            self.sequence(a.get("items", []), b.get("items", []), path, da + ".items", db + ".items", amf3_a, "items", amf3_b)
            return
        if tag == "__dictionary__":
            if bool(a.get("weak_keys")) != bool(b.get("weak_keys")):
                self.note(path, "traits", "weak keys" if a.get("weak_keys") else "strong keys", "weak keys" if b.get("weak_keys") else "strong keys")
            ea, eb = a["__dictionary__"], b["__dictionary__"]
            if len(ea) != len(eb):
                self.note(path, "items", _count(len(ea), "entries"), _count(len(eb), "entries"))
            items = []
            for i, (x, y) in enumerate(zip(ea, eb)):
                pa, pb = f"{da}.__dictionary__[{i}]", f"{db}.__dictionary__[{i}]"
                items.append((x[0], y[0], f"{path}[{i}].key", pa + "[0]", pb + "[0]", True, True))
                items.append((x[1], y[1], f"{path}[{i}].value", pa + "[1]", pb + "[1]", True, True))
            self.push_all(items)
            return
        if tag == "__ecma__" and a.get("length") != b.get("length"):
            self.note(path, "length", _ecma_length(a), _ecma_length(b))
        if tag == "object":
            self.object_head(a, b, path, amf3_a)
        ma, mb = self.members(a, amf3_a, da), self.members(b, amf3_b, db)
        if ma is not None and mb is not None:
            self.members_pair(ma, mb, path, amf3_a, amf3_b, report_order=True)

    def object_head(self, a: dict, b: dict, path: str, amf3: bool) -> None:
        if a.get("__alias__", "") != b.get("__alias__", ""):
            self.note(path, "class", _class(a), _class(b))
        if a.get("__sealed__", []) != b.get("__sealed__", []) or _dynamic(a) != _dynamic(b):
            self.note(path, "traits", _traits(a, amf3), _traits(b, amf3))
        if a.get("__traits__") != b.get("__traits__"):
            self.note(path, "traits", _traits_written(a), _traits_written(b))
        body_a, body_b = _body(a), _body(b)
        if body_a != body_b:
            self.note(path, "body", body_a, body_b)
        elif body_a == "opaque body" and a["__opaque__"] != b["__opaque__"]:
            self.note(path, "value", f"opaque body ({_b64_len(a['__opaque__'])} bytes)", f"opaque body ({_b64_len(b['__opaque__'])} bytes)")
        elif body_a == "small-form body" and a.get("__flags__") != b.get("__flags__"):
            self.note(path, "traits", f"flag bytes {a.get('__flags__')}", f"flag bytes {b.get('__flags__')}")

    def members(self, node: Any, amf3: bool, doc: str) -> list[tuple[str, Any, str, bool]] | None:
        """The members of an object-like node as (name, value, document path, in AMF3);
        an array's items under their indexes; None for a node without members."""
        if isinstance(node, list):
            return [(str(i), v, f"{doc}[{i}]", amf3) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return None
        tag = _tag(node)
        if tag == "__ecma__":
            return _named(node["__ecma__"], doc + ".__ecma__", amf3)
        if tag == "__array__":
            dense = [(str(i), v, f"{doc}.__array__[{i}]", amf3) for i, v in enumerate(node["__array__"])]
            return dense + _named(node.get("assoc", {}), doc + ".assoc", amf3)
        if tag != "object":
            return None
        if "__external__" in node:
            inner = self.members(node["__external__"], True, doc + ".__external__")
            return inner if inner is not None else [("<body>", node["__external__"], doc + ".__external__", True)]
        if "__small__" in node:
            out: list[tuple[str, Any, str, bool]] = []
            for i, level in enumerate(node["__small__"]):
                out += _named(level, f"{doc}.__small__[{i}]", True)
            return out
        if "__members__" in node:
            return [(k, v, f"{doc}.__members__[{i}][1]", amf3) for i, (k, v) in enumerate(node["__members__"])]
        return [(k, v, doc + _key_step(k), amf3) for k, v in node.items() if k not in _OWN]

    def members_pair(self, ma: list, mb: list, path: str, amf3_a: bool, amf3_b: bool, *, report_order: bool) -> None:
        names_a = [m[0] for m in ma]
        names_b = [m[0] for m in mb]
        by_b = {m[0]: m for m in mb}
        by_a = {m[0]: m for m in ma}
        items: list[Any] = []
        for name, value, doc, in3 in ma:
            step = path + (f"[{name}]" if name.isdigit() else _key_step(name) if name != "<body>" else "")
            other = by_b.get(name)
            if other is None:
                items.append((_NOTE, (step, "missing", _shown(value, in3), "no such member")))
                continue
            items.append((value, other[1], step, doc, other[2], in3, other[3]))
        for name, value, _, in3 in mb:
            if name not in by_a:
                step = path + (f"[{name}]" if name.isdigit() else _key_step(name))
                items.append((_NOTE, (step, "missing", "no such member", _shown(value, in3))))
        common_a = [n for n in names_a if n in by_b]
        common_b = [n for n in names_b if n in by_a]
        if report_order and common_a != common_b:
            items.append((_NOTE, (path, "order", "members " + ", ".join(common_a[:8]), "members " + ", ".join(common_b[:8]))))
        self.push_all(items)

    def sequence(self, a: list, b: list, path: str, da: str, db: str, amf3: bool, what: str, amf3_b: bool | None = None) -> None:
        in_b = amf3 if amf3_b is None else amf3_b
        if len(a) != len(b):
            self.note(path, "items", _count(len(a), what), _count(len(b), what))
        self.push_all([(x, y, f"{path}[{i}]", f"{da}[{i}]", f"{db}[{i}]", amf3, in_b) for i, (x, y) in enumerate(zip(a, b))])


_NOTE = object()  # a stack item that is a difference to note, in document order


def _same_leaf(a: dict, b: dict) -> bool:
    """Whether two tagged values without children (a date, a ByteArray...) are the same."""
    return a.keys() == b.keys() and all(_same_scalar(a[k], b[k]) for k in a)


def _same_scalar(a: Any, b: Any) -> bool:
    """Whether two plain JSON values are the same AMF value: the same type (1 is not
    1.0) and value (-0.0 is not 0.0)."""
    if type(a) is not type(b) or isinstance(a, (dict, list)):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def _count(n: int, what: str) -> str:
    one = {"items": "item", "entries": "entry", "values": "value", "headers": "header", "bodies": "body"}.get(what, what)
    return f"{n} {one if n == 1 else what}"


def _named(members: Any, doc: str, amf3: bool) -> list[tuple[str, Any, str, bool]]:
    if isinstance(members, dict):
        return [(k, v, doc + _key_step(k), amf3) for k, v in members.items()]
    return [(k, v, f"{doc}[{i}][1]", amf3) for i, (k, v) in enumerate(members)]


def _class(node: dict) -> str:
    alias = node.get("__alias__", "")
    return f"class {alias!r}" if alias else "an anonymous object"


def _dynamic(node: dict) -> bool:
    if "__dynamic__" in node:
        return bool(node["__dynamic__"])
    return not any(k in node for k in ("__external__", "__small__", "__opaque__"))


def _traits(node: dict, amf3: bool) -> str:
    sealed = node.get("__sealed__", [])
    head = f"sealed ({', '.join(sealed)})" if sealed else "no sealed members"
    return head + (", dynamic" if _dynamic(node) else ", not dynamic")


def _traits_written(node: dict) -> str:
    return "its traits written again inline" if node.get("__traits__") == "inline" else "its traits written once"


def _body(node: dict) -> str:
    if "__external__" in node:
        return "one-value body"
    if "__small__" in node:
        return "small-form body"
    if "__opaque__" in node:
        return "opaque body"
    return "members"


def _length(value: Any) -> str:
    return "the real length" if value is None else f"length field {value}"


def _strings(part: dict) -> str:
    return "strings never referenced" if part.get("inline_strings") else "repeated strings referenced"


def _ecma_length(node: dict) -> str:
    n = node.get("length", len(node["__ecma__"]))
    return f"count field {n}"


def iter_lines(differences: list[Difference]) -> Iterator[str]:
    """The lines `amfkit diff` prints for `differences`."""
    for d in differences:
        yield str(d)
