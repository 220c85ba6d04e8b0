"""`pyamf.flex`: Flex's `ArrayCollection` (a list) and `ObjectProxy` (a dict whose items
are also attributes), written as Flex's externalizable wrappers in AMF3 (in AMF0, as the
array or object they hold); `proxy_object` and `unproxy_object`."""

from __future__ import annotations

from typing import Any

from .._types import ArrayCollection, ObjectProxy

__all__ = ["ArrayCollection", "ObjectProxy", "proxy_object", "unproxy_object"]


def unproxy_object(obj: Any) -> Any:
    """The list in an ArrayCollection, the object in an ObjectProxy; else `obj`."""
    if isinstance(obj, ArrayCollection):
        return list(obj)
    if isinstance(obj, ObjectProxy):
        return dict(obj)
    return obj


def proxy_object(obj: Any) -> Any:
    """A list or tuple in an ArrayCollection, a dict in an ObjectProxy; else `obj`."""
    if type(obj) in (list, tuple):
        return ArrayCollection(obj)
    if isinstance(obj, dict):
        return ObjectProxy(obj)
    return obj
