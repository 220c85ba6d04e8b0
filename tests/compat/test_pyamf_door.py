"""amfkit.compat.pyamf against Py3AMF itself: the same calls give the same bytes and the
same shapes back, what Py3AMF writes the door reads (and the other way), references and
cycles survive, and what the door refuses it refuses with a clear error."""

from __future__ import annotations

import datetime
import io
import subprocess
import sys
import textwrap

import peers  # tests/support/peers.py: imports Py3AMF (the peer) with its import-time warnings silenced
import pyamf.remoting as real_remoting
import pyamf.sol as real_sol
import pyamf.util
import pytest

import amfkit
import amfkit.compat.pyamf as door
from amfkit.compat.pyamf import flex, remoting, sol, util

real, real_flex = peers.pyamf, peers.pyamf.flex
AMF0, AMF3 = door.AMF0, door.AMF3
# Py3AMF (the peer) reads dates with a call CPython 3.12+ deprecates.
pytestmark = pytest.mark.filterwarnings(r"ignore:datetime\.datetime\.utcfromtimestamp:DeprecationWarning")
ENCODINGS = pytest.mark.parametrize("encoding", [AMF0, AMF3], ids=["amf0", "amf3"])


class Point:
    class __amf__:
        static = ("y", "x")

    def __init__(self, x=0, y=0):
        self.x = x
        self.y = y


@pytest.fixture
def registered():
    """Point registered with both libraries under one alias."""
    door.register_class(Point, "org.amfkit.test.Point")
    real.register_class(Point, "org.amfkit.test.Point")
    yield
    door.unregister_class(Point)
    real.unregister_class(Point)


def both(make):
    """The value `make(lib)` builds with each library's types: (door's, Py3AMF's)."""
    return make(door), make(real)


SAMPLES = {
    "scalars": lambda lib: [None, True, False, 0, -1, 2**28, 2**40, 1.5, "héllo ✓", ""],
    "nested": lambda lib: {"a": [1, {"b": "c"}], "d": {"e": None}},
    "date": lambda lib: datetime.datetime(2009, 2, 13, 23, 31, 30, 123000),
    "undefined": lambda lib: [lib.Undefined, 1],
    "asobject": lambda lib: lib.ASObject(name="Ada", tags=["x"]),
    "mixed": lambda lib: lib.MixedArray(a=1, b="two"),
    "shared": lambda lib: (lambda shared: [shared, shared, {"again": shared}])({"k": 1}),
    "strings": lambda lib: ["same", "same", "other", "same"],
}


@ENCODINGS
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_same_bytes_as_py3amf(name, encoding):
    ours, theirs = both(SAMPLES[name])
    assert door.encode(ours, encoding=encoding).getvalue() == real.encode(theirs, encoding=encoding).getvalue()


@ENCODINGS
def test_registered_classes_the_same_bytes_both_ways(registered, encoding):
    p = Point(1, 2)
    p.label = "dynamic member"
    data = door.encode(p, encoding=encoding).getvalue()
    assert data == real.encode(p, encoding=encoding).getvalue()
    back = next(door.decode(data, encoding=encoding))
    assert type(back) is Point and vars(back) == vars(p)
    back = next(real.decode(data, encoding=encoding))
    assert type(back) is Point and vars(back) == vars(p)


def test_flex_collections_the_same_bytes_as_py3amf():
    ours = door.encode(flex.ArrayCollection(["eggs", 1]), flex.ObjectProxy({"a": "spam"})).getvalue()
    theirs = real.encode(real_flex.ArrayCollection(["eggs", 1]), real_flex.ObjectProxy(real.ASObject(a="spam"))).getvalue()
    assert ours == theirs
    collection, proxy = door.decode(theirs)
    assert type(collection) is flex.ArrayCollection and collection == ["eggs", 1]
    assert type(proxy) is flex.ObjectProxy and proxy.a == "spam" and proxy._amf_object["a"] == "spam"
    # In AMF0 they are the array and the object they hold, each through the AVM+ switch.
    assert door.encode(flex.ArrayCollection(["eggs"]), encoding=AMF0).getvalue() == real.encode(
        real_flex.ArrayCollection(["eggs"]), encoding=AMF0
    ).getvalue()


@ENCODINGS
def test_what_py3amf_writes_reads_back_in_pyamf_shapes(encoding):
    shared = real.ASObject(k=1)
    data = real.encode({"list": [shared, shared], "mixed": real.MixedArray(a=1), "u": real.Undefined}, encoding=encoding).getvalue()
    back = next(door.decode(data, encoding=encoding))
    assert type(back) is door.ASObject and back.list[0].k == 1
    assert back.list[0] is back.list[1]
    assert type(back.mixed) is door.MixedArray and back.mixed == {"a": 1}
    assert back.u is door.Undefined


