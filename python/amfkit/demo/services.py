"""The demo gateway's services (`amfkit serve --demo`, `make run`).

`EchoService` (echo a value, raise a fault), `TileService` (the Amfphp tiles article's
1000 tiles from the demo database, `amfkit.demo.data`, in each of the article's shapes
and as typed columns, `TileColumns`),
`InstrumentPriceService` (the Protocol Buffers article's Small, Medium and Large messages
as registered typed objects), `PageableResult` (the paging service of the pageable
recordsets), `ChatService` (a chat line published to the `chat` destination,
`amfkit.demo.live`) and, given an asset store, `AssetService` (upload, download and list
files, `amfkit.demo.assets`). `build_services(db_path, assets=store)` returns them
registered in an `amfkit.remoting.Services`; docs/gateway.md (The demo gateway) lists
their methods.
"""

from __future__ import annotations

import array
import os
import sqlite3
import sys
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from .._registry import register_class
from ..data.recordset import Pager, PageableResultService, RecordSet
from ..remoting.services import Context, Fault, Services
from . import data as demo_data

if TYPE_CHECKING:
    from ..assets import AssetStore

__all__ = [
    "DemoError",
    "EchoService",
    "InstrumentPriceLarge",
    "InstrumentPriceMedium",
    "InstrumentPriceService",
    "InstrumentPriceSmall",
    "TILE_COLUMNS",
    "TILE_QUERY",
    "Tile",
    "TileColumns",
    "TileService",
    "ValueDate",
    "build_services",
    "instrument_price",
    "parse_tiles_string",
]

# --- EchoService --------------------------------------------------------------------


class DemoError(Fault):
    """What `EchoService.fail` raises: a `Fault`, so its message reaches the client (the
    message of any other exception stays in the server log unless the gateway is in
    debug mode)."""


class EchoService:
    """Returns what it is sent; fails on request."""

    def echo(self, value: Any) -> Any:
        """Return `value` unchanged (any AMF value: the round trip shows how it travels)."""
        return value

    def fail(self, message: str = "EchoService.fail was called") -> None:
        """Raise a fault carrying `message` (code `Server.Processing`): the client
        receives it."""
        raise DemoError(message)


# --- TileService --------------------------------------------------------------------

#: The row shape every tile method returns (the article's query aliases).
TILE_COLUMNS = ("n", "x", "y", "c", "r")
TILE_ALIAS = "org.amfkit.demo.Tile"

#: The SQL every tile method runs (the article's query, with its column aliases).
TILE_QUERY = (
    "SELECT slot_number AS n, x, y, color AS c, rotation AS r "
    "FROM tiles WHERE set_id = ? ORDER BY slot_number"
)


class Tile:
    """One mosaic tile: slot number `n`, position `x`, `y`, colour `c`, rotation `r`."""

    __slots__ = TILE_COLUMNS

    def __init__(self, n: int, x: int, y: int, c: str, r: int) -> None:
        self.n = n
        self.x = x
        self.y = y
        self.c = c
        self.r = r

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tile):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in TILE_COLUMNS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Tile(n={self.n}, x={self.x}, y={self.y}, c={self.c!r}, r={self.r})"


register_class(Tile, TILE_ALIAS, static=TILE_COLUMNS, dynamic=False)

TILE_COLUMNS_ALIAS = "org.amfkit.demo.TileColumns"


