"""SQL results as recordsets: one object, the right shape for each client (docs/data.md).

    >>> import sqlite3
    >>> from amfkit.data import RecordSet
    >>> db = sqlite3.connect(":memory:")
    >>> rs = RecordSet.from_cursor(db.execute("SELECT 1 AS n, 'red' AS c UNION ALL SELECT 2, 'blue'"))
    >>> rs.columns, rs.rows
    (('n', 'c'), [(1, 'red'), (2, 'blue')])
    >>> db.close()
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Optional

from .._types import Table, TypedObject
from ..remoting.services import Fault

__all__ = [
    "DEFAULT_PAGER",
    "PageableResultService",
    "Pager",
    "RecordSet",
    "encoder_default",
]

#: The service name AS2 recordsets point at for their next pages, by default.
DEFAULT_SERVICE_NAME = "PageableResult"

Row = Sequence[Any]


class Pager:
    """Rows of pageable recordsets, kept in memory by id until released or expired.

    Thread-safe. An entry expires `ttl` seconds after it was last used; at most
    `max_entries` are kept (the least recently used go first). `max_page` caps the rows
    one `page()` call returns.
    """

    def __init__(
        self,
        *,
        ttl: float = 600.0,
        max_entries: int = 1000,
        max_page: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl <= 0 or max_entries < 1 or max_page < 1:
            raise ValueError("ttl, max_entries and max_page must be positive")
        self.ttl = float(ttl)
        self.max_entries = int(max_entries)
        self.max_page = int(max_page)
        self._clock = clock
        self._lock = threading.Lock()
        # id -> (deadline, columns, rows); ordered from least to most recently used
        self._entries: OrderedDict[str, tuple[float, tuple[str, ...], Sequence[Row]]] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._entries)

    def __contains__(self, id: object) -> bool:
        with self._lock:
            self._expire(self._clock())
            return id in self._entries

    def add(self, columns: Sequence[str], rows: Sequence[Row]) -> str:
        """Keep `rows` and return the new id (a random hex string)."""
        id = uuid.uuid4().hex
        now = self._clock()
        with self._lock:
            self._expire(now)
            while len(self._entries) >= self.max_entries:
                self._entries.popitem(last=False)
            self._entries[id] = (now + self.ttl, tuple(columns), rows)
        return id

    def page(self, id: str, cursor: int, count: int) -> dict[str, Any]:
        """Rows `cursor` .. `cursor + count - 1` (1-based) of recordset `id`, as the AS2
        client reads them: `{"Cursor": cursor, "Page": [row, ...]}`.

        Raises `KeyError` for an unknown, released or expired id and `ValueError` for a
        cursor below 1 or a negative count.
        """
        if cursor < 1:
            raise ValueError(f"cursor must be 1 or more, not {cursor}")
        if count < 0:
            raise ValueError(f"page size must not be negative, not {count}")
        count = min(count, self.max_page)
        now = self._clock()
        with self._lock:
            self._expire(now)
            deadline, columns, rows = self._entries[id]
            self._entries[id] = (now + self.ttl, columns, rows)
            self._entries.move_to_end(id)
        page = rows[cursor - 1 : cursor - 1 + count]
        return {"Cursor": cursor, "Page": page if isinstance(page, list) else list(page)}

    def columns(self, id: str) -> tuple[str, ...]:
        with self._lock:
            self._expire(self._clock())
            return self._entries[id][1]

    def total(self, id: str) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._entries[id][2])

    def release(self, id: str) -> bool:
        """Forget recordset `id`; False if it was not (or no longer) kept."""
        with self._lock:
            return self._entries.pop(id, None) is not None

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _expire(self, now: float) -> None:
        # Entries are in use order, and every use pushes the deadline by the same ttl,
        # so the expired ones are at the front.
        entries = self._entries
        while entries:
            first = next(iter(entries))
            if entries[first][0] > now:
                break
            del entries[first]


#: The pager recordsets use when none is given (and `PageableResultService()` too).
DEFAULT_PAGER = Pager()


class RecordSet:
    """Column names and rows from a SQL query, viewed per client protocol.

    `rows` is a sequence of tuples (or lists), one value per column. `alias` is the
    class alias of the AMF3 row objects (None: anonymous objects). `service_name` and
    `page_size` make the AMF0 view pageable (docs/data.md, "Paging"); `pager`
    keeps the rows for the next pages (default `DEFAULT_PAGER`).
    """

    __slots__ = ("columns", "rows", "alias", "service_name", "page_size", "pager", "_id", "_lock")

    def __init__(
        self,
        columns: Sequence[str],
        rows: Sequence[Row],
        *,
        alias: str | None = None,
        service_name: str = DEFAULT_SERVICE_NAME,
        page_size: int | None = None,
        pager: Pager | None = None,
    ) -> None:
        self.columns: tuple[str, ...] = tuple(columns)
        for name in self.columns:
            if not isinstance(name, str):
                raise TypeError(f"column names must be strings, not {type(name).__name__}")
        self.rows: Sequence[Row] = rows
        self.alias = alias
        self.service_name = service_name
        if page_size is not None and (isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1):
            raise ValueError(f"page_size must be a positive int or None, not {page_size!r}")
        self.page_size = page_size
        self.pager = pager
        self._id: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_cursor(
        cls,
        cursor: Any,
        *,
        alias: str | None = None,
        service_name: str = DEFAULT_SERVICE_NAME,
        page_size: int | None = None,
        pager: Pager | None = None,
    ) -> RecordSet:
        """Fetch every row of an executed DB-API cursor (sqlite3, psycopg, ...).

        Column names come from `cursor.description`; rows are kept as the cursor returns
        them when they are tuples or lists (the default for sqlite3 and psycopg). Other
        row types (`sqlite3.Row`, psycopg's dict rows, named tuples) are turned into
        tuples in column order.
        """
        description = cursor.description
        if description is None:
            raise ValueError("the cursor has no result set (run a query that returns rows first)")
        columns = tuple(_column_name(d) for d in description)
        rows = cursor.fetchall()
        if rows and type(rows[0]) not in (tuple, list):
            rows = [_as_tuple(row, columns) for row in rows]
        return cls(columns, rows, alias=alias, service_name=service_name, page_size=page_size, pager=pager)

    # --- plain access ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __repr__(self) -> str:
        return f"RecordSet({self.columns!r}, <{len(self.rows)} rows>)"

    @property
    def pageable(self) -> bool:
        """True when the AMF0 view holds only the first page."""
        return self.page_size is not None and len(self.rows) > self.page_size

    @property
    def id(self) -> str | None:
        """The paging id, once the AMF0 view of a pageable recordset was made."""
        return self._id

    # --- views -----------------------------------------------------------------------

    def amf0(self) -> TypedObject:
        """The AS2 Flash Remoting `RecordSet` typed object (docs/data.md, "The views").

        A pageable recordset registers its rows with its pager the first time (the same
        id afterwards).
        """
        rows = self.rows
        id: str | None = None
        initial: Sequence[Row] = rows
        if self.pageable:
            assert self.page_size is not None
            with self._lock:
                if self._id is None:
                    self._id = (self.pager if self.pager is not None else DEFAULT_PAGER).add(self.columns, rows)
                id = self._id
            initial = rows[: self.page_size]
        server_info = {
            "totalCount": len(rows),
            "initialData": initial if isinstance(initial, list) else list(initial),
            "cursor": 1,
            "serviceName": self.service_name,
            "columnNames": list(self.columns),
            "version": 1,
            "id": id,
        }
        return TypedObject("RecordSet", {"serverInfo": server_info}, sealed=("serverInfo",), dynamic=False)

    def amf3(self) -> Table:
        """An `ArrayCollection` of sealed objects (class `alias`, or anonymous) sharing one
        traits entry, written straight from the row tuples."""
        self._check_unique()
        return Table(self.alias or "", self.columns, self.rows, collection=True)

    def records(self) -> list[dict[str, Any]]:
        """One dict per row (for JSON-RPC and XML-RPC, which have no typed rows)."""
        self._check_unique()
        columns = self.columns
        return [dict(zip(columns, row)) for row in self.rows]

    def _check_unique(self) -> None:
        if len(set(self.columns)) != len(self.columns):
            seen: set[str] = set()
            for name in self.columns:
                if name in seen:
                    raise ValueError(f"column {name!r} appears twice: give the columns distinct names (AS in SQL)")
                seen.add(name)

    def view(self, protocol: str) -> Any:
        """The view for a protocol name: "amf0", "amf3", or anything else (JSON-RPC,
        XML-RPC) for `records()`."""
        if protocol == "amf3":
            return self.amf3()
        if protocol == "amf0":
            return self.amf0()
        return self.records()

    def for_context(self, context: Any) -> Any:
        """The view for a service call's `Context` (its `protocol`); AMF3 without one."""
        return self.view(getattr(context, "protocol", None) or "amf3")


def encoder_default(protocol: str, fallback: Optional[Callable[[Any], Any]] = None) -> Callable[[Any], Any]:
    """A `default=` hook for the encoders: a `RecordSet` becomes its view for
    `protocol`; anything else goes to `fallback`, or is refused with `TypeError` (the
    encoders let a hook's exception through unchanged)."""

    def default(obj: Any) -> Any:
        if isinstance(obj, RecordSet):
            return obj.view(protocol)
        if fallback is not None:
            return fallback(obj)
        raise TypeError(f"cannot encode an object of type {type(obj).__name__}")

    return default


class PageableResultService:
    """The paging service AS2 recordsets call for their next pages.

    Register it under the recordsets' `service_name` (default "PageableResult"):

        services.register("PageableResult", PageableResultService())
    """

    def __init__(self, pager: Pager | None = None) -> None:
        self._pager = pager if pager is not None else DEFAULT_PAGER

    def getRecords(self, id: str, cursor: int, pageSize: int) -> dict[str, Any]:
        """Rows `cursor` (1-based) to `cursor + pageSize - 1` of recordset `id`:
        `{"Cursor": cursor, "Page": [[...], ...]}`."""
        try:
            return self._pager.page(id, cursor, pageSize)
        except KeyError:
            raise Fault(f"no recordset {id!r} (released or expired)", code="Server.ResourceUnavailable") from None
        except ValueError as e:
            raise Fault(str(e), code="Client.Argument") from None

    def release(self, id: Optional[str] = None) -> bool:
        """Forget recordset `id` (the client has every row); False if it was not kept."""
        if id is None:
            return False
        return self._pager.release(id)


def _column_name(d: Any) -> str:
    name = getattr(d, "name", None)  # psycopg's Column
    if name is None:
        name = d[0]
    return str(name)


def _as_tuple(row: Any, columns: tuple[str, ...]) -> tuple[Any, ...]:
    if isinstance(row, Mapping):
        return tuple(row[c] for c in columns)
    return tuple(row)
