"""register_class: typed objects in both directions, and what decoding never does."""

from __future__ import annotations

import dataclasses
import sys

import pytest

import amfkit
from amfkit import amf0, amf3


@pytest.fixture
def registry():
    """Register classes for one test; unregister them afterwards."""
    added: list[type] = []

    def register(cls, alias, **kw):
        amfkit.register_class(cls, alias, **kw)
        added.append(cls)
        return cls

    yield register
    for cls in added:
        try:
            amfkit.unregister_class(cls)
        except KeyError:
            pass


class Plain:
    def __init__(self, a=1, b="two"):
        self.a = a
        self.b = b


INIT_CALLS: list[object] = []


class CountsInit:
    def __init__(self):
        INIT_CALLS.append(self)
        self.x = 1


@pytest.mark.parametrize("codec", [amf0, amf3])
def test_alias_only_writes_attributes_as_dynamic_members(registry, codec):
    registry(Plain, "com.example.Plain")
    obj = Plain(5, "x")
    back = codec.decode(codec.encode(obj))
    assert type(back) is Plain and vars(back) == {"a": 5, "b": "x"}


def test_alias_only_traits_on_the_wire(registry):
    registry(Plain, "P")
    data = amf3.encode(Plain(1, "b"))
    # dynamic, 0 sealed: 0b1011; alias "P"; a=1, b="b" (the value is the key's string,
    # so a string reference to entry 2); end
    assert data.hex() == "0a0b0350" "0361" "0401" "0362" "0604" "01"


def test_static_members_are_sealed_in_order(registry):
    registry(Plain, "P", static=("b", "a"))
    data = amf3.encode(Plain(1, "x"))
    # sealed count 2, dynamic: (2 << 4) | 0b1011 = 0x2b
    assert data.hex().startswith("0a2b0350" "0362" "0361" "060378" "0401")
    back = amf3.decode(data)
    assert vars(back) == {"b": "x", "a": 1}


def test_dynamic_false_writes_only_static_and_ignores_unknown_members(registry):
    registry(Plain, "P", static=("a",), dynamic=False)
    obj = Plain(1, "not sent")
    data = amf3.encode(obj)
    assert b"not sent" not in data
    # A peer's object with an extra member decodes without it.
    peer = amfkit.TypedObject("P", {"a": 7, "extra": 1}, sealed=("a",))
    back = amf3.decode(amf3.encode(peer))
    assert type(back) is Plain and vars(back) == {"a": 7}


class WithDefaults:
    """Static members read from the instance dict, or else from the class."""

    kind = "from the class"

    def __init__(self, value):
        self.value = value


@pytest.mark.parametrize("codec", [amf3, amf0], ids=["amf3", "amf0"])
def test_static_members_are_what_getattr_gives(registry, codec):
    # The encoder reads a plain class's static members from the instance dict in place;
    # a name the dict lacks is looked up on the class; a dict with a non-str key is read
    # through getattr (its lookup may run Python code); a missing one is undefined.
    registry(WithDefaults, "W", static=("value", "kind", "missing"), dynamic=False)
    plain = WithDefaults(1)
    mixed = WithDefaults(2)
    mixed.__dict__[0] = "a key that is not a str"
    own = WithDefaults(3)
    own.kind = "from the instance"
    back = codec.decode(codec.encode([plain, mixed, own, plain]))
    assert [(b.value, b.kind) for b in back] == [
        (1, "from the class"),
        (2, "from the class"),
        (3, "from the instance"),
        (1, "from the class"),
    ]
    assert all(b.missing is amfkit.Undefined for b in back)
    assert back[0] is back[3]


def test_exclude(registry):
    registry(Plain, "P", exclude=("b",))
    assert vars(amf3.decode(amf3.encode(Plain(1, "secret")))) == {"a": 1}


def test_decoding_never_calls_init(registry):
    registry(CountsInit, "C")
    data = amf3.encode(CountsInit())
    INIT_CALLS.clear()
    back = amf3.decode(data)
    assert INIT_CALLS == [] and type(back) is CountsInit and back.x == 1


@dataclasses.dataclass
class Point:
    x: int
    y: int


@dataclasses.dataclass(frozen=True)
class FrozenPoint:
    x: int
    y: int


@dataclasses.dataclass(slots=True)
class SlotPoint:
    x: int
    y: int


class Slotted:
    __slots__ = ("p", "q")

    def __init__(self, p, q):
        self.p = p
        self.q = q