class TileColumns:
    """The tiles as columns, one array per field of the rows: `n`, `x`, `y` and `r` arrays
    of integers, `c` the colours as numbers ``0xRRGGBB``: a ``Vector.<uint>`` in AMF3 (an
    `array.array` of typecode "I"), an array of numbers in the other protocols.

    An AS3 client declares it once (``[RemoteClass(alias="org.amfkit.demo.TileColumns")]``
    with ``n``, ``x``, ``y``, ``r`` typed ``Array`` and ``c`` ``Vector.<uint>``) and reads
    ``x[i]`` or hands ``c[i]`` to ``beginFill``: Flash Player's and Royale's AMF3 readers
    build it, nothing is split or parsed. The integers are AMF3 integers (2 or 3 bytes
    each here, with their marker) rather than ``Vector.<int>`` columns (4 bytes each),
    whose zero high bytes gzip larger than the string at level 6 (docs/benchmarks.md, The
    Amfphp tiles article)."""

    __slots__ = TILE_COLUMNS

    def __init__(self, n: Sequence[int], x: Sequence[int], y: Sequence[int], c: Sequence[int], r: Sequence[int]) -> None:
        self.n = n
        self.x = x
        self.y = y
        self.c = c
        self.r = r

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[Any, ...]], protocol: str = "amf3") -> TileColumns:
        """The columns of the query's rows (n, x, y, c, r), for a client of `protocol`."""
        if not rows:
            return cls((), (), (), array.array("I") if protocol == "amf3" else (), ())
        n, x, y, c, r = zip(*rows)
        rgb = _rgb(c)
        return cls(n, x, y, rgb if protocol == "amf3" else rgb.tolist(), r)

    def rows(self) -> list[tuple[int, int, int, str, int]]:
        """The query's rows again, the colours back to ``"rrggbb"`` text."""
        return list(zip(self.n, self.x, self.y, map("%06x".__mod__, self.c), self.r))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TileColumns):
            return NotImplemented
        return all(list(getattr(self, k)) == list(getattr(other, k)) for k in TILE_COLUMNS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TileColumns({len(self.n)} tiles)"


register_class(TileColumns, TILE_COLUMNS_ALIAS, static=TILE_COLUMNS, dynamic=False)


def _rgb(colours: Sequence[str]) -> array.array[int]:
    """``"rrggbb"`` texts -> their numbers, in C: a zero byte before each colour, and the
    bytes read as big-endian 32-bit words (a third of the time of an `int(c, 16)` each)."""
    if set(map(len, colours)) != {6}:
        raise ValueError("a tile colour must be 6 hex digits")
    out = array.array("I", bytes.fromhex("00" + "00".join(colours)))
    if sys.byteorder == "little":
        out.byteswap()
    return out


def parse_tiles_string(text: str) -> list[tuple[int, int, int, str, int]]:
    """Split `getTilesAsString`'s result back into rows, as the article's client did."""
    if not text:
        return []
    out = []
    for line in text.split("\n"):
        n, x, y, c, r = line.split(",")
        out.append((int(n), int(x), int(y), c, int(r)))
    return out


class _Connections:
    """One read-only SQLite connection per thread (a connection costs about a third of
    a 1000-row query to open); `close()` closes them all, whichever thread made them."""

    def __init__(self, path: os.PathLike[str]) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []

    def get(self) -> sqlite3.Connection:
        db: Optional[sqlite3.Connection] = getattr(self._local, "db", None)
        if db is None:
            # used by its own thread only; closable from any (close() below)
            db = demo_data.connect(self._path, check_same_thread=False)
            with self._lock:
                self._all.append(db)
            self._local.db = db
        return db

    def close(self) -> None:
        with self._lock:
            connections, self._all = self._all, []
            self._local = threading.local()
        for db in connections:
            db.close()


# A method called from Python without a context answers as for an AMF3 client.
_AMF3 = Context(protocol="amf3")


class TileService:
    """The Amfphp tiles article's tiles, in each of its shapes (docs/gateway.md)."""

    def __init__(
        self,
        db_path: Optional[str | os.PathLike[str]] = None,
        *,
        pager: Optional[Pager] = None,
        service_name: str = "PageableResult",
    ) -> None:
        self._db_path = demo_data.ensure_database(db_path)
        self._pager = pager
        self._service_name = service_name
        self._connections = _Connections(self._db_path)
        weakref.finalize(self, self._connections.close)

    def _rows(self, set_id: int) -> sqlite3.Cursor:
        return self._connections.get().execute(TILE_QUERY, (set_id,))

    def getTilesAsString(self, set_id: int = 1) -> str:
        """The tiles as text: a line per tile, ``n,x,y,c,r``, lines separated by "\\n"."""
        return "\n".join([f"{n},{x},{y},{c},{r}" for n, x, y, c, r in self._rows(set_id).fetchall()])

    def getTilesAsArray(self, set_id: int = 1) -> list[dict[str, Any]]:
        """The tiles as a list of objects ``{n, x, y, c, r}`` (the naive shape)."""
        return [dict(zip(TILE_COLUMNS, row)) for row in self._rows(set_id).fetchall()]

    def getTilesAsRecordSet(self, set_id: int = 1, *, context: Context = _AMF3) -> Any:
        """The tiles as a recordset: AS2 ``RecordSet`` in AMF0, an ``ArrayCollection`` of
        sealed ``org.amfkit.demo.Tile`` rows in AMF3."""
        return self._recordset(set_id, None).for_context(context)

    def getTilesAsPageableRecordSet(self, set_id: int = 1, pageSize: int = 100, *, context: Context = _AMF3) -> Any:
        """The AS2 recordset with only its first `pageSize` rows; the client fetches the
        others from ``PageableResult.getRecords``. (AMF3 clients get every row.)"""
        if pageSize < 1:
            raise Fault(f"pageSize must be 1 or more, not {pageSize}", code="Client.Argument")
        return self._recordset(set_id, pageSize).for_context(context)

    def getTilesAsTypedObjects(self, set_id: int = 1) -> list[Tile]:
        """The tiles as ``Tile`` objects (class alias ``org.amfkit.demo.Tile``)."""
        return [Tile(*row) for row in self._rows(set_id).fetchall()]

    def getTilesAsColumns(self, set_id: int = 1, *, context: Context = _AMF3) -> TileColumns:
        """The tiles as one ``TileColumns`` object (class alias
        ``org.amfkit.demo.TileColumns``): arrays of integers ``n``, ``x``, ``y``, ``r`` and
        the colours ``c`` as numbers 0xRRGGBB, a ``Vector.<uint>`` in AMF3. Flash Player
        and Royale read it as it comes; in AMF3 it is smaller than the string gzipped."""
        return TileColumns.from_rows(self._rows(set_id).fetchall(), context.protocol)

    def getTiles(self, set_id: int = 1, *, context: Context = _AMF3) -> Any:
        """The recommended shape: the recordset (see getTilesAsRecordSet)."""
        return self._recordset(set_id, None).for_context(context)

    def _recordset(self, set_id: int, page_size: Optional[int]) -> RecordSet:
        return RecordSet.from_cursor(
            self._rows(set_id),
            alias=TILE_ALIAS,
            service_name=self._service_name,
            page_size=page_size,
            pager=self._pager,
        )


# --- InstrumentPriceService -----------------------------------------------------------


class ValueDate:
    """A calendar date as three ints (the Protocol Buffers article's ValueDate)."""

    __slots__ = ("year", "month", "day")

    def __init__(self, year: int, month: int, day: int) -> None:
        self.year = year
        self.month = month
        self.day = day

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ValueDate):
            return NotImplemented
        return (self.year, self.month, self.day) == (other.year, other.month, other.day)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ValueDate({self.year}, {self.month}, {self.day})"


