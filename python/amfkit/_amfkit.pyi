"""Type stub of the compiled module `amfkit._amfkit` (checked by mypy.stubtest)."""

import sys
from typing import Any, Callable, Final, Iterable, Mapping, Union, final

from typing_extensions import Buffer, Self, disjoint_base

_Buffer = Union[bytes, bytearray, memoryview]

__all__ = [
    "__version__",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_OBJECTS",
    "DEFAULT_MAX_SIZE",
    "DICT_WALK",
    "AMFError",
    "DecodeError",
    "EncodeError",
    "StoreError",
    "_setup",
    "_register_class",
    "_unregister_class",
    "_registered_classes",
    "amf0_decode",
    "amf3_decode",
    "amf0_encode",
    "amf3_encode",
    "decode_packet",
    "encode_packet",
    "decode_packet_layout",
    "decode_sol",
    "decode_values",
    "encode_sol",
    "encode_values",
    "wire_read",
    "wire_write",
    "Amf0Decoder",
    "Amf3Decoder",
    "Amf0Encoder",
    "Amf3Encoder",
    "DataInput",
    "DataOutput",
    "ShmSegment",
    "Layout",
    "Encoded",
    "ShmSubscriber",
    "shm_publish",
    "shm_ping",
    "shm_echo",
]

__version__: str

# The decoders' default limits (amfkit-core's Limits::DEFAULT). The signatures below
# spell them out, as the compiled ones do (stubtest compares the two, and
# tests/codec/test_limits.py the compiled ones with these constants).
DEFAULT_MAX_DEPTH: Final[int]
DEFAULT_MAX_OBJECTS: Final[int]
DEFAULT_MAX_SIZE: Final[int]

# How the encoder walks dicts in this build: "in place" (CPython 3.11-3.13, whose layout
# crates/amfkit-py/src/encode/dictwalk.rs reads) or "PyDict_Next" (any other interpreter).
DICT_WALK: Final[str]

def decode_packet(
    data: _Buffer,
    /,
    *,
    max_depth: int = 128,
    max_objects: int = 10_000_000,
    max_size: int = 268_435_456,
    tz_aware: bool = False,
    unknown_externalizable: str = "error",
    externalizable: Mapping[str, str] | None = None,
    on_mismatch: Callable[[str, tuple[str, ...], tuple[str, ...]], Any] | None = None,
) -> tuple[int, list[tuple[str, bool, Any]], list[tuple[str, str, Any]]]: ...
def decode_packet_layout(
    data: _Buffer,
    /,
    *,
    max_depth: int = 128,
    max_objects: int = 10_000_000,
    max_size: int = 268_435_456,
    tz_aware: bool = False,
) -> tuple[int, list[tuple[str, bool, Any, int, int, int]], list[tuple[str, str, Any, int, int, int]]]: ...
def encode_packet(
    version: int,
    headers: Iterable[tuple[str, bool, Any]],
    bodies: Iterable[tuple[str, str, Any]],
    /,
    *,
    default: Callable[[Any], Any] | None = None,
    max_depth: int = 1024,
) -> bytes: ...

def decode_sol(
    data: _Buffer,
    /,
    *,
    max_depth: int = 128,
    max_objects: int = 10_000_000,
    max_size: int = 268_435_456,
    tz_aware: bool = False,
    lossless: bool = False,
) -> tuple[str, int, dict[str, Any], Layout | None, bool]: ...
def encode_sol(
    name: str,
    version: int,
    values: Mapping[str, Any],
    /,
    *,
    default: Callable[[Any], Any] | None = None,
    max_depth: int = 1024,
    layout: Layout | None = None,
    inline_strings: bool = False,
    size_hint: int = 0,
) -> Encoded: ...
def decode_values(
    data: _Buffer,
    version: int,
    /,
    *,
    allow_stream: bool = True,
    max_depth: int = 128,
    max_objects: int = 10_000_000,
    max_size: int = 268_435_456,
    tz_aware: bool = False,
) -> tuple[Any, Layout, bool, bool]: ...
def encode_values(
    value: Any,
    version: int,
    /,
    *,
    stream: bool = False,
    layout: Layout | None = None,
    inline_strings: bool = False,
    max_depth: int = 1024,
    switch: bool = False,
) -> bytes: ...

def wire_read(
    data: _Buffer,
    form: str,
    /,
    *,
    stream: bool = False,
    max_depth: int = 128,
    max_objects: int = 10_000_000,
    max_size: int = 268_435_456,
    unknown_externalizable: str = "error",
    externalizable: Mapping[str, str] | None = None,
) -> Any: ...
def wire_write(doc: Any, form: str, /, *, stream: bool = False) -> bytes: ...
@final
class Layout:
    """The encoding choices of a lossless read (opaque): the traits each object was
    read with, and the size of what was read."""

    def __len__(self) -> int: ...

