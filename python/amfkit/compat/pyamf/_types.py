"""PyAMF's value types, each made of amfkit's so the codec writes it as it is:
`ASObject` (a dict with attribute access), `MixedArray`, Flex's `ArrayCollection` and
`ObjectProxy` (subclasses of amfkit's, with PyAMF's methods), and AMF3's `ByteArray`
(a byte stream written as a ByteArray). `TypedObject` and `Undefined` are amfkit's own.
"""

from __future__ import annotations

from typing import Any, Iterable

import amfkit

from .util import BufferedByteStream

__all__ = ["ASObject", "ArrayCollection", "ByteArray", "MixedArray", "ObjectProxy"]


class ASObject(dict):
    """An ActionScript object: a dict whose items are also attributes (`o.name`)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"unknown attribute {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(f"unknown attribute {name!r}") from None

    def __repr__(self) -> str:
        return dict.__repr__(self)

    def __hash__(self) -> int:  # type: ignore[override]
        return id(self)


_LENGTH: Any = vars(amfkit.MixedArray)["length"]  # the slot of amfkit's MixedArray


class MixedArray(amfkit.MixedArray):
    """An associative array (AMF0 ECMA array, AMF3 array with named keys); made like a
    dict: `MixedArray(a=1)`, `MixedArray({"a": 1})`. Its AMF0 count field is the one it
    was read with, else what PyAMF writes: the highest int key (0 without one)."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        amfkit.MixedArray.__init__(self)
        dict.update(self, *args, **kwargs)

    @property
    def length(self) -> int:
        read = _LENGTH.__get__(self, type(self))
        if read is not None:
            return int(read)
        return max((k for k in self if type(k) is int and k >= 0), default=0)

    @length.setter
    def length(self, value: int | None) -> None:
        _LENGTH.__set__(self, value)

    def __repr__(self) -> str:
        return dict.__repr__(self)


class ArrayCollection(amfkit.ArrayCollection):
    """Flex's `flex.messaging.io.ArrayCollection`: a list, with Flex's IList methods."""

    __slots__ = ()

    def __init__(self, source: Iterable[Any] | None = None) -> None:
        if isinstance(source, dict):
            raise TypeError("cannot convert dicts to ArrayCollection")
        super().__init__(source if source is not None else ())

    def __repr__(self) -> str:
        return f"<flex.messaging.io.ArrayCollection {list.__repr__(self)}>"

    @property
    def length(self) -> int:
        return len(self)

    def addItem(self, item: Any) -> None:
        self.append(item)

    def addItemAt(self, item: Any, index: int) -> None:
        if index < 0 or index > len(self):
            raise IndexError(index)
        self.insert(index, item)

    def getItemAt(self, index: int, prefetch: int = 0) -> Any:
        if index < 0 or index >= len(self):
            raise IndexError(index)
        return self[index]

    def getItemIndex(self, item: Any) -> int:
        try:
            return self.index(item)
        except ValueError:
            return -1

    def removeAll(self) -> None:
        del self[:]

    def removeItemAt(self, index: int) -> Any:
        if index < 0 or index >= len(self):
            raise IndexError(index)
        return self.pop(index)

    def setItemAt(self, item: Any, index: int) -> Any:
        if index < 0 or index >= len(self):
            raise IndexError(index)
        old = self[index]
        self[index] = item
        return old

    def toArray(self) -> list[Any]:
        return list(self)


class ObjectProxy(amfkit.ObjectProxy):
    """Flex's `flex.messaging.io.ObjectProxy`: the wrapped object's members, as items and
    as attributes (`proxy.name`, `proxy._amf_object.name`)."""

    __slots__ = ()

    def __init__(self, obj: Any = None) -> None:
        super().__init__(() if obj is None else (obj if isinstance(obj, dict) else vars(obj)))

    def __repr__(self) -> str:
        return f"<flex.messaging.io.ObjectProxy {dict.__repr__(self)!s}>"

    @property
    def _amf_object(self) -> ObjectProxy:
        return self

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"unknown attribute {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "alias":  # amfkit.ObjectProxy's own slot: the class it was read as
            object.__setattr__(self, name, value)
        else:
            self[name] = value


class ByteArray(BufferedByteStream):
    """AMF3's ByteArray: a byte stream, written as a ByteArray (`bytes` are too; a
    ByteArray read from AMF comes back as `bytes`)."""

    def __init__(self, buf: Any = None) -> None:
        super().__init__(buf)
        self.compressed = False
