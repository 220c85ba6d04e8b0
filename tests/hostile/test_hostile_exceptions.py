"""What comes out of the codec when something goes wrong: bounded error texts whatever
the input, only `AMFError`s out of every decode entry point (amfkit's own readers, the
Flex small forms included), and every exception raised by user code (a property, a
`__dict__`, a hook) passed through unchanged by the encoder, never swallowed.
"""

from __future__ import annotations

import array
import struct
from typing import Any

import pytest

import amfkit
from amfkit import amf0, amf3, sol
from amfkit.remoting import packet

from wire import s3, typed3, utf

from .harness import MAX_ERROR_TEXT, Case, expect_decode_error, run

LONG = 256 * 1024


def referenced_long_names(levels: int = 100) -> bytes:
    """One dynamic object whose member name is a 256 KiB string, then `levels` nested
    objects naming it by string reference (2 bytes each), then an unknown marker."""
    name = "k" * LONG
    data = b"\x0a\x0b\x01" + s3(name)  # anonymous dynamic traits (traits 0), member `name`
    data += (b"\x0a\x01" + b"\x00") * levels  # traits reference 0, member name reference 0
    return data + b"\x42"


AMPLIFIERS: dict[str, tuple[str, bytes]] = {
    "amf3/member-name-by-reference": ("amf3", referenced_long_names()),
    "amf3/sealed-name": ("amf3", typed3("T", dynamic=False, sealed=("s" * LONG,)) + b"\x42"),
    "amf3/class-alias": ("amf3", typed3("c" * LONG) + b"\x42"),
    "amf3/externalizable-alias": ("amf3", typed3("e" * LONG, externalizable=True)),
    "amf3/array-key-by-reference": (
        "amf3",
        b"\x09\x01" + s3("a" * LONG) + (b"\x09\x01\x00") * 100 + b"\x42",
    ),
    "amf0/long-keys-nested": (
        "amf0",
        (b"\x03" + utf("z" * 65_000)) * 200 + b"\x42",
    ),
    "amf3_all/member-name-by-reference": ("amf3_all", referenced_long_names()),
    "packet/member-name-by-reference": (
        "packet",
        struct.pack(">HHH", 3, 0, 1) + utf("S.m") + utf("/1") + b"\xff\xff\xff\xff" + b"\x11" + referenced_long_names(),
    ),
    "sol/member-name-by-reference": (
        "sol",
        b"\x00\xbf\x00\x00\x00\x00TCSO\x00\x04\x00\x00\x00\x00" + utf("x") + b"\x00\x00\x00\x03"
        + s3("m") + referenced_long_names(),
    ),
}


@pytest.fixture(scope="module")
def amplified() -> dict[str, Any]:
    return run([Case(name, codec, data) for name, (codec, data) in AMPLIFIERS.items()])


@pytest.mark.parametrize("name", sorted(AMPLIFIERS))
def test_error_texts_do_not_grow_with_referenced_names(amplified: dict[str, Any], name: str) -> None:
    """Found by a hostile tester: a 262,551-byte AMF3 value gave a 26-million-character
    error (the path repeated a 256 KiB name at each of 100 levels). Every error text is
    now bounded (`expect_decode_error` checks `MAX_ERROR_TEXT`), names are cut to 64
    characters, and a deep path keeps its outermost and innermost 8 segments."""
    o = amplified[name]
    expect_decode_error(o)
    assert o.text_len <= MAX_ERROR_TEXT
    if "reference" in name:
        assert "levels…]" in (o.path or ""), o.describe()


def test_a_deep_path_names_both_ends() -> None:
    data = b"\x09\x03\x01" * 40 + b"\x42"  # 40 nested arrays of one item, then a bad marker
    with pytest.raises(amfkit.DecodeError) as e:
        amf3.decode(data)
    assert e.value.path == "$[0][0][0][0][0][0][0][0][…24 levels…][0][0][0][0][0][0][0][0]"
    assert e.value.reason == "unknown amf3 marker 0x42"


# --- only AMFErrors out of the decoders -----------------------------------------------

SMALL_FORMS = ("DSK", "DSA", "DSC")


def small_form(alias: str, flag_bytes: bytes) -> bytes:
    return typed3(alias, externalizable=True) + flag_bytes


RUNAWAY = b"\x80" * 17 + b"\x00"