@final
class Encoded(Buffer):
    """Bytes an encoder wrote, not copied: a read-only buffer (`bytes(e)`,
    `memoryview(e)`, `file.write(e)`)."""

    def __len__(self) -> int: ...
    if sys.version_info >= (3, 12):  # PEP 688: a buffer's method, from CPython 3.12
        def __buffer__(self, flags: int, /) -> memoryview: ...

class AMFError(Exception): ...

class DecodeError(AMFError, ValueError):
    offset: int
    path: str
    reason: str

class EncodeError(AMFError, TypeError):
    offset: None
    path: str
    reason: str

class StoreError(Exception):
    """The shared store refused an operation or cannot be reached; the message says why."""

def _setup(**kwargs: Any) -> None: ...
def _register_class(
    cls: type,
    alias: str,
    static_names: Iterable[str],
    dynamic: bool,
    exclude: Iterable[str],
    externalizable: bool,
    slots: Iterable[str],
) -> None: ...
def _unregister_class(target: Union[type, str]) -> None: ...
def _registered_classes() -> dict[str, type]: ...
def amf0_decode(
    data: _Buffer,
    /,
    *,
    allow_trailing: bool = False,
    max_depth: int = 128,
    max_objects: int = 10_000_000,
    max_size: int = 268_435_456,
    tz_aware: bool = False,
    unknown_externalizable: str = "error",
    externalizable: Mapping[str, str] | None = None,
    on_mismatch: Callable[[str, tuple[str, ...], tuple[str, ...]], Any] | None = None,
) -> Any: ...
def amf3_decode(
    data: _Buffer,
    /,
    *,
    allow_trailing: bool = False,
    max_depth: int = 128,
    max_objects: int = 10_000_000,
    max_size: int = 268_435_456,
    tz_aware: bool = False,
    unknown_externalizable: str = "error",
    externalizable: Mapping[str, str] | None = None,
    on_mismatch: Callable[[str, tuple[str, ...], tuple[str, ...]], Any] | None = None,
) -> Any: ...
def amf0_encode(obj: Any, /, *, default: Callable[[Any], Any] | None = None, max_depth: int = 1024) -> bytes: ...
def amf3_encode(obj: Any, /, *, default: Callable[[Any], Any] | None = None, max_depth: int = 1024) -> bytes: ...

@final
class Amf0Decoder:
    def __new__(
        cls,
        *,
        max_depth: int = 128,
        max_objects: int = 10_000_000,
        max_size: int = 268_435_456,
        tz_aware: bool = False,
        unknown_externalizable: str = "error",
        externalizable: Mapping[str, str] | None = None,
        on_mismatch: Callable[[str, tuple[str, ...], tuple[str, ...]], Any] | None = None,
    ) -> Self: ...
    def decode(self, data: _Buffer, /, *, allow_trailing: bool = False) -> Any: ...
    def decode_all(self, data: _Buffer, /) -> list[Any]: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def max_objects(self) -> int: ...
    @property
    def max_size(self) -> int: ...
    @property
    def tz_aware(self) -> bool: ...
    @property
    def unknown_externalizable(self) -> str: ...
    @property
    def externalizable(self) -> dict[str, str]: ...
    @property
    def on_mismatch(self) -> Callable[[str, tuple[str, ...], tuple[str, ...]], Any] | None: ...

@final
class Amf3Decoder:
    def __new__(
        cls,
        *,
        max_depth: int = 128,
        max_objects: int = 10_000_000,
        max_size: int = 268_435_456,
        tz_aware: bool = False,
        unknown_externalizable: str = "error",
        externalizable: Mapping[str, str] | None = None,
        on_mismatch: Callable[[str, tuple[str, ...], tuple[str, ...]], Any] | None = None,
    ) -> Self: ...
    def decode(self, data: _Buffer, /, *, allow_trailing: bool = False) -> Any: ...
    def decode_all(self, data: _Buffer, /) -> list[Any]: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def max_objects(self) -> int: ...
    @property
    def max_size(self) -> int: ...
    @property
    def tz_aware(self) -> bool: ...
    @property
    def unknown_externalizable(self) -> str: ...
    @property
    def externalizable(self) -> dict[str, str]: ...
    @property
    def on_mismatch(self) -> Callable[[str, tuple[str, ...], tuple[str, ...]], Any] | None: ...