def _fields(k: int) -> tuple[str, ...]:
    return (
        tuple(f"numeric{i}" for i in range(1, 2 * k + 1))
        + tuple(f"text{i}" for i in range(1, 2 * k + 1))
        + tuple(f"date{i}" for i in range(1, 2 * k + 1))
    )


class _InstrumentPrice:
    __slots__ = ()
    FIELDS: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={getattr(self, k, None)!r}" for k in self.FIELDS)
        return f"{type(self).__name__}({inner})"


class InstrumentPriceSmall(_InstrumentPrice):
    """numeric1-2 (int), text1-2 (str), date1-2 (ValueDate)."""

    FIELDS = _fields(1)
    __slots__ = FIELDS


class InstrumentPriceMedium(_InstrumentPrice):
    """Twice Small's fields: numeric1-4, text1-4, date1-4."""

    FIELDS = _fields(2)
    __slots__ = FIELDS


class InstrumentPriceLarge(_InstrumentPrice):
    """Three times Small's fields: numeric1-6, text1-6, date1-6."""

    FIELDS = _fields(3)
    __slots__ = FIELDS


_PRICE_CLASSES: dict[str, type[_InstrumentPrice]] = {
    "small": InstrumentPriceSmall,
    "medium": InstrumentPriceMedium,
    "large": InstrumentPriceLarge,
}