@pytest.mark.parametrize("alias", SMALL_FORMS)
def test_runaway_small_form_flags_are_a_decode_error(alias: str) -> None:
    """Found by a hostile tester: a DSK whose flag bytes run on (17 bytes with 0x80 set)
    raised a plain ValueError out of `amf3.decode` and the packet decoder. amfkit's own
    readers raise `DecodeError` (through `DataInput.error`), with an offset."""
    import amfkit.remoting  # noqa: F401 - registers the Flex message classes

    data = small_form(alias, RUNAWAY)
    with pytest.raises(amfkit.DecodeError) as e:
        amf3.decode(data)
    assert "more than 16 flag bytes" in e.value.reason
    assert 0 < e.value.offset <= len(data)
    body = struct.pack(">HHH", 3, 0, 1) + utf("null") + utf("/1") + b"\xff\xff\xff\xff" + b"\x11" + data
    with pytest.raises(amfkit.DecodeError):
        packet.decode(body)


def test_every_prefix_of_every_small_form_is_a_decode_error() -> None:
    """Each level of a small form (AbstractMessage, AsyncMessage, the subclass) read
    from every truncation: a value or a DecodeError, nothing else."""
    import amfkit.remoting
    from amfkit.remoting import messages

    whole = [
        amf3.encode(messages.AcknowledgeMessageExt(body=[1, "x"], headers={"DSId": "abc"}, correlationId="c")),
        amf3.encode(messages.AsyncMessageExt(body={"a": 1}, destination="d")),
        amf3.encode(messages.CommandMessageExt(operation=5, clientId="c")),
    ]
    assert amfkit.remoting  # registered
    for data in whole:
        for n in range(len(data)):
            try:
                amf3.decode(data[:n])
            except amfkit.DecodeError:
                pass


@pytest.mark.parametrize("entry", ["amf3.decode", "amf3.Decoder", "packet.decode", "sol.loads"])
def test_a_user_readamf_exception_passes_through(entry: str) -> None:
    """The other side of the same promise: an exception raised by a user's `__readamf__`
    is the user's, and reaches the caller unchanged (as the README says for hooks)."""

    class Boom(Exception):
        pass

    raised = Boom("mine")

    class Reader:
        def __readamf__(self, input: Any) -> None:
            raise raised

        def __writeamf__(self, output: Any) -> None:
            output.write_byte(1)

    amfkit.register_class(Reader, "hostile.Reader", externalizable=True)
    try:
        value = typed3("hostile.Reader", externalizable=True) + b"\x01"
        with pytest.raises(Boom) as e:
            if entry == "amf3.decode":
                amf3.decode(value)
            elif entry == "amf3.Decoder":
                amf3.Decoder().decode_all(value)
            elif entry == "packet.decode":
                packet.decode(struct.pack(">HHH", 3, 0, 1) + utf("a") + utf("/1") + b"\xff\xff\xff\xff" + b"\x11" + value)
            else:
                sol.loads(b"\x00\xbf\x00\x00\x00\x00TCSO\x00\x04\x00\x00\x00\x00" + utf("x") + b"\x00\x00\x00\x03" + s3("m") + value)
        assert e.value is raised
    finally:
        amfkit.unregister_class(Reader)


# --- user exceptions through every encode hook and property ---------------------------


class Boom(BaseException):
    """Not even an Exception: must pass through as it is, like KeyboardInterrupt."""


RAISED = {"runtime": RuntimeError("property failed"), "keyboard": KeyboardInterrupt(), "base": Boom()}


def raising(kind: str) -> Any:
    """An object of a registered class (or a hook) whose use raises RAISED[kind]."""
    error = RAISED[kind]

    def fail(*_: Any) -> Any:
        raise error

    return fail


HOOKS = ("static-property", "dynamic-slot-property", "dict-property", "writeamf", "default", "dictionary-weak-keys")


def make(hook: str, fail: Any) -> tuple[Any, dict[str, Any], Any]:
    """(value, encode options, cleanup) where encoding `value` calls `fail`."""
    if hook == "static-property":
        cls = type("StaticBoom", (), {"x": property(fail)})
        amfkit.register_class(cls, "hostile.StaticBoom", static=("x",))
        return cls(), {}, cls
    if hook == "dynamic-slot-property":
        # a slot whose descriptor raises something other than AttributeError
        base = type("SlotBase", (), {"__slots__": ("y",)})
        cls = type("SlotBoom", (base,), {"__slots__": (), "y": property(fail)})
        amfkit.register_class(cls, "hostile.SlotBoom")
        return cls(), {}, cls
    if hook == "dict-property":
        cls = type("DictBoom", (), {"__dict__": property(fail)})
        amfkit.register_class(cls, "hostile.DictBoom")
        return cls(), {}, cls
    if hook == "writeamf":
        cls = type("WriteBoom", (), {"__writeamf__": fail, "__readamf__": fail})
        amfkit.register_class(cls, "hostile.WriteBoom", externalizable=True)
        return cls(), {}, cls
    if hook == "default":
        return object(), {"default": fail}, None
    if hook == "dictionary-weak-keys":
        return amfkit.Dictionary({"k": 1}, weak_keys=type("Truthy", (), {"__bool__": fail})()), {}, None
    raise ValueError(hook)