@final
class Amf0Encoder:
    def __new__(cls, *, default: Callable[[Any], Any] | None = None, max_depth: int = 1024) -> Self: ...
    def encode(self, obj: Any, /) -> bytes: ...
    def encode_all(self, values: Iterable[Any], /) -> bytes: ...
    @property
    def max_depth(self) -> int: ...

@final
class Amf3Encoder:
    def __new__(cls, *, default: Callable[[Any], Any] | None = None, max_depth: int = 1024) -> Self: ...
    def encode(self, obj: Any, /) -> bytes: ...
    def encode_all(self, values: Iterable[Any], /) -> bytes: ...
    @property
    def max_depth(self) -> int: ...

@final
class DataInput:
    """Handed to `__readamf__`; valid only during that call."""

    def error(self, reason: str) -> DecodeError:
        """A DecodeError at the reader's position: `raise input.error("...")`."""
        ...
    def read_object(self) -> Any: ...
    def read_boolean(self) -> bool: ...
    def read_byte(self) -> int: ...
    def read_unsigned_byte(self) -> int: ...
    def read_short(self) -> int: ...
    def read_unsigned_short(self) -> int: ...
    def read_int(self) -> int: ...
    def read_unsigned_int(self) -> int: ...
    def read_float(self) -> float: ...
    def read_double(self) -> float: ...
    def read_utf(self) -> str: ...
    def read_utf_bytes(self, length: int) -> str: ...
    def read_bytes(self, length: int) -> bytes: ...

@final
class DataOutput:
    """Handed to `__writeamf__`; valid only during that call."""

    def write_object(self, obj: Any) -> None: ...
    def write_boolean(self, v: bool) -> None: ...
    def write_byte(self, v: int) -> None: ...
    def write_short(self, v: int) -> None: ...
    def write_int(self, v: int) -> None: ...
    def write_unsigned_int(self, v: int) -> None: ...
    def write_float(self, v: float) -> None: ...
    def write_double(self, v: float) -> None: ...
    def write_utf(self, s: str) -> None: ...
    def write_utf_bytes(self, s: str) -> None: ...
    def write_bytes(self, b: bytes) -> None: ...

@final
class ShmSegment:
    """Named logs, a bell and a key-value table in shared memory (`shm://NAME`), shared
    by the processes of a host: the file `{directory}/amfkit.{name}`. Satisfies
    `amfkit.messaging.logstore.LogStore`."""

    def __new__(
        cls,
        name: str,
        *,
        directory: str = "/dev/shm",
        app: str = "",
        ring_bytes: int = 1048576,
        ring_records: int = 8192,
        max_logs: int = 64,
        kv_slots: int = 16384,
        kv_value_bytes: int = 8192,
    ) -> Self: ...
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    def append(self, log: str, record: bytes) -> int: ...
    def head(self, log: str) -> int: ...
    def read(self, log: str, cursor: int, limit: int = 1024) -> tuple[list[tuple[int, bytes]], int, int]: ...
    def logs(self) -> list[str]: ...
    def bell(self) -> int: ...
    def wait(self, bell: int, timeout: float, spin: float = 5e-05) -> int: ...
    def get(self, key: str) -> bytes | None: ...
    def put(self, key: str, value: bytes, ttl: float | None = None) -> None: ...
    def cas(self, key: str, expected: bytes | None, value: bytes | None, ttl: float | None = None) -> bool: ...
    def delete(self, key: str) -> bool: ...
    def keys(self, prefix: str = "") -> list[str]: ...
    def stats(self) -> dict[str, int]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> None: ...
    @staticmethod
    def remove_stale(name: str, directory: str = "/dev/shm") -> bool: ...

@disjoint_base
class ShmSubscriber:
    """A subscription of this process to one destination's log of a `ShmSegment`, read,
    filtered and decoded in Rust (`amfkit.messaging.shm_subscriber.ShmSubscriber`)."""

    def __new__(
        cls,
        segment: ShmSegment,
        log: str,
        destination: str,
        message_type: type,
        subtopic: str | None = None,
        selector: Callable[[Any], Any] | None = None,
        spin: float = 5e-05,
    ) -> Self: ...
    def receive(self, timeout: float | None = None) -> Any: ...
    def wait(self, timeout: float) -> bool: ...
    def close(self) -> None: ...
    @property
    def destination(self) -> str: ...
    @property
    def dropped(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @property
    def cursor(self) -> int: ...

def shm_publish(segment: ShmSegment, prefix: str, destination: str, body: Any) -> int: ...
def shm_ping(
    segment: ShmSegment, out: str, into: str, cursor: int, record: bytes, n: int, timeout: float = 10.0
) -> tuple[list[int], int]: ...
def shm_echo(segment: ShmSegment, into: str, out: str, cursor: int, stop: bytes, timeout: float = 10.0) -> int: ...
