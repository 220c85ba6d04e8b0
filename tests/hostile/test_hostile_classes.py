"""Class aliases chosen by an attacker. An unregistered alias, whatever it names (a
module path, a Java gadget, a dunder, a lookalike of a registered or built-in alias),
decodes to `amfkit.TypedObject`: no module is imported (sys.modules and the audit hook's
"import" events are compared around the decode, for modules the child has not imported),
no file, socket or process is touched, no constructor runs. An unregistered
externalizable alias is a DecodeError (its body cannot be read).

A registered class is created with `cls.__new__(cls)` and nothing else: `__init__`,
`__setattr__`, `__setstate__` and `__reduce__` are never called (the Recorder class in
the harness logs each). Member names that are dunders are refused with a DecodeError;
members the class does not declare are kept (dynamic, the default), dropped
(`dynamic=False`), or refused with a DecodeError when the class cannot hold them
(`__slots__`, a read-only property).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from gateway_util import raw_packet
from wire import ARRAY_COLLECTION, s3, typed3, utf

from .harness import Case, expect_decode_error, expect_ok, run

DANGEROUS = [
    "os.system",
    "subprocess.Popen",
    "builtins.eval",
    "builtins.__import__",
    "__main__.X",
    "__main__.Recorder",  # the harness's registered class, under its Python name
    "__builtins__",
    "__class__",
    "__reduce__",
    "hostile.Recorder ",  # lookalikes of a registered alias
    "Hostile.Recorder",
    "flex.messaging.io.ArrayCollection ",  # lookalikes of the built-in Flex aliases
    "flex.messaging.io.ArrayCollection\x00",
    "Flex.Messaging.IO.ArrayCollection",
    "flex.messaging.io.ArrayCollectionX",
    "flex/messaging/io/ArrayCollection",
    "java.lang.Runtime",
    "java.lang.ProcessBuilder",
    "org.apache.commons.collections.functors.InvokerTransformer",
    "com.sun.rowset.JdbcRowSetImpl",
    "javax.management.loading.MLet",
    "antigravity.X",
    "this.X",
    "tkinter.Tk",
    "xml.dom.minidom.Document",
    "webbrowser.open",
    "smtplib.SMTP",
    "ctypes.CDLL",
    "importlib.import_module",
    "amfkit._amfkit",
    "\u03bfs.system",  # Greek omicron
    "../../etc/passwd",
]
#: Stdlib modules the child has not imported: a decode that imported any would show.
NOT_IMPORTED = ("antigravity", "this", "tkinter", "xml.dom.minidom", "webbrowser", "smtplib", "ctypes")


def shapes(alias: str) -> dict[str, tuple[str, bytes]]:
    """Every place a class alias can come from: (codec, bytes), each with member a = 1."""
    return {
        "amf0-typed": ("amf0", b"\x10" + utf(alias) + utf("a") + b"\x00\x3f\xf0\x00\x00\x00\x00\x00\x00\x00\x00\x09"),
        "amf3-dynamic": ("amf3", typed3(alias) + s3("a") + b"\x04\x01\x01"),
        "amf3-sealed": ("amf3", typed3(alias, dynamic=False, sealed=("a",)) + b"\x04\x01"),
        "amf3-vector-type": ("amf3", b"\x10\x03\x00" + s3(alias) + typed3(alias) + s3("a") + b"\x04\x01\x01"),
        "amf0-avmplus": ("amf0", b"\x11" + typed3(alias) + s3("a") + b"\x04\x01\x01"),
        "packet": ("packet", raw_packet(3, [("t", "/1", b"\x11" + typed3(alias) + s3("a") + b"\x04\x01\x01")])),
        "gateway": ("gateway", raw_packet(3, [("EchoService.echo", "/1", b"\x0a\x00\x00\x00\x01\x11" + typed3(alias) + s3("a") + b"\x04\x01\x01")])),
    }


def externalizable(alias: str) -> dict[str, tuple[str, bytes]]:
    return {
        "amf3": ("amf3", typed3(alias, externalizable=True) + b"\x04\x01"),
        "packet": ("packet", raw_packet(3, [("t", "/1", b"\x11" + typed3(alias, externalizable=True) + b"\x04\x01")])),
    }


REC = "hostile.Recorder"
STATIC = "hostile.StaticRecorder"
DUNDERS = ["__class__", "__dict__", "__init__", "__reduce__", "__setattr__", "__new__", "__weakref__", "__slots__", "__x__"]
REGISTERED = {"recorder": REC, "static": STATIC, "slotted": "hostile.Slotted"}


def members3(alias: str, names: list[str], sealed: bool = False) -> bytes:
    if sealed:
        return typed3(alias, dynamic=False, sealed=tuple(names)) + b"\x04\x01" * len(names)
    return typed3(alias) + b"".join(s3(n) + b"\x04\x01" for n in names) + b"\x01"


def members0(alias: str, names: list[str]) -> bytes:
    return b"\x10" + utf(alias) + b"".join(utf(n) + b"\x05" for n in names) + b"\x00\x00\x09"


def cases() -> list[Case]:
    warm = raw_packet(3, [("EchoService.echo", "/1", b"\x0a\x00\x00\x00\x01\x11" + typed3("warm") + b"\x01")])
    out = [Case("warm-up/gateway", "gateway", warm)]
    for alias in DANGEROUS:
        for shape, (codec, data) in shapes(alias).items():
            out.append(Case(f"typed/{shape}/{alias!r}", "watch", data, {"codec": codec, "probe": NOT_IMPORTED}))
        for shape, (codec, data) in externalizable(alias).items():
            out.append(Case(f"external/{shape}/{alias!r}", "watch", data, {"codec": codec, "probe": NOT_IMPORTED}))
    # registered classes: what runs, and which members arrive
    plain = ["a", "b"]
    out.append(Case("registered/amf0", "watch", members0(REC, plain), {"codec": "amf0"}))
    out.append(Case("registered/amf3", "watch", members3(REC, plain), {"codec": "amf3"}))
    out.append(Case("registered/amf3-sealed", "watch", members3(REC, plain, sealed=True), {"codec": "amf3"}))
    out.append(Case("registered/packet", "watch", raw_packet(0, [("t", "/1", members0(REC, plain))]), {"codec": "packet"}))
    for key, alias in REGISTERED.items():
        for dunder in DUNDERS:
            out.append(Case(f"dunder/{key}/amf0/{dunder}", "watch", members0(alias, ["a", dunder]), {"codec": "amf0"}))
            out.append(Case(f"dunder/{key}/amf3/{dunder}", "watch", members3(alias, ["a", dunder]), {"codec": "amf3"}))
            out.append(Case(f"dunder/{key}/amf3-sealed/{dunder}", "watch", members3(alias, ["a", dunder], sealed=True), {"codec": "amf3"}))
        for codec, data in (("amf0", members0(alias, ["a", "zz"])), ("amf3", members3(alias, ["a", "zz"])), ("amf3-sealed", members3(alias, ["a", "zz"], sealed=True))):
            out.append(Case(f"unknown/{key}/{codec}", "watch", data, {"codec": codec[:4]}))
    for dunder in DUNDERS:
        out.append(Case(f"dunder/unregistered/{dunder}", "watch", members3("Unregistered", ["a", dunder]), {"codec": "amf3"}))
    out.append(Case("read-only-property", "watch", members3("hostile.ReadOnly", ["a"]), {"codec": "amf3"}))
    out.append(Case("kind/registered-says-externalizable", "watch", typed3(REC, externalizable=True) + b"\x01", {"codec": "amf3"}))
    out.append(Case("kind/externalizable-says-not", "watch", members3("hostile.External", ["inner"]), {"codec": "amf3"}))
    out.append(Case("kind/array-collection-not-externalizable", "watch", members3(ARRAY_COLLECTION, ["a"]), {"codec": "amf3"}))
    return out


@functools.cache
def results() -> dict[str, Any]:
    return run(cases())


def watched(case_id: str) -> dict[str, Any]:
    o = results()[case_id]
    value = expect_ok(o)
    assert value["events"] == [], "audit events during the decode\n  " + o.describe()
    assert value["new_modules"] == [], "modules imported during the decode\n  " + o.describe()
    assert value["probed"][1] == value["probed"][0], o.describe()
    return value


def test_the_probed_modules_were_not_imported_before() -> None:
    for shape in shapes("x"):
        value = watched(f"typed/{shape}/{'antigravity.X'!r}")
        assert value["probed"] == [[], []], value


@pytest.mark.parametrize("alias", DANGEROUS, ids=repr)
@pytest.mark.parametrize("shape", list(shapes("x")))
def test_unregistered_aliases_stay_typed_objects(shape: str, alias: str) -> None:
    o = results()[f"typed/{shape}/{alias!r}"]
    value = watched(o.case.id)
    assert value["raised"] is None and value["calls"] == [], o.describe()
    if shape == "gateway":
        assert value["status"] == 200, o.describe()
    elif shape == "amf3-vector-type":
        assert value["type"] == "ObjectVector" and value["type_name"] == alias, o.describe()
    elif shape != "packet":
        assert value["type"] == "TypedObject" and value["alias"] == alias and value["members"] == ["a"], o.describe()


@pytest.mark.parametrize("alias", DANGEROUS, ids=repr)
@pytest.mark.parametrize("shape", ["amf3", "packet"])
def test_unregistered_externalizable_aliases_are_refused(shape: str, alias: str) -> None:
    o = results()[f"external/{shape}/{alias!r}"]
    value = watched(o.case.id)
    assert value["raised"] is not None and value["raised"]["type"] == "DecodeError", o.describe()
    assert "is not registered, its body cannot be read" in value["raised"]["reason"], o.describe()
    assert value["calls"] == []


@pytest.mark.parametrize("shape", ["amf0", "amf3", "amf3-sealed", "packet"])
def test_registered_class_is_built_with_new_only(shape: str) -> None:
    value = watched(f"registered/{shape}")
    assert value["raised"] is None
    assert value["calls"] == ["__new__(){}"], value
    if shape != "packet":
        assert value["attrs"] == ["a", "b"], value


@pytest.mark.parametrize("dunder", DUNDERS)
@pytest.mark.parametrize("key", REGISTERED)
@pytest.mark.parametrize("shape", ["amf0", "amf3", "amf3-sealed"])
def test_dunder_members_are_refused(shape: str, key: str, dunder: str) -> None:
    o = results()[f"dunder/{key}/{shape}/{dunder}"]
    value = watched(o.case.id)
    assert value["raised"] is not None and value["raised"]["type"] == "DecodeError", o.describe()
    assert f'member "{dunder}" is not allowed on registered class' in value["raised"]["reason"], o.describe()
    # AMF3 sealed names are checked with the traits, before any object is made
    assert value["calls"] in ([], ["__new__(){}"]), o.describe()


@pytest.mark.parametrize("dunder", DUNDERS)
def test_dunder_members_of_unregistered_aliases_are_plain_keys(dunder: str) -> None:
    value = watched(f"dunder/unregistered/{dunder}")
    assert value["type"] == "TypedObject" and value["members"] == sorted(["a", dunder]), value


@pytest.mark.parametrize("codec", ["amf0", "amf3", "amf3-sealed"])
def test_unknown_members(codec: str) -> None:
    # dynamic (the default): kept
    value = watched(f"unknown/recorder/{codec}")
    assert value["raised"] is None and value["attrs"] == ["a", "zz"], value
    # static=("a",), dynamic=False: dropped
    value = watched(f"unknown/static/{codec}")
    assert value["raised"] is None and value["attrs"] == ["a"] and value["calls"] == ["__new__(){}"], value
    # __slots__ = ("a",): the class cannot hold it, so the input is refused
    value = watched(f"unknown/slotted/{codec}")
    assert value["raised"] == {
        "type": "DecodeError",
        "reason": 'member "zz" cannot be set on registered class "hostile.Slotted"',
        "offset": value["raised"]["offset"],
    }, value


def test_read_only_property_member_is_refused() -> None:
    value = watched("read-only-property")
    assert value["raised"]["type"] == "DecodeError", value
    assert value["raised"]["reason"] == 'member "a" cannot be set on registered class "hostile.ReadOnly"', value


def test_externalizable_flag_must_match_the_registration() -> None:
    for case_id in ("kind/registered-says-externalizable", "kind/externalizable-says-not"):
        value = watched(case_id)
        assert value["raised"]["type"] == "DecodeError" and "is registered as" in value["raised"]["reason"], value
        assert value["calls"] == []
    # the Flex alias written as an ordinary typed object is just a typed object
    value = watched("kind/array-collection-not-externalizable")
    assert value["raised"] is None and value["type"] == "TypedObject", value
