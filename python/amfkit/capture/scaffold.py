"""`amfkit scaffold`: a services module written from the calls a capture recorded, to
edit by hand into the server that is gone (docs/capture.md, "Scaffold").

One class per service and one method per recorded target, its parameters named after
the arguments recorded; a method returns (or raises) what was recorded: one answer is
returned whatever the arguments, several are chosen by the arguments, then the last
recorded answer is the default. A class for every typed object's alias, registered
with its sealed members in the recorded order. `gateway = Gateway(...)` at the bottom,
so that `amfkit serve module:gateway` serves it. Values are literals (`pysource`);
what literals cannot show is kept as AMF3 bytes, decoded at import.

    >>> from amfkit import capture
    >>> from amfkit.capture.scaffold import scaffold
    >>> text = scaffold(capture.calls_of(capture.read("capture.har")).calls)  # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import keyword
import re
from dataclasses import dataclass, field
from typing import Any

from .. import DecodeError, amf3
from .._types import TypedObject
from .._values import alias_of, attributes
from . import match as _match
from .calls import Call
from .pysource import LINE, Atom, Group, Node, Source, blob_text, lines, string

__all__ = ["scaffold"]

#: Names the module imports or defines, which parameters must not hide.
_MODULE_NAMES = {"array", "base64", "datetime", "math", "amf3", "Any", "Undefined", "Date", "XML", "XMLDocument", "MixedArray",
                 "Dictionary", "ObjectVector", "FixedVector", "ArrayCollection", "ObjectProxy", "Fault", "Principal", "Gateway"}

#: Aliases of the Flex messages, which the gateway reads and writes itself.
_FLEX = re.compile(r"^(flex\.messaging\.messages\.|DS[KAC]$)")


@dataclass
class _Class:
    alias: str
    name: str
    sealed: list[str] = field(default_factory=list)
    dynamic: bool = True
    members: list[str] = field(default_factory=list)  # sealed first, then dynamic, first seen
    always: set[str] = field(default_factory=set)  # members every sighting had
    params: dict[str, str] = field(default_factory=dict)


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"[^0-9A-Za-z_]", "_", s).strip("_").lower()
    return s or "value"


def _ident(name: str, taken: set[str]) -> str:
    """`name` as a Python name not in `taken` (a keyword gets "_", a clash a number)."""
    base = re.sub(r"[^0-9A-Za-z_]", "_", name) or "value"
    if base[0].isdigit():
        base = "_" + base
    if keyword.iskeyword(base) or base in ("self", "Any"):
        base += "_"
    out, n = base, 2
    while out in taken:
        out, n = f"{base}{n}", n + 1
    taken.add(out)
    return out


class _Module:
    def __init__(self, calls: list[Call], source_names: list[str]) -> None:
        self.calls = [c for c in calls if c.answered]
        self.sources = source_names
        self.taken: set[str] = {"Gateway", "Fault", "Principal", "gateway", "authenticate", "register_class", "amf3", "base64"}
        self.classes: dict[str, _Class] = {}
        self.blobs: list[tuple[str, bytes, str]] = []
        #: Whether a kept value holds an object of an externalizable class nobody
        #: registered (an `amfkit.Opaque`, read so from the capture).
        self.opaque = False
        self._what = "value"
        self.source = Source(self._class_name, self._params, self._keep)
        for c in self.calls:
            for v in (*c.arguments, c.result if c.fault is None else c.fault[2]):
                self._collect(v, [0])

    # -- typed objects ----------------------------------------------------------------

    def _collect(self, v: Any, budget: list[int], depth: int = 0) -> None:
        budget[0] += 1
        if budget[0] > 200_000 or depth > 64:
            return
        if isinstance(v, (str, bytes, int, float, bool)) or v is None:
            return
        if isinstance(v, dict):
            if isinstance(v, TypedObject) and not _FLEX.match(v.alias):
                self._sighting(v.alias, [str(k) for k in v.keys()], list(v.sealed), v.dynamic)
            for x in v.values():
                self._collect(x, budget, depth + 1)
            return
        if isinstance(v, (list, tuple)):
            for x in v:
                self._collect(x, budget, depth + 1)
            return
        if hasattr(v, "__dict__") and not isinstance(v, type):
            alias = alias_of(v)
            members = attributes(v)
            if not _FLEX.match(alias):
                self._sighting(alias, [k for k, _ in members], [], True)
            for _, x in members:
                self._collect(x, budget, depth + 1)

    def _sighting(self, alias: str, members: list[str], sealed: list[str], dynamic: bool) -> None:
        cls = self.classes.get(alias)
        if cls is None:
            name = _ident(alias.rpartition(".")[2][:1].upper() + alias.rpartition(".")[2][1:], self.taken)
            cls = self.classes[alias] = _Class(alias, name, list(sealed), dynamic, list(sealed), set(members))
        elif sealed and not cls.sealed:
            cls.sealed, cls.dynamic = list(sealed), dynamic
        cls.always &= set(members)
        for m in members:
            if m not in cls.members:
                cls.members.append(m)

    def _class_name(self, alias: str) -> str:
        return self.classes[alias].name

    def _params(self, alias: str) -> dict[str, str]:
        cls = self.classes[alias]
        if not cls.params:
            taken: set[str] = set()
            cls.params = {m: _ident(m, taken) for m in cls.members}
        return cls.params

    # -- values ---------------------------------------------------------------------

    def value(self, v: Any, what: str) -> Node:
        """The node of a recorded value: literals, with what they cannot show kept as
        module constants holding its AMF3."""
        self._what = what
        return self.source.expr(v)

    def _keep(self, v: Any, why: str) -> str:
        name = f"_{self._what.upper()}_{len(self.blobs) + 1}"
        data = amf3.encode(v)
        if not self.opaque:
            try:
                amf3.decode(data)
            except DecodeError:
                self.opaque = True
        self.blobs.append((name, data, why))
        return name

    # -- text -----------------------------------------------------------------------

    def text(self) -> str:
        services: dict[str, dict[str, list[Call]]] = {}
        skipped: list[str] = []
        login = False
        for c in self.calls:
            if c.kind == "command":
                login = login or c.target == "command login"
                continue
            service, _, method = c.target.rpartition(".")
            if not service or not method.isidentifier() or keyword.iskeyword(method) or method.startswith("_") or service.startswith("_"):
                if c.target not in skipped:
                    skipped.append(c.target)
                continue
            services.setdefault(service, {}).setdefault(method, []).append(c)
        service_classes = {s: _ident(s.rpartition(".")[2] or "Service", self.taken) for s in services}
        body: list[str] = []
        for service, methods in services.items():
            body += ["", ""] + self._service(service, service_classes[service], methods)
        classes: list[str] = []
        for cls in self.classes.values():
            classes += ["", ""] + self._class(cls)
        head = self._head(services, skipped)
        out = head + classes + body
        if self.blobs:
            out += ["", ""]
            for name, data, why in self.blobs:
                out.append(f"# {why}")
                chunks = blob_text(data)
                one = f'{name} = _amf3("{chunks[0]}")'
                if len(chunks) == 1 and len(one) <= LINE:
                    out.append(one)
                else:
                    out += [f"{name} = _amf3("] + [f'    "{c}"' for c in chunks] + [")"]
        if login:
            out += ["", "", "def authenticate(user: str, password: str) -> Principal:"]
            out += ['    """The capture holds a login: every login succeeds here (write the real check)."""']
            out += ["    return Principal(user)"]
        entries = Group("", "{", [(string(s) + ": ", Atom(f"{service_classes[s]}()")) for s in services], "}")
        call = Group("Gateway", "(", [entries, *([("authenticator=", Atom("authenticate"))] if login else [])], ")", literal=False)
        out += ["", ""] + lines(call, "", "gateway = ")
        return "\n".join(out) + "\n"

    def _head(self, services: dict[str, Any], skipped: list[str]) -> list[str]:
        n_methods = sum(len(m) for m in services.values())
        what = ", ".join(self.sources) or "a capture"
        counts = f"{_plural(len(services), 'service')}, {_plural(n_methods, 'method')}, {_plural(len(self.calls), 'answered call')}"
        doc = [f'"""Services scaffolded by amfkit from {what}: {counts}.']
        doc += ["", "Each method returns what the capture recorded for its arguments: edit them into the"]
        doc += ["real thing. Serve the module with `amfkit serve MODULE:gateway`."]
        if skipped:
            doc += ["", "Targets left out (not Python method names): " + ", ".join(skipped) + "."]
        doc += ['"""']
        names = self.source.names
        imports = ["", "from __future__ import annotations", ""]
        stdlib = []
        if self.blobs:
            stdlib.append("import base64")
        if "array" in names:
            stdlib.append("import array")
        if "datetime" in names:
            stdlib.append("import datetime")
        if "math" in names:
            stdlib.append("import math")
        imports += sorted(stdlib) + ["from typing import Any", ""]
        amfkit_names = sorted(n for n in names if n not in ("array", "datetime", "math"))
        if self.classes:
            amfkit_names.append("register_class")
        if self.blobs:
            amfkit_names.append("amf3")
        amfkit_names = sorted(set(amfkit_names), key=lambda n: (n[0].islower(), n))
        one = f"from amfkit import {', '.join(amfkit_names)}"
        if amfkit_names and len(one) <= LINE:
            imports.append(one)
        elif amfkit_names:
            imports += ["from amfkit import ("] + [f"    {n}," for n in amfkit_names] + [")"]
        imports += ["from amfkit.remoting import Gateway"]
        services_names = []
        if any(c.fault is not None for c in self.calls):
            services_names.append("Fault")
        if any(c.target == "command login" for c in self.calls):
            services_names.append("Principal")
        if services_names:
            imports += [f"from amfkit.remoting.services import {', '.join(services_names)}"]
        helpers: list[str] = []
        if self.blobs:
            helpers += ["", "", "def _amf3(data: str) -> Any:"]
            helpers += ['    """A recorded value that Python literals cannot show, kept as its AMF3 bytes."""']
            if self.opaque:
                # An externalizable class nobody registered, kept as its bytes: read back so.
                helpers += ['    return amf3.decode(base64.b64decode(data), unknown_externalizable="opaque")']
            else:
                helpers += ["    return amf3.decode(base64.b64decode(data))"]
        return doc + imports + helpers

    def _class(self, cls: _Class) -> list[str]:
        params = self._params(cls.alias)
        sealed = f"sealed members {', '.join(cls.sealed)}" if cls.sealed else "no sealed members"
        out = [f"class {cls.name}:", f'    """AMF class {string(cls.alias)}: {sealed}{", dynamic" if cls.dynamic else ""} (as recorded)."""', ""]
        args = [Atom("self")] + [(f"{params[m]}: Any = ", Atom("None" if m in cls.always or m in cls.sealed else "Undefined")) for m in cls.members]
        if any(m not in cls.always and m not in cls.sealed for m in cls.members):
            self.source.names.add("Undefined")
        out += lines(Group("def __init__", "(", args, ")", literal=False), "    ", "", " -> None:")
        for m in cls.members:
            p = params[m]
            assign = f"self.{m} = {p}" if p == m else f"setattr(self, {string(m)}, {p})"
            if m in cls.always or m in cls.sealed:
                out.append(f"        {assign}")
            else:
                out += [f"        if {p} is not Undefined:", f"            {assign}"]
        if not cls.members:
            out.append("        pass")
        out += ["", "    def __eq__(self, other: object) -> bool:", "        return type(other) is type(self) and vars(other) == vars(self)"]
        out += ["", "    def __repr__(self) -> str:", '        return f"{type(self).__name__}({vars(self)!r})"']
        reg: list[Any] = [Atom(cls.name), Atom(string(cls.alias))]
        if cls.sealed:
            reg.append(("static=", Group("", "(", [Atom(string(s)) for s in cls.sealed], ")", one_tuple=len(cls.sealed) == 1)))
        if not cls.dynamic:
            reg.append(("dynamic=", Atom("False")))
        out += ["", ""] + lines(Group("register_class", "(", reg, ")", literal=False), "")
        return out

    def _service(self, service: str, name: str, methods: dict[str, list[Call]]) -> list[str]:
        out = [f"class {name}:", f'    """{service}: {len(methods)} method{"s" if len(methods) != 1 else ""} recorded."""']
        for method, calls in methods.items():
            out += [""] + self._method(service, method, calls)
        return out

    def _method(self, service: str, method: str, calls: list[Call]) -> list[str]:
        arity = max(len(c.arguments) for c in calls)
        least = min(len(c.arguments) for c in calls)
        taken = {"self"} | _MODULE_NAMES
        names = [_ident(self._guess(method, [c.arguments[i] for c in calls if i < len(c.arguments)], i, arity), taken) for i in range(arity)]
        params = [Atom("self")] + [(f"{n}: Any" + (" = None" if i >= least else ""), Atom("")) for i, n in enumerate(names)]
        out = lines(Group(f"def {method}", "(", [p if isinstance(p, Atom) else Atom(p[0]) for p in params], ")", literal=False), "    ", "", " -> Any:")
        n = len(calls)
        out.append(f'        """{service}.{method}: recorded {n} time{"s" if n != 1 else ""}."""')
        # The answer of each distinct argument list (the last one recorded for it), in
        # first-seen order; the default is the last call's answer.
        answers: dict[Any, tuple[list[Any], Call]] = {}
        for c in calls:
            k = _match.key(c.arguments)
            answers[k] = (list(c.arguments) + [None] * (arity - len(c.arguments)), c)
        default = calls[-1]
        dkey = _answer_key(default)
        for args, c in answers.values():
            if _answer_key(c) == dkey:
                continue
            if arity == 1:
                out += self._if(names[0], self.value(args[0], "arg"))
            elif arity == 0:
                continue
            else:
                lhs = "(" + ", ".join(names) + ")"
                out += self._if(lhs, Group("", "(", [self.value(a, "arg") for a in args], ")"))
            out += self._outcome(c, "            ")
        out += self._outcome(default, "        ")
        return out

    def _if(self, lhs: str, rhs: Node) -> list[str]:
        text = lines(rhs, "        ", f"if {lhs} == ", ":")
        if len(text) == 1 and len(text[0]) > LINE and isinstance(rhs, Atom):
            inner = f"            {lhs} == {rhs.text}"
            if len(inner) <= LINE:
                return ["        if (", inner, "        ):"]
            return ["        if (", f"            {lhs}", f"            == {rhs.text}", "        ):"]
        return text

    def _outcome(self, c: Call, indent: str) -> list[str]:
        if c.fault is not None:
            code, message, details = c.fault
            items: list[Any] = [Atom(string(message)), ("code=", Atom(string(code or "Server.Processing")))]
            if details is not None:
                items.append(("details=", self.value(details, "details")))
            return lines(Group("Fault", "(", items, ")", literal=False), indent, "raise ")
        return lines(self.value(c.result, "result"), indent, "return ")

    def _guess(self, method: str, values: list[Any], index: int, arity: int) -> str:
        """A parameter's name from the values recorded at its place (and the method's
        name: getUserById's last argument is `id`)."""
        v = next((x for x in values if x is not None), None)
        m = re.search(r"By([A-Z][A-Za-z0-9]*)$", method)
        if m and index == arity - 1 and isinstance(v, (str, int, float)):
            return _snake(m.group(1))
        if isinstance(v, TypedObject) or (v is not None and hasattr(v, "__dict__") and not isinstance(v, type)):
            return _snake((v.alias if isinstance(v, TypedObject) else alias_of(v)).rpartition(".")[2])
        if isinstance(v, bool):
            return "flag"
        if isinstance(v, (int, float)):
            return "number"
        if isinstance(v, str):
            return "text"
        if isinstance(v, (bytes, bytearray)):
            return "data"
        if isinstance(v, datetime.date):
            return "date"
        if isinstance(v, dict):
            return "params"
        if isinstance(v, (list, tuple)):
            return "items"
        return f"arg{index + 1}" if v is None else _snake(type(v).__name__)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _answer_key(c: Call) -> Any:
    if c.fault is not None:
        return ("fault", c.fault[0], c.fault[1], _match.key(c.fault[2]))
    return ("ok", _match.key(c.result))


def scaffold(calls: list[Call], *, sources: list[str] | None = None) -> str:
    """The text of a services module answering `calls` (a capture's, `capture.calls_of`)."""
    return _Module(list(calls), list(sources or [])).text()