@pytest.mark.parametrize("cls", [Point, FrozenPoint, SlotPoint])
@pytest.mark.parametrize("codec", [amf0, amf3])
def test_dataclasses(registry, cls, codec):
    registry(cls, "pt")
    back = codec.decode(codec.encode(cls(1, 2)))
    assert back == cls(1, 2)


def test_slots_classes(registry):
    registry(Slotted, "S")
    back = amf3.decode(amf3.encode(Slotted(1, [2])))
    assert type(back) is Slotted and (back.p, back.q) == (1, [2])


def test_shared_instances_and_cycles(registry):
    registry(Plain, "P")
    a = Plain()
    a.b = a
    back = amf3.decode(amf3.encode([a, a]))
    assert back[0] is back[1] and back[0].b is back[0]


class Ext:
    """An externalizable class writing its own body."""

    def __init__(self, n=0, items=()):
        self.n = n
        self.items = list(items)

    def __writeamf__(self, output):
        output.write_int(self.n)
        output.write_utf("hé")
        output.write_object(self.items)
        output.write_double(0.5)

    def __readamf__(self, input):
        self.n = input.read_int()
        assert input.read_utf() == "hé"
        self.items = input.read_object()
        assert input.read_double() == 0.5


def test_externalizable_hooks(registry):
    registry(Ext, "com.example.Ext", externalizable=True)
    obj = Ext(-5, [1, "x"])
    data = amf3.encode([obj, obj])
    assert data.hex().startswith("0905010a07" + "1f")  # traits: externalizable 0b0111, alias
    back = amf3.decode(data)
    assert type(back[0]) is Ext and back[0].n == -5 and back[0].items == [1, "x"]
    assert back[1] is back[0]
    # In AMF0 it goes through the AVM+ switch.
    back0 = amf0.decode(amf0.encode(obj))
    assert back0.n == -5


def test_data_input_is_dead_after_the_hook(registry):
    kept = []

    class Keeps:
        def __writeamf__(self, output):
            output.write_int(1)

        def __readamf__(self, input):
            kept.append(input)
            input.read_int()

    registry(Keeps, "K", externalizable=True)
    amf3.decode(amf3.encode(Keeps()))
    with pytest.raises(RuntimeError, match="only inside"):
        kept[0].read_int()


def test_externalizable_reading_past_its_body_is_a_decode_error(registry):
    class Greedy:
        def __writeamf__(self, output):
            output.write_int(1)

        def __readamf__(self, input):
            input.read_double()

    registry(Greedy, "G", externalizable=True)
    with pytest.raises(amfkit.DecodeError, match="unexpected end of input"):
        amf3.decode(amf3.encode(Greedy()))


def test_a_hook_that_resizes_the_array_being_read_does_not_crash(registry):
    class Clears:
        def __writeamf__(self, output):
            pass

        def __readamf__(self, input):
            input.read_object().clear()  # a back-reference to the enclosing array

    registry(Clears, "C", externalizable=True)
    # [Clears(body: reference to object 0, the array), 1]
    back = amf3.decode(bytes.fromhex("090501" "0a0703" "43" "0900" "0401"))
    assert type(back) is list and type(back[0]) is Clears and back[-1] == 1


def test_unknown_externalizable_is_a_decode_error():
    data = bytes.fromhex("0a07" "07") + b"abc" + b"\x04\x01"
    with pytest.raises(amfkit.DecodeError, match='externalizable class "abc" is not registered'):
        amf3.decode(data)


