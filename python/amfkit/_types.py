"""Python-side value types of the AMF data model.

These small classes carry what plain Python types cannot: AMF's `undefined`, XML kept as
text, typed objects whose alias is not registered, associative arrays, AS3 Vectors of
objects, Dictionaries whose keys are objects, and dates a `datetime` cannot hold.
The compiled codec (`amfkit._amfkit`) dispatches on these exact types.
"""

from __future__ import annotations

import array
import math
from typing import Any, Iterable

__all__ = [
    "Undefined",
    "UndefinedType",
    "XML",
    "XMLDocument",
    "TypedObject",
    "MixedArray",
    "ObjectVector",
    "Dictionary",
    "ObjectKey",
    "Date",
    "ArrayCollection",
    "ObjectProxy",
    "Opaque",
    "Table",
]


class UndefinedType:
    """The type of `amfkit.Undefined`, AMF's `undefined` (distinct from `None`/null)."""

    __slots__ = ()
    _instance: "UndefinedType | None" = None

    def __new__(cls) -> "UndefinedType":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "Undefined"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "Undefined"


Undefined = UndefinedType()


class XMLDocument(str):
    """An AS2-style XMLDocument (AMF0 marker 0x0F, AMF3 marker 0x07), kept as text.

    amfkit never parses it; parse it yourself with a hardened parser (defusedxml).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"XMLDocument({str.__repr__(self)})"


class XML(str):
    """An E4X `XML` value (AMF3 marker 0x0B), kept as text; see `XMLDocument`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"XML({str.__repr__(self)})"


