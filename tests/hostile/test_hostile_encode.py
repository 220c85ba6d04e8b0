"""The encode side, in the child process: a cycle through every container encodes as
references and decodes back to the same cycle (AMF0 and AMF3); 100,000-deep nesting
through every container is a clean EncodeError naming the limit (1024), never a
RecursionError or a crash; `default=` hooks that never produce something encodable
(returning their argument, or a new unknown object, forever) end with an EncodeError;
`default=` hooks that empty the dict, list or instance being written (freeing the
values the encoder has not reached yet), replace an instance's `__dict__`, or drop the
container being written from its parent (freeing it but for what the encoder holds)
never crash it: the encode ends, or refuses with an EncodeError. A stream of values
(`encode_all`, a .sol's members) whose iterator frees each value after it is written
never has a later value taken for a reference to a freed one. Those run with
PYTHONMALLOC=debug, which overwrites freed memory, so a read after a free shows.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from .harness import Case, expect_ok, run

BUILDERS = """
def wrap(kind, inner):
    if kind == "list":
        return [inner]
    if kind == "tuple":
        return (inner,)
    if kind == "dict":
        return {"a": inner}
    if kind == "mixed-array":
        return amfkit.MixedArray({"a": inner})
    if kind == "typed-object":
        return amfkit.TypedObject("T", {"a": inner})
    if kind == "registered":
        r = Recorder.__new__(Recorder)
        object.__setattr__(r, "a", inner)
        return r
    if kind == "dictionary-value":
        return amfkit.Dictionary({"k": inner})
    if kind == "dictionary-key":
        return amfkit.Dictionary({amfkit.ObjectKey(inner): 1})
    if kind == "object-vector":
        return amfkit.ObjectVector([inner])
    if kind == "array-collection":
        return amfkit.ArrayCollection([inner])
    if kind == "object-proxy":
        return amfkit.ObjectProxy({"a": inner})
    raise ValueError(kind)


def step(kind, v):
    if kind in ("list", "tuple", "object-vector", "array-collection"):
        return v[0]
    if kind == "registered":
        return v.a
    if kind == "dictionary-value":
        return v["k"]
    if kind == "dictionary-key":
        return next(iter(v)).value
    return v["a"]


def cycle(kind):
    if kind == "tuple":  # a tuple cannot hold itself: a tuple holding a list holding it
        holder = []
        root = (holder,)
        holder.append(root)
        return root
    root = wrap(kind, None)
    if kind in ("list", "object-vector", "array-collection"):
        root[0] = root
    elif kind == "registered":
        object.__setattr__(root, "a", root)
    elif kind == "dictionary-value":
        root["k"] = root
    elif kind == "dictionary-key":
        root.clear()
        root[amfkit.ObjectKey(root)] = 1
    else:
        root["a"] = root
    return root


def deep(kind, n):
    v = None
    for _ in range(n):
        v = wrap(kind, v)
    return v
"""
KINDS = [
    "list",
    "tuple",
    "dict",
    "mixed-array",
    "typed-object",
    "registered",
    "dictionary-value",
    "dictionary-key",
    "object-vector",
    "array-collection",
    "object-proxy",
]
CODECS = ["amf0", "amf3"]

CYCLE = """
enc = {{"amf0": amf0, "amf3": amf3}}["{codec}"]
root = cycle("{kind}")
data = enc.encode(root)
back = enc.decode(data)
node = step("{kind}", back)
if "{kind}" == "tuple":
    node = node[0]  # the list, then back to the root (a tuple decodes as a list)
result = {{"same": node is back, "type": type(back).__name__, "size": len(data), "again": enc.encode(back) == data}}
"""

DEEP = """
import sys
value = deep("{kind}", 100_000)
try:
    {call}
except amfkit.EncodeError as e:
    result = {{"raised": "EncodeError", "reason": e.reason, "path_head": e.path[:12]}}
except BaseException as e:
    result = {{"raised": type(e).__name__, "reason": str(e)[:200]}}
else:
    result = {{"raised": None}}