def test_cycles_and_shared_objects_stay_so_through_the_reshaping():
    a: dict = {"name": "a"}
    a["self"] = a
    lst: list = [a]
    lst.append(lst)
    for encoding in (AMF0, AMF3):
        back = next(door.decode(door.encode({"a": a, "lst": lst, "again": a}, encoding=encoding).getvalue(), encoding=encoding))
        assert back.a.self is back.a and back.again is back.a
        assert back.lst[0] is back.a and back.lst[1] is back.lst


def test_a_stream_of_values_shares_one_context_as_in_py3amf():
    shared = {"k": 1}
    assert door.encode("s", ["s", shared], shared).getvalue() == real.encode("s", ["s", shared], shared).getvalue()
    encoder = door.get_encoder(AMF3)
    for value in ("s", ["s", shared], shared):
        encoder.writeElement(value)
    assert encoder.stream.getvalue() == real.encode("s", ["s", shared], shared).getvalue()
    decoder = door.get_decoder(AMF3, encoder.stream.getvalue())
    values = []
    while not decoder.stream.at_eof():
        values.append(decoder.readElement())
    assert values[0] == "s" and values[1][1] is values[2]
    with pytest.raises(door.EOStream):
        decoder.readElement()
    assert list(door.decode(io.BytesIO(encoder.stream.getvalue()))) == ["s", ["s", {"k": 1}], {"k": 1}]


def test_default_encoding_is_the_packages_setting(monkeypatch):
    monkeypatch.setattr(door, "DEFAULT_ENCODING", AMF0)
    assert door.encode("foo").getvalue() == b"\x02\x00\x03foo"


# -- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"\x06\x07fo", b"\x0a", b"\x04\xff"], ids=["string", "object", "integer"])
def test_data_that_ends_too_soon_is_a_decode_error_and_an_ioerror(data):
    # PyAMF raises IOError for reading past the end of its stream; code catches either.
    with pytest.raises(door.DecodeError) as e:
        next(door.decode(data))
    assert isinstance(e.value, IOError) and isinstance(e.value, amfkit.DecodeError)
    assert e.value.offset is not None


def test_malformed_data_is_a_decode_error_with_where():
    with pytest.raises(door.DecodeError) as e:
        next(door.decode(b"\x09\x03\x01\x20"))
    assert not isinstance(e.value, IOError)
    assert "0x20" in str(e.value) and e.value.offset == 3


def test_what_cannot_be_written_is_an_encode_error():
    for code in (lambda: None, len, sys, Point):
        with pytest.raises(door.EncodeError):
            door.encode([code])
    with pytest.raises(door.EncodeError):
        door.encode(__import__("decimal").Decimal("1.5"), strict=True)
    assert door.encode(__import__("decimal").Decimal("1.5")).getvalue() == real.encode(__import__("decimal").Decimal("1.5")).getvalue()


def test_timezone_offset_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="timezone_offset"):
        door.decode(b"\x01", timezone_offset=datetime.timedelta(hours=1))
    with pytest.raises(ValueError, match="timezone_offset"):
        remoting.encode(remoting.Envelope(AMF0), timezone_offset=datetime.timedelta(hours=1))


def test_unsupported_class_meta_is_refused_at_registration():
    class Renamed:
        class __amf__:
            synonym = {"from": "from_"}

    with pytest.raises(ValueError, match="synonym"):
        door.register_class(Renamed, "org.amfkit.test.Renamed")
    assert "org.amfkit.test.Renamed" not in amfkit.registered_classes()


# -- classes --------------------------------------------------------------------------


def test_load_class_never_imports_a_module_named_by_the_input():
    name = "email.mime.audio"  # a stdlib module nothing here imports
    assert name not in sys.modules
    with pytest.raises(door.UnknownClassAlias):
        door.load_class(f"{name}.MIMEAudio")
    # (Py3AMF writes a TypedObject without its alias: the bytes come from amfkit.)
    data = amfkit.amf3.encode(amfkit.TypedObject(f"{name}.MIMEAudio", {"a": 1}))
    back = next(door.decode(data))
    assert type(back) is door.TypedObject and back.alias == f"{name}.MIMEAudio"
    assert name not in sys.modules


def test_a_class_loader_gives_the_class_for_an_alias_nobody_registered():
    class Gem:
        pass

    asked = []

    def loader(alias):
        asked.append(alias)
        return Gem if alias == "com.example.Gem" else None

    data = door.encode([door.TypedObject("com.example.Gem"), door.TypedObject("com.example.Other")]).getvalue()
    door.register_class_loader(loader)
    try:
        gem, other = next(door.decode(data))
    finally:
        door.unregister_class_loader(loader)
        door.unregister_class("com.example.Gem")
    assert type(gem) is Gem and type(other) is door.TypedObject
    assert sorted(asked) == ["com.example.Gem", "com.example.Other"]
    with pytest.raises(LookupError):
        door.unregister_class_loader(loader)