register_class(ValueDate, "org.amfkit.demo.ValueDate", static=("year", "month", "day"), dynamic=False)
for _cls in _PRICE_CLASSES.values():
    register_class(_cls, f"org.amfkit.demo.{_cls.__name__}", static=_cls.FIELDS, dynamic=False)

# Plausible quote data: instrument codes and descriptions, cycled through the text fields.
_TEXTS = (
    "EUR/USD",
    "Euro / US Dollar spot",
    "GBP/USD",
    "Pound Sterling / US Dollar spot",
    "USD/JPY",
    "US Dollar / Japanese Yen spot",
)


def instrument_price(size: str = "small", index: int = 0) -> _InstrumentPrice:
    """A deterministic InstrumentPrice of `size` ("small", "medium" or "large"); `index`
    varies the values."""
    cls = _PRICE_CLASSES.get(size.lower()) if isinstance(size, str) else None
    if cls is None:
        raise Fault(f"size must be 'small', 'medium' or 'large', not {size!r}", code="Client.Argument")
    obj = cls.__new__(cls)
    k = len(cls.FIELDS) // 3
    for i in range(1, k + 1):
        setattr(obj, f"numeric{i}", 13_250 + 17 * index + 101 * i)
        setattr(obj, f"text{i}", _TEXTS[(i - 1 + index) % len(_TEXTS)])
        setattr(obj, f"date{i}", ValueDate(2010, 4, 1 + (index + i) % 28))
    return obj


class InstrumentPriceService:
    """The Protocol Buffers article's Small, Medium and Large InstrumentPrice objects."""

    def getSmall(self) -> InstrumentPriceSmall:
        """One InstrumentPriceSmall (6 fields, 2 of them ValueDate objects)."""
        return instrument_price("small")  # type: ignore[return-value]

    def getMedium(self) -> InstrumentPriceMedium:
        """One InstrumentPriceMedium (12 fields)."""
        return instrument_price("medium")  # type: ignore[return-value]

    def getLarge(self) -> InstrumentPriceLarge:
        """One InstrumentPriceLarge (18 fields)."""
        return instrument_price("large")  # type: ignore[return-value]

    def get(self, size: str = "small", count: int = 1) -> list[Any]:
        """`count` (0 to 10000) InstrumentPrice objects of `size`, with varied values."""
        if not 0 <= count <= 10_000:
            raise Fault(f"count must be between 0 and 10000, not {count}", code="Client.Argument")
        return [instrument_price(size, i) for i in range(count)]


# --- all of them ----------------------------------------------------------------------


def build_services(
    db_path: Optional[str | os.PathLike[str]] = None, *, pager: Optional[Pager] = None, assets: Optional[AssetStore] = None
) -> Services:
    """The demo services in a `Services` registry; the tile database is created at
    `db_path` (default: `amfkit.demo.data.default_path()`) when needed; `AssetService`
    is there when an asset store is given."""
    pager = pager if pager is not None else Pager()
    services: dict[str, Any] = {
        "EchoService": EchoService(),
        "TileService": TileService(db_path, pager=pager),
        "InstrumentPriceService": InstrumentPriceService(),
        "PageableResult": PageableResultService(pager),
        "ChatService": _chat_service(),
    }
    if assets is not None:
        from .assets import AssetService

        services["AssetService"] = AssetService(assets)
    return Services(services)


def _chat_service() -> Any:
    from .live import ChatService  # live imports this module

    return ChatService()