result["recursion_limit_untouched"] = sys.getrecursionlimit() == 1000
"""
DEEP_CALLS = {
    "amf0": "amf0.encode(value)",
    "amf3": "amf3.encode(value)",
    "packet-amf0": "packet.encode(packet.Envelope(0, bodies=[packet.Body('t', '/1', value)]))",
    "packet-amf3": "packet.encode(packet.Envelope(3, bodies=[packet.Body('t', '/1', value)]))",
    "packet-header": "packet.encode(packet.Envelope(0, headers=[packet.Header('h', value)]))",
}

#: Every container through both codecs; packets (header, AMF0 and AMF3 bodies) with lists.
DEEP_PAIRS = [(k, t) for k in KINDS for t in DEEP_CALLS if k == "list" or not t.startswith("packet")]


DEFAULTS = {
    "returns-its-argument": "lambda o: o",
    "returns-a-new-object": "lambda o: object()",
    "wraps-in-a-list": "lambda o: [o]",
    "wraps-in-a-dict": "lambda o: {'x': o}",
    "wraps-in-a-typed-object": "lambda o: amfkit.TypedObject('T', {'x': o})",
}
DEFAULT = """
class Opaque:
    pass

try:
    {codec}.encode([1, Opaque()], default={hook})
except amfkit.EncodeError as e:
    result = {{"raised": "EncodeError", "reason": e.reason}}
except BaseException as e:
    result = {{"raised": type(e).__name__, "reason": str(e)[:200]}}
else:
    result = {{"raised": None}}
"""


#: Hooks that change the container holding the object they are called for, while the
#: encoder is inside it; the other values are held by that container alone, so emptying
#: it frees them (and the garbage made afterwards may take their memory).
MUTATORS = {
    "dict-cleared": ("holder = {'a': 'x' * 40 + str(1), 'u': Opaque(), 'b': 'y' * 40 + str(2), 'n': 10 ** 30, 'f': 1.5, 'l': [str(3) * 9]}", "holder.clear()"),
    "list-cleared": ("holder = ['x' * 40 + str(1), Opaque(), 'y' * 40 + str(2), 10 ** 30, [str(3) * 9]]", "holder.clear()"),
    "instance-dict-cleared": ("holder = Recorder.__new__(Recorder); holder.__dict__.update(a='x' * 40 + str(1), u=Opaque(), b='y' * 40 + str(2), l=[str(3) * 9])", "holder.__dict__.clear()"),
    "nested-dict-dropped": ("holder = [{'a': 'x' * 40 + str(1), 'u': Opaque(), 'b': 'y' * 40 + str(2)}, 'z' * 40 + str(4)]", "holder.clear()"),
    # The encoder walks these on the reference of the container that holds them; the
    # hook drops that reference while the walk is inside them.
    "instance-dict-replaced": ("holder = Recorder.__new__(Recorder); holder.__dict__.update(a='x' * 40 + str(1), u=Opaque(), b='y' * 40 + str(2), l=[str(3) * 9])", "object.__setattr__(holder, '__dict__', {})"),
    "instance-dropped": ("inner = Recorder.__new__(Recorder); inner.__dict__.update(a='x' * 40 + str(1), u=Opaque(), b='y' * 40 + str(2), l=[str(3) * 9]); holder = [inner, 'z' * 40 + str(4)]; del inner", "holder.clear()"),
    "dict-in-dict-dropped": ("holder = {'k': {'a': 'x' * 40 + str(1), 'u': Opaque(), 'b': 'y' * 40 + str(2), 'l': [str(3) * 9]}, 'z': 'z' * 40 + str(4)}", "holder.clear()"),
    "list-in-list-dropped": ("holder = [['x' * 40 + str(1), Opaque(), 'y' * 40 + str(2), [str(3) * 9]], 'z' * 40 + str(4)]", "holder.clear()"),
    "deep-dropped": ("holder = [[{'k': [{'a': 'x' * 40 + str(1), 'u': Opaque(), 'b': 'y' * 40 + str(2)}]}]]", "holder.clear()"),
}
MUTATE = """
class Opaque:
    pass

{build}

def hook(o):
    {mutate}
    garbage = [str(i) * 7 for i in range(2000)]  # reuse the freed memory
    return "replaced"

try:
    data = {codec}.encode(holder, default=hook)
except amfkit.EncodeError as e:
    result = {{"raised": "EncodeError", "reason": e.reason}}
else:
    back = {codec}.decode(data)
    result = {{"raised": None, "decoded": type(back).__name__}}
