"""A door for code written against PyAMF or Py3AMF, running on amfkit's codec.

    import amfkit.compat.pyamf as pyamf          # instead of: import pyamf

    data = pyamf.encode({"a": 1}, encoding=pyamf.AMF3).getvalue()
    value = next(pyamf.decode(data, encoding=pyamf.AMF3))   # an ASObject: value.a == 1
    pyamf.register_class(User, "com.example.User")
    from amfkit.compat.pyamf import remoting, sol, flex     # remoting.decode/encode, ...

What it covers, how its values differ from PyAMF's, and what it refuses on purpose (it
never imports a module named by its input, as PyAMF's `load_class` does) are in
docs/migrating.md. Programs that use `import pyamf.xxx` unchanged can install the door
under PyAMF's name with `amfkit.compat.pyamf.install()`.
"""

from __future__ import annotations

import sys
from typing import Any

import amfkit
from amfkit import TypedObject, Undefined, UndefinedType

from ._classes import (
    CLASS_CACHE,
    CLASS_LOADERS,
    ERROR_CLASS_MAP,
    TYPE_MAP,
    ClassAlias,
    add_error_class,
    add_type,
    get_class_alias,
    get_type,
    load_class,
    register_class,
    register_class_loader,
    register_package,
    remove_error_class,
    remove_type,
    unregister_class,
    unregister_class_loader,
)
from ._codec import (
    AMF0,
    AMF3,
    DEFAULT_ENCODING,
    ENCODING_TYPES,
    decode,
    encode,
    get_decoder,
    get_encoder,
)
from ._errors import BaseError, DecodeError, EncodeError, EOStream, ReferenceError, UnknownClassAlias
from ._types import ASObject, MixedArray

__all__ = [
    "AMF0",
    "AMF3",
    "ASObject",
    "BaseError",
    "CLASS_CACHE",
    "CLASS_LOADERS",
    "ClassAlias",
    "DEFAULT_ENCODING",
    "DecodeError",
    "ENCODING_TYPES",
    "EOStream",
    "ERROR_CLASS_MAP",
    "EncodeError",
    "MixedArray",
    "ReferenceError",
    "TYPE_MAP",
    "TypedObject",
    "Undefined",
    "UndefinedType",
    "UnknownClassAlias",
    "add_error_class",
    "add_type",
    "decode",
    "encode",
    "get_class_alias",
    "get_decoder",
    "get_encoder",
    "get_type",
    "install",
    "load_class",
    "register_class",
    "register_class_loader",
    "register_package",
    "remove_error_class",
    "remove_type",
    "unregister_class",
    "unregister_class_loader",
    "version",
    "__version__",
]

#: PyAMF's version this door follows (Py3AMF 0.9's API), then amfkit's.
version = __version__ = f"0.9+amfkit.{amfkit.__version__}"

#: The modules of the door, by the name a PyAMF program imports them with.
_SUBMODULES = ("amf0", "amf3", "flex", "flex.messaging", "python", "remoting", "sol", "util")


def install() -> None:
    """Make `import pyamf` (and `pyamf.remoting`, `pyamf.sol`, ...) give the door, for a
    program that cannot change its imports. Refuses when a real `pyamf` is already
    imported (two registries in one process would disagree)."""
    import importlib

    current = sys.modules.get("pyamf")
    if current is not None and current is not sys.modules[__name__]:
        raise RuntimeError("a real pyamf is already imported: install the door before anything imports pyamf")
    sys.modules["pyamf"] = sys.modules[__name__]
    for name in _SUBMODULES:
        sys.modules[f"pyamf.{name}"] = importlib.import_module(f"{__name__}.{name}")


def __getattr__(name: str) -> Any:
    # The submodules load on first use, as `pyamf.remoting` does after `import pyamf`.
    if name in ("amf0", "amf3", "flex", "python", "remoting", "sol", "util"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