def test_a_class_registered_without_an_alias_is_written_as_an_anonymous_object():
    class Anonymous:
        class __amf__:
            exclude = ("secret",)

    door.register_class(Anonymous)
    try:
        a = Anonymous()
        a.name, a.secret = "x", "hidden"
        assert door.encode(a).getvalue() == b"\n\x0b\x01\tname\x06\x03x\x01"
        assert next(door.decode(door.encode(a).getvalue())) == {"name": "x"}
    finally:
        door.unregister_class(Anonymous)


class Scores:
    """An externalizable class written against PyAMF's IDataInput/IDataOutput names."""

    class __amf__:
        external = True

    def __init__(self, values=()):
        self.values = list(values)

    def __writeamf__(self, output):
        output.writeUnsignedInt(len(self.values))
        for v in self.values:
            output.writeDouble(v)
        output.writeUTF("end")
        output.writeObject({"n": len(self.values)})

    def __readamf__(self, input):
        n = input.readUnsignedInt()
        self.values = [input.readDouble() for _ in range(n)]
        assert input.readUTF() == "end"
        self.meta = input.readObject()


def test_an_externalizable_class_with_pyamfs_method_names():
    door.register_class(Scores, "org.amfkit.test.Scores")
    real.register_class(Scores, "org.amfkit.test.Scores")
    try:
        s = Scores([1.5, 2.5])
        data = door.encode([s, s]).getvalue()
        assert data == real.encode([s, s]).getvalue()
        first, second = next(door.decode(data))
        assert type(first) is Scores and first is second
        assert first.values == [1.5, 2.5] and first.meta == {"n": 2} and type(first.meta) is door.ASObject
    finally:
        door.unregister_class(Scores)
        real.unregister_class(Scores)


def test_readonly_members_are_written_but_never_set_by_a_decode():
    class Account:
        class __amf__:
            readonly = ("balance",)

    door.register_class(Account, "org.amfkit.test.Account")
    try:
        a = Account()
        a.owner, a.balance = "ada", 100
        back = next(door.decode(door.encode(a).getvalue()))
        assert back.owner == "ada" and not hasattr(back, "balance")
    finally:
        door.unregister_class(Account)


def test_custom_types_are_written_as_their_function_says():
    class Money:
        def __init__(self, cents):
            self.cents = cents

    door.add_type(Money, lambda m, encoder: m.cents / 100)
    try:
        assert next(door.decode(door.encode([Money(250)]).getvalue())) == [2.5]
    finally:
        door.remove_type(Money)


# -- remoting and .sol files ----------------------------------------------------------


def _real_request(version):
    env = real_remoting.Envelope(version)
    env.headers["Credentials"] = real.ASObject(userid="ada", password="x")
    env.headers.set_required("Credentials")
    env["/1"] = real_remoting.Request("Echo.echo", ["hi", {"a": 1}])
    return env


@pytest.mark.parametrize("version", [AMF0, AMF3], ids=["v0", "v3"])
def test_a_py3amf_request_reads_as_py3amf_reads_it(version):
    data = real_remoting.encode(_real_request(version)).getvalue()
    env = remoting.decode(data)
    ref = real_remoting.decode(data)
    assert env.amfVersion == ref.amfVersion == version
    assert env.headers == ref.headers and env.headers.is_required("Credentials")
    assert env.headers["Credentials"].userid == "ada"
    (name, request), = list(env)
    assert name == "/1" and isinstance(request, remoting.Request)
    assert request.target == "Echo.echo" and request.body == ["hi", {"a": 1}] and request.body[1].a == 1


@pytest.mark.parametrize("version", [AMF0, AMF3], ids=["v0", "v3"])
def test_what_the_door_writes_py3amf_reads(version):
    env = remoting.Envelope(version)
    env["/1"] = remoting.Response({"ok": True, "items": [1, 2]})
    env["/2"] = remoting.Response(remoting.ErrorFault(code="X.Failed", description="boom"), status=remoting.STATUS_ERROR)
    env["/3"] = remoting.Request("Svc.m", [1, "two"])
    back = real_remoting.decode(remoting.encode(env).getvalue())
    assert back["/1"].body == {"ok": True, "items": [1, 2]} and back["/1"].status == 0
    fault = back["/2"].body
    assert isinstance(fault, real_remoting.ErrorFault) and (fault.code, fault.description) == ("X.Failed", "boom")
    assert back["/3"].target == "Svc.m" and back["/3"].body == [1, "two"]
    ours = remoting.decode(remoting.encode(env).getvalue())
    assert isinstance(ours["/2"].body, remoting.ErrorFault) and ours["/2"].body.code == "X.Failed"
    with pytest.raises(remoting.RemotingCallFailed):
        remoting.ErrorFault(code="Server.Call.Failed", description="x").raiseException()