"""


def cases() -> list[Case]:
    out = []
    for kind in KINDS:
        for codec in CODECS:
            out.append(Case(f"cycle/{kind}/{codec}", "python", b"", {"snippet": BUILDERS + CYCLE.format(kind=kind, codec=codec)}))
    for kind, target in DEEP_PAIRS:
        snippet = "from amfkit.remoting import packet\n" + BUILDERS + DEEP.format(kind=kind, call=DEEP_CALLS[target])
        out.append(Case(f"deep/{kind}/{target}", "python", b"", {"snippet": snippet}))
    for name, hook in DEFAULTS.items():
        for codec in CODECS:
            out.append(Case(f"default/{name}/{codec}", "python", b"", {"snippet": DEFAULT.format(codec=codec, hook=hook)}))
    return out


#: Values whose containers are freed between two values of one stream (the caller's
#: iterator drops each after it is written): the reference tables must never take a
#: later object at a freed one's address for it.
BETWEEN = {
    "encode-all-generator": """
def values():
    for i in range(300):
        shared = ['x' * 30 + str(i)]
        yield [shared, shared, {{'k': shared}}]
        garbage = [str(j) * 7 for j in range(40)]

data = {codec}.Encoder().encode_all(values())
back = {codec}.Decoder().decode_all(data)
""",
    "sol-items-generator": """
import collections.abc
from amfkit import sol

class Members(collections.abc.Mapping):
    amf_version = {version}
    def __getitem__(self, name):
        raise KeyError(name)
    def __iter__(self):
        return iter(())
    def __len__(self):
        return 300
    def items(self):
        for i in range(300):
            shared = ['x' * 30 + str(i)]
            yield 'm' + str(i), [shared, shared, {{'k': shared}}]
            garbage = [str(j) * 7 for j in range(40)]

back = list(sol.loads(sol.dumps(Members())).values())
""",
}
BETWEEN_CHECK = """
result = {{
    "count": len(back),
    "shared_kept": all(b[0] is b[1] is b[2]['k'] for b in back),
    "right_values": all(b[0] == ['x' * 30 + str(i)] for i, b in enumerate(back)),
}}
"""


def mutate_cases() -> list[Case]:
    out = []
    for name, snippet in BETWEEN.items():
        for codec in CODECS:
            text = snippet.format(codec=codec, version=codec[-1]) + BETWEEN_CHECK.format()
            out.append(Case(f"between/{name}/{codec}", "python", b"", {"snippet": text}))
    for name, (build, mutate) in MUTATORS.items():
        for codec in CODECS:
            snippet = MUTATE.format(codec=codec, build=build, mutate=mutate)
            out.append(Case(f"mutate/{name}/{codec}", "python", b"", {"snippet": snippet}))
    return out


@functools.cache
def results() -> dict[str, Any]:
    return run(cases())


@functools.cache
def mutate_results() -> dict[str, Any]:
    return run(mutate_cases(), env={"PYTHONMALLOC": "debug"})


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("kind", KINDS)
def test_cycles_encode_as_references(kind: str, codec: str) -> None:
    o = results()[f"cycle/{kind}/{codec}"]
    value = expect_ok(o, seconds=0.1)
    assert value["same"] and value["again"] and value["size"] < 64, o.describe()


@pytest.mark.parametrize("kind, target", DEEP_PAIRS)
def test_100000_deep_encode_is_an_encode_error(kind: str, target: str) -> None:
    o = results()[f"deep/{kind}/{target}"]
    value = expect_ok(o)
    assert value["raised"] == "EncodeError", o.describe()
    assert value["reason"] == "nesting deeper than the limit of 1024", o.describe()
    assert value["recursion_limit_untouched"], o.describe()


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("name", DEFAULTS)
def test_default_hooks_that_never_end(name: str, codec: str) -> None:
    o = results()[f"default/{name}/{codec}"]
    value = expect_ok(o)
    assert value == {"raised": "EncodeError", "reason": "nesting deeper than the limit of 1024"}, o.describe()


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("name", MUTATORS)
def test_hooks_that_empty_the_container_being_written(name: str, codec: str) -> None:
    o = mutate_results()[f"mutate/{name}/{codec}"]
    value = expect_ok(o)
    if name == "list-cleared":
        assert value == {"raised": "EncodeError", "reason": "a list changed size while being encoded"}, o.describe()
    else:
        assert value["raised"] is None or value["raised"] == "EncodeError", o.describe()


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("name", BETWEEN)
def test_values_freed_between_values_of_one_stream(name: str, codec: str) -> None:
    o = mutate_results()[f"between/{name}/{codec}"]
    value = expect_ok(o)
    assert value == {"count": 300, "shared_kept": True, "right_values": True}, o.describe()