# AMF0 has no Dictionary (it is written as an object): its weak_keys is not read there.
ENCODE_HOOKS = [(h, c) for h in HOOKS for c in ("amf0", "amf3") if (h, c) != ("dictionary-weak-keys", "amf0")]


@pytest.mark.parametrize("kind", sorted(RAISED))
@pytest.mark.parametrize(("hook", "codec"), ENCODE_HOOKS)
def test_user_exceptions_pass_through_the_encoder(hook: str, codec: str, kind: str) -> None:
    """Found by a hostile tester: a registered object whose property raised (even
    KeyboardInterrupt) was written with that member as undefined, silently. Every
    exception from user code now reaches the caller as it was raised, whatever nests
    the object."""
    value, options, cls = make(hook, raising(kind))
    mod = amf0 if codec == "amf0" else amf3
    try:
        for wrapped in (value, [value], {"a": [value]}):
            with pytest.raises(type(RAISED[kind])) as e:
                mod.encode(wrapped, **options)
            assert e.value is RAISED[kind]
    finally:
        if cls is not None:
            amfkit.unregister_class(cls)


def test_absent_members_are_still_undefined() -> None:
    """What was meant all along: a static member the instance does not have (an
    AttributeError, not user code failing) is written as undefined, and an unset slot
    is left out."""

    class Partial:
        __slots__ = ("a", "b", "c")

    amfkit.register_class(Partial, "hostile.Partial", static=("a",))
    try:
        p = Partial()
        p.b = 2
        out = amf3.decode(amf3.encode(p))
        assert type(out) is Partial
        assert out.a is amfkit.Undefined and out.b == 2 and not hasattr(out, "c")
        # on the wire: sealed `a` is undefined (0x00), then dynamic `b` = 2, then the end
        assert amf3.encode(p).endswith(b"\x00" + b"\x03b" + b"\x04\x02" + b"\x01")
    finally:
        amfkit.unregister_class(Partial)


# --- odd buffers ------------------------------------------------------------------------

BUFFERS = {
    "strided-memoryview": (memoryview(b"abcdefgh")[::2], b"aceg"),
    "reversed-memoryview": (memoryview(b"abc")[::-1], b"cba"),
    "memoryview-of-int-array": (memoryview(array.array("i", [1, 2, 3, 4]))[::2], array.array("i", [1, 3]).tobytes()),
    "2d-memoryview": (memoryview(bytearray(b"abcdef")).cast("B", (2, 3)), b"abcdef"),
    "bytearray": (bytearray(b"xyz"), b"xyz"),
}


@pytest.mark.parametrize("name", sorted(BUFFERS))
@pytest.mark.parametrize("codec", ["amf0", "amf3"])
def test_any_buffer_is_written_as_its_bytes(name: str, codec: str) -> None:
    """Found by a hostile tester: a non-contiguous memoryview raised BufferError. Any
    buffer is written as a ByteArray of its bytes in C order (`memoryview.tobytes()`)."""
    value, expected = BUFFERS[name]
    mod = amf0 if codec == "amf0" else amf3
    assert mod.decode(mod.encode(value)) == expected
    assert mod.decode(mod.encode([value, value])) == [expected, expected]


@pytest.mark.parametrize("codec", ["amf0", "amf3"])
def test_any_buffer_can_be_decoded(codec: str) -> None:
    mod = amf0 if codec == "amf0" else amf3
    raw = mod.encode({"a": [1, "two", 3.5]})
    spread = bytearray(len(raw) * 2)
    spread[::2] = raw
    assert mod.decode(memoryview(spread)[::2]) == {"a": [1, "two", 3.5]}
    assert mod.Decoder().decode_all(memoryview(spread)[::2]) == [{"a": [1, "two", 3.5]}]
    with pytest.raises(TypeError, match="decode expects bytes or a buffer, not int"):
        mod.decode(3)  # type: ignore[arg-type]
