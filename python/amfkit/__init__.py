"""amfkit: a fast and safe toolkit for AMF (Action Message Format, AMF0 and AMF3).

    >>> import amfkit
    >>> amfkit.amf3.decode(amfkit.amf3.encode({"a": [1, 2.5, "x"]}))
    {'a': [1, 2.5, 'x']}
"""

from __future__ import annotations

from . import _amfkit
from ._types import (
    ArrayCollection,
    Date,
    Dictionary,
    FixedVector,
    MixedArray,
    ObjectKey,
    ObjectProxy,
    ObjectVector,
    Opaque,
    Table,
    TypedObject,
    Undefined,
    UndefinedType,
    XML,
    XMLDocument,
)

_amfkit._setup(
    undefined=Undefined,
    typed_object=TypedObject,
    mixed_array=MixedArray,
    object_vector=ObjectVector,
    dictionary=Dictionary,
    object_key=ObjectKey,
    xml=XML,
    xml_document=XMLDocument,
    date=Date,
    array_collection=ArrayCollection,
    object_proxy=ObjectProxy,
    opaque=Opaque,
    table=Table,
    fixed_vector=FixedVector,
)

from ._amfkit import AMFError, DecodeError, EncodeError  # noqa: E402
from ._registry import register_class, unregister_class, registered_classes  # noqa: E402
from . import amf0, amf3  # noqa: E402
from .differences import Difference, diff  # noqa: E402

__version__ = _amfkit.__version__

__all__ = [
    "AMFError",
    "ArrayCollection",
    "DecodeError",
    "Difference",
    "EncodeError",
    "Date",
    "Dictionary",
    "FixedVector",
    "MixedArray",
    "ObjectKey",
    "ObjectProxy",
    "ObjectVector",
    "Opaque",
    "Table",
    "TypedObject",
    "Undefined",
    "UndefinedType",
    "XML",
    "XMLDocument",
    "amf0",
    "amf3",
    "diff",
    "register_class",
    "registered_classes",
    "unregister_class",
    "__version__",
]