def test_unregistered_alias_decodes_to_typed_object_and_imports_nothing(tmp_path, monkeypatch):
    (tmp_path / "amfkit_bait_module.py").write_text("import sys\nsys.amfkit_bait_imported = True\nclass Cls:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    typed = amfkit.TypedObject("amfkit_bait_module.Cls", {"a": 1})
    for codec in (amf0, amf3):
        back = codec.decode(codec.encode(typed))
        assert isinstance(back, amfkit.TypedObject) and back.alias == "amfkit_bait_module.Cls"
    assert "amfkit_bait_module" not in sys.modules
    assert not hasattr(sys, "amfkit_bait_imported")


def test_dunder_members_never_reach_a_registered_class(registry):
    registry(Plain, "P")
    evil = amfkit.TypedObject("P", {"__class__": "x", "a": 1})
    with pytest.raises(amfkit.DecodeError, match="__class__"):
        amf3.decode(amf3.encode(evil))
    sealed_evil = amfkit.TypedObject("P", {"__dict__": {}}, sealed=("__dict__",), dynamic=False)
    with pytest.raises(amfkit.DecodeError, match="__dict__"):
        amf3.decode(amf3.encode(sealed_evil))
    # In an anonymous object it is only a key.
    assert amf3.decode(amf3.encode({"__class__": 1})) == {"__class__": 1}


def test_registration_rules(registry):
    registry(Plain, "P")
    with pytest.raises(ValueError, match="already registered"):
        amfkit.register_class(Point, "P")
    assert amfkit.registered_classes()["P"] is Plain
    amfkit.unregister_class("P")
    assert "P" not in amfkit.registered_classes()
    with pytest.raises(KeyError):
        amfkit.unregister_class(Plain)
    with pytest.raises(TypeError):
        amfkit.register_class(Plain(), "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="__readamf__"):
        amfkit.register_class(Plain, "x", externalizable=True)
    with pytest.raises(ValueError, match="cannot be an amf member"):
        amfkit.register_class(Plain, "x", static=("__init__",))


def test_default_alias_is_the_qualified_name(registry):
    amfkit.register_class(Plain)
    try:
        assert amfkit.registered_classes()[f"{__name__}.Plain"] is Plain
    finally:
        amfkit.unregister_class(Plain)


def test_unregistered_instances_are_an_encode_error():
    class Unknown:
        pass

    with pytest.raises(amfkit.EncodeError, match=r"type .*Unknown.*register_class") as e:
        amf3.encode({"items": [1, Unknown()]})
    assert e.value.path == "$.items[1]"
    assert isinstance(e.value, TypeError) and isinstance(e.value, amfkit.AMFError)


# --- classes the codec reads and fills directly, and those it must not -----------------
# A plain class (Python's own __dict__, generic attribute lookup, object.__new__, no
# property or slot) is written from its __dict__ and read into a new dict that becomes
# its __dict__; anything else goes through getattr/setattr, including a plain class
# changed after it was registered.


class WithProperty:
    def __init__(self):
        self.a = 1

    @property
    def b(self):
        return self._b * 10

    @b.setter
    def b(self, value):
        self._b = value


class MadeByNew:
    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        obj.made = "by __new__"
        return obj


@pytest.mark.parametrize("codec", [amf0, amf3])
def test_plain_class_round_trip_keeps_attributes(registry, codec):
    registry(Plain, "test.Plain")
    back = codec.decode(codec.encode([Plain(5, "x"), Plain()]))
    assert [type(b) for b in back] == [Plain, Plain]
    assert [vars(b) for b in back] == [{"a": 5, "b": "x"}, {"a": 1, "b": "two"}]
    back[0].c = 3  # a real instance dict, still writable
    assert vars(back[0])["c"] == 3


@pytest.mark.parametrize("codec", [amf0, amf3])
def test_a_property_is_set_through_its_setter(registry, codec):
    registry(WithProperty, "test.WithProperty")
    data = codec.encode(amfkit.TypedObject("test.WithProperty", {"a": 2, "b": 3}))
    back = codec.decode(data)
    assert type(back) is WithProperty and back.a == 2 and back._b == 3 and back.b == 30


@pytest.mark.parametrize("codec", [amf0, amf3])
def test_a_property_added_after_registration_is_honoured(registry, codec):
    class Later:
        pass

    registry(Later, "test.Later")
    data = codec.encode(amfkit.TypedObject("test.Later", {"a": 2}))
    assert vars(codec.decode(data)) == {"a": 2}
    seen = []
    Later.a = property(lambda self: "read by the property", lambda self, v: seen.append(v))
    back = codec.decode(data)
    assert seen == [2] and "a" not in vars(back)
    assert codec.decode(codec.encode(back)).__class__ is Later
    # Writing reads through the class too: the property's value, not the (empty) __dict__.
    Later.__getattribute__ = lambda self, name: {"a": "from __getattribute__"} if name == "__dict__" else object.__getattribute__(self, name)
    obj = Later.__new__(Later)
    assert codec.decode(codec.encode(obj)).__class__ is Later
    assert seen[-1] == "from __getattribute__"


@pytest.mark.parametrize("codec", [amf0, amf3])
def test_attributes_set_by_new_are_kept(registry, codec):
    registry(MadeByNew, "test.MadeByNew")
    data = codec.encode(amfkit.TypedObject("test.MadeByNew", {"x": 1}))
    back = codec.decode(data)
    assert type(back) is MadeByNew and vars(back) == {"made": "by __new__", "x": 1}