class TypedObject(dict):
    """An object whose class alias is not registered with `amfkit.register_class`.

    It is a `dict` of the members, with the alias and the shape of its traits kept so
    that it encodes back to the same bytes: `sealed` names the sealed members in wire
    order, `dynamic` says whether the traits allow dynamic members.
    """

    __slots__ = ("alias", "sealed", "dynamic")

    def __init__(
        self,
        alias: str,
        members: "dict[str, Any] | Iterable[tuple[str, Any]] | None" = None,
        /,
        *,
        sealed: "tuple[str, ...]" = (),
        dynamic: bool = True,
    ) -> None:
        super().__init__(members or ())
        self.alias = alias
        self.sealed = tuple(sealed)
        self.dynamic = dynamic

    def __repr__(self) -> str:
        return f"TypedObject({self.alias!r}, {dict.__repr__(self)})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TypedObject):
            return self.alias == other.alias and dict.__eq__(self, other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __reduce__(self):  # pickle/copy keep the alias and the trait shape
        return (
            _rebuild_typed_object,
            (self.alias, dict(self), self.sealed, self.dynamic),
        )


def _rebuild_typed_object(alias, members, sealed, dynamic):
    return TypedObject(alias, members, sealed=sealed, dynamic=dynamic)


class MixedArray(dict):
    """An associative array: AMF0 ECMA array, or an AMF3 Array with string keys.

    Dense elements of an AMF3 Array sit under the int keys 0..n-1; AMF0 ECMA keys that
    are canonical decimal integers decode as ints. `length` is an AMF0 ECMA array's count
    field as read (Flash Player writes the AS2 array's length there, which a holey array
    needs), written back as it is; None (a new array): the number of entries.
    """

    __slots__ = ("length",)

    def __init__(self, items: Any = (), /, *, length: int | None = None) -> None:
        super().__init__(items)
        self.length = length

    def __repr__(self) -> str:
        if self.length is None:
            return f"MixedArray({dict.__repr__(self)})"
        return f"MixedArray({dict.__repr__(self)}, length={self.length!r})"

    def __reduce__(self):
        return (_rebuild_mixed_array, (list(self.items()), self.length))


def _rebuild_mixed_array(items, length):
    return MixedArray(items, length=length)


class FixedVector(array.array):
    """An AS3 `Vector.<int>`, `<uint>` or `<Number>` whose fixed flag is set (its length
    cannot change in ActionScript): an `array.array` in every other way. A plain
    `array.array` is a Vector that is not fixed."""

    __slots__ = ()


class ObjectVector(list):
    """An AS3 `Vector.<T>` of objects (AMF3 marker 0x10), with its element type name."""

    __slots__ = ("type_name", "fixed")

    def __init__(self, items: Iterable[Any] = (), /, type_name: str = "", fixed: bool = False) -> None:
        super().__init__(items)
        self.type_name = type_name
        self.fixed = fixed

    def __repr__(self) -> str:
        return f"ObjectVector({list.__repr__(self)}, type_name={self.type_name!r}, fixed={self.fixed!r})"

    def __reduce__(self):
        return (ObjectVector, (list(self), self.type_name, self.fixed))


class Dictionary(dict):
    """An AS3 `flash.utils.Dictionary` (AMF3 marker 0x11), whose keys may be any value.

    Keys that Python cannot hash (dicts, lists) are wrapped in `ObjectKey` on decode and
    unwrapped on encode. `weak_keys` is the wire flag, kept for the round trip.
    """

    __slots__ = ("weak_keys",)

    def __init__(self, items: Any = (), /, *, weak_keys: bool = False) -> None:
        super().__init__(items)
        self.weak_keys = weak_keys

    def __repr__(self) -> str:
        return f"Dictionary({dict.__repr__(self)}, weak_keys={self.weak_keys!r})"

    def __reduce__(self):
        return (_rebuild_dictionary, (list(self.items()), self.weak_keys))


def _rebuild_dictionary(items, weak_keys):
    return Dictionary(items, weak_keys=weak_keys)


class ObjectKey:
    """A Dictionary key that Python cannot hash, compared and hashed by identity."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectKey) and other.value is self.value

    def __repr__(self) -> str:
        return f"ObjectKey({self.value!r})"


class Date:
    """An AMF Date that `datetime` cannot hold: NaN (Flash's `new Date(NaN)`), infinite,
    or outside years 1..9999. `millis` is milliseconds since 1970-01-01 UTC; `tz` is the
    AMF0 time-zone field (minutes), 0 unless the writer set it."""

    __slots__ = ("millis", "tz")

    def __init__(self, millis: float, tz: int = 0) -> None:
        self.millis = float(millis)
        self.tz = int(tz)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Date):
            return NotImplemented
        if math.isnan(self.millis) and math.isnan(other.millis):
            return self.tz == other.tz
        return self.millis == other.millis and self.tz == other.tz

    def __hash__(self) -> int:
        return hash(("amfkit.Date", "nan" if math.isnan(self.millis) else self.millis, self.tz))

    def __repr__(self) -> str:
        return f"Date({self.millis!r})" if not self.tz else f"Date({self.millis!r}, tz={self.tz})"


class ArrayCollection(list):
    """Flex's `flex.messaging.io.ArrayCollection`: an externalizable wrapper of one Array.

    It is a `list`; it encodes (AMF3) as the externalizable class around an Array.
    `alias` is None for Flex's own class; another class whose body is one Array (read
    with `decode(..., externalizable={"com.x.List": "arraycollection"})`) keeps its name
    there and encodes back under it.
    """

    __slots__ = ("alias",)

    def __init__(self, items: Iterable[Any] = (), /, *, alias: str | None = None) -> None:
        super().__init__(items)
        self.alias = alias

    def __repr__(self) -> str:
        if self.alias is None:
            return f"ArrayCollection({list.__repr__(self)})"
        return f"ArrayCollection({list.__repr__(self)}, alias={self.alias!r})"

    def __reduce__(self):
        return (_rebuild_array_collection, (list(self), self.alias))


def _rebuild_array_collection(items, alias=None):
    return ArrayCollection(items, alias=alias)


class ObjectProxy(dict):
    """Flex's `flex.messaging.io.ObjectProxy`: an externalizable wrapper of one object.

    It is a `dict` of the wrapped object's members. `alias` is None for Flex's own
    class; another class whose body is one object (read with `decode(...,
    externalizable={"com.x.Bag": "objectproxy"})`) keeps its name there.
    """

    __slots__ = ("alias",)

    def __init__(self, *args: Any, alias: str | None = None, **members: Any) -> None:
        super().__init__(*args, **members)
        self.alias = alias

    def __repr__(self) -> str:
        if self.alias is None:
            return f"ObjectProxy({dict.__repr__(self)})"
        return f"ObjectProxy({dict.__repr__(self)}, alias={self.alias!r})"

    def __reduce__(self):
        return (_rebuild_object_proxy, (dict(self), self.alias))


def _rebuild_object_proxy(members, alias=None):
    return ObjectProxy(members, alias=alias)


class Opaque:
    """An object of an externalizable class nobody registered, kept as bytes: what
    `decode(..., unknown_externalizable="opaque")` gives where the class's body cannot
    be read. `alias` is the class name, `data` the bytes from the end of its traits to
    the end of the input (its body, and whatever came after it), `dynamic` the traits'
    dynamic bit. It encodes (AMF3) back to the bytes it was read from.

    Nothing in AMF says where such a body ends, so it is sound only where the object
    ends its input: the whole value, the last item of the arrays around it, the last
    value of a stream, or a remoting body whose length field is true (docs/cli.md,
    "Bytes others wrote").
    """

    __slots__ = ("alias", "data", "dynamic")

    def __init__(self, alias: str, data: bytes = b"", dynamic: bool = False) -> None:
        self.alias = alias
        self.data = bytes(data)
        self.dynamic = bool(dynamic)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Opaque):
            return NotImplemented
        return (self.alias, self.data, self.dynamic) == (other.alias, other.data, other.dynamic)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Opaque({self.alias!r}, <{len(self.data)} bytes>)"

    def __reduce__(self):
        return (Opaque, (self.alias, self.data, self.dynamic))


class Table:
    """Rows of one shape, written as typed objects without a Python object per row.

    `rows` is a sequence of tuples (or lists), one value per column, as a DB-API cursor
    returns them. AMF3 writes an Array of objects of class `alias` whose sealed members
    are `columns`, sharing one traits entry (the names are written once); AMF0 writes a
    strict array of typed objects. `collection=True` wraps the array in Flex's
    `ArrayCollection`. It is an encode-side type: peers send back ordinary typed objects.
    """

    __slots__ = ("alias", "columns", "rows", "collection")

    def __init__(self, alias: str, columns: Iterable[str], rows: Any, *, collection: bool = False) -> None:
        self.alias = alias
        self.columns = tuple(columns)
        self.rows = rows
        self.collection = collection

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"Table({self.alias!r}, {self.columns!r}, <{len(self.rows)} rows>, collection={self.collection!r})"
