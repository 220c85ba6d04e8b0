"""The peer libraries as every experiment uses them: their versions, Py3AMF imported
quietly and driven as a codec, and classes registered with amfkit and Py3AMF for one run
only (a run leaves the registries as it found them).
"""

from __future__ import annotations

import contextlib
import importlib
import warnings
from importlib import metadata
from types import ModuleType
from typing import Any, Callable, Iterator, Sequence

__all__ = [
    "import_py3amf",
    "package_version",
    "package_versions",
    "py3amf_codec",
    "py3amf_ext_built",
    "quietly",
    "register_amfkit",
    "register_py3amf",
]


def package_version(name: str) -> str | None:
    """The installed version of distribution `name`, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def package_versions(*names: str) -> dict[str, str | None]:
    """{name: installed version or None} for each distribution, in the order given."""
    return {name: package_version(name) for name in names}


@contextlib.contextmanager
def quietly(noisy: bool = True) -> Iterator[None]:
    """Ignore warnings inside the block when `noisy` (a peer's own deprecation warnings)."""
    if not noisy:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def import_py3amf(*submodules: str) -> ModuleType:
    """Py3AMF's `pyamf` and the given submodules of it ("remoting", ...), imported
    without warnings; ImportError when it is not installed."""
    with quietly():
        for name in submodules:
            importlib.import_module(f"pyamf.{name}")
        return importlib.import_module("pyamf")


def py3amf_ext_built() -> bool:
    """True when Py3AMF's Cython extension (cpyamf) is built and importable here."""
    try:
        with quietly():
            importlib.import_module("cpyamf.amf0")
            importlib.import_module("cpyamf.amf3")
    except ImportError:
        return False
    return True


def py3amf_codec(pyamf: ModuleType, version: int, *, use_ext: bool) -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    """Py3AMF's encode and decode of one AMF0 (`version` 0) or AMF3 value, in pure
    Python (`use_ext=False`) or with its Cython extension."""
    encoding = pyamf.AMF3 if version == 3 else pyamf.AMF0

    def encode(obj: Any) -> bytes:
        return pyamf.encode(obj, encoding=encoding, use_ext=use_ext).getvalue()

    def decode(data: bytes) -> Any:
        return pyamf.decode(data, encoding=encoding, use_ext=use_ext).readElement()

    return encode, decode


def register_amfkit(
    stack: contextlib.ExitStack, cls: type, alias: str, *, static: Sequence[str] | None = None, dynamic: bool = True
) -> None:
    """Register `cls` with amfkit under `alias` until `stack` closes (left alone when it
    already is registered there)."""
    import amfkit

    if amfkit.registered_classes().get(alias) is cls:
        return
    amfkit.register_class(cls, alias, static=tuple(static) if static is not None else None, dynamic=dynamic)
    stack.callback(amfkit.unregister_class, cls)


def register_py3amf(
    stack: contextlib.ExitStack,
    pyamf: ModuleType,
    cls: type,
    alias: str,
    *,
    static: Sequence[str] | None = None,
    dynamic: bool = True,
) -> None:
    """Register `cls` with Py3AMF under `alias` until `stack` closes (left alone when the
    alias is registered already). `static` and `dynamic` go on the alias object Py3AMF
    compiles on first use (it writes sealed members sorted, whatever the order given)."""
    if alias in pyamf.CLASS_CACHE:
        return
    with quietly():
        py_alias = pyamf.register_class(cls, alias)
    if static is not None:
        py_alias.static_attrs = list(static)
    if not dynamic:
        py_alias.dynamic = False
    stack.callback(_unregister_py3amf, pyamf, alias)


def _unregister_py3amf(pyamf: ModuleType, alias: str) -> None:
    with contextlib.suppress(Exception):  # already unregistered (a test may do it itself)
        pyamf.unregister_class(alias)