def test_a_flex_remoting_message_reads_with_its_attributes():
    from amfkit.remoting.messages import RemotingMessage

    message = RemotingMessage(operation="echo", destination="EchoService", body=[{"a": 1}])
    env = remoting.Envelope(AMF3)
    env["/1"] = remoting.Request("null", [message])
    back = remoting.decode(remoting.encode(env).getvalue())
    (got,) = back["/1"].body
    assert got.operation == "echo" and got.messageId == message.messageId
    assert got.body[0].a == 1


def test_truncated_and_malformed_envelopes():
    with pytest.raises(IOError):
        remoting.decode(b"\x00\x00\x00\x00\x00\x01")
    with pytest.raises(door.DecodeError):
        remoting.decode("\x00\x00\x00\x00\x00\x01")
    assert len(remoting.decode(b"\x00\x00\x00\x00\x00\x00")) == 0


@pytest.mark.parametrize("encoding", [AMF0, AMF3], ids=["amf0", "amf3"])
def test_sol_files_both_ways(tmp_path, encoding):
    game = sol.SOL("game")
    game.update({"name": "Ada", "scores": [1, 2], "opts": {"sound": True}})
    path = tmp_path / "game.sol"
    game.save(str(path), encoding=encoding)
    assert path.read_bytes() == real_sol.encode("game", dict(game), encoding=encoding).getvalue()
    theirs = real_sol.load(str(path))
    assert theirs.name == "game" and dict(theirs) == dict(game)
    ours = sol.load(str(path))
    assert ours.name == "game" and ours["opts"].sound is True
    name, values = sol.decode(real_sol.encode("other", {"x": 1}, encoding=encoding).getvalue())
    assert (name, values) == ("other", {"x": 1})
    with pytest.raises(door.DecodeError, match="length"):
        sol.decode(path.read_bytes() + b"\x00")


# -- the byte stream ------------------------------------------------------------------


def test_buffered_byte_stream_reads_and_writes_as_pyamfs():
    ours, theirs = util.BufferedByteStream(), real.util.BufferedByteStream()
    for s in (ours, theirs):
        s.write_ushort(513)
        s.write_double(0.5)
        s.write_24bit_int(-2)
        s.write_utf8_string("é")
        s.endian = "<"
        s.write_ulong(7)
    assert ours.getvalue() == theirs.getvalue()
    ours.seek(0)
    ours.endian = "!"
    assert (ours.read_ushort(), ours.read_double(), ours.read_24bit_int(), ours.read_utf8_string(2)) == (513, 0.5, -2, "é")
    with pytest.raises(IOError):
        ours.read(10)
    with pytest.raises(OverflowError):
        ours.write_uchar(256)


def test_flex_collection_methods():
    c = flex.ArrayCollection()
    c.addItem("a")
    c.addItemAt("b", 0)
    assert c == ["b", "a"] and c.length == 2 and c.getItemAt(1) == "a" and c.getItemIndex("z") == -1
    assert c.setItemAt("c", 0) == "b" and c.removeItemAt(0) == "c" and c.toArray() == ["a"]
    with pytest.raises(IndexError):
        c.getItemAt(5)
    with pytest.raises(TypeError):
        flex.ArrayCollection({"a": 1})
    assert flex.unproxy_object(flex.proxy_object([1])) == [1] and type(flex.proxy_object({})) is flex.ObjectProxy


# -- installing the door under PyAMF's name -------------------------------------------


def test_install_makes_import_pyamf_give_the_door(tmp_path):
    program = textwrap.dedent(
        """
        import amfkit.compat.pyamf
        amfkit.compat.pyamf.install()
        import pyamf, pyamf.remoting, pyamf.sol
        from pyamf.flex import ArrayCollection
        assert pyamf is amfkit.compat.pyamf and pyamf.remoting is amfkit.compat.pyamf.remoting
        print(pyamf.encode(ArrayCollection([1])).getvalue())
        """
    )
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == repr(real.encode(real_flex.ArrayCollection([1])).getvalue())
    refused = subprocess.run(
        [sys.executable, "-c", "import pyamf, amfkit.compat.pyamf as d; d.install()"], capture_output=True, text=True, timeout=120
    )
    assert refused.returncode != 0 and "already imported" in refused.stderr
