"""amfkit.data.RecordSet: SQL rows as the AS2 RecordSet (AMF0) and as typed rows sharing one
traits entry (AMF3), paging, and the same bytes from SQLite and from a real PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import doctest
import sqlite3
import struct

import pytest

import amfkit
from amfkit import amf0, amf3
from amfkit.data import DEFAULT_PAGER, PageableResultService, Pager, RecordSet, encoder_default
from amfkit.remoting.services import Context, Fault, Services

from pg import postgres  # noqa: F401  (the session fixture: a real PostgreSQL server)

COLUMNS = ("n", "x", "y", "c", "r")
TILE_QUERY = "SELECT slot_number AS n, x, y, color AS c, rotation AS r FROM tiles WHERE set_id = ? ORDER BY slot_number"


# --- independent oracles: the bytes each view must produce, written by hand ------------


def u29(n: int) -> bytes:
    n &= 0x1FFFFFFF
    if n < 0x80:
        return bytes([n])
    if n < 0x4000:
        return bytes([(n >> 7) | 0x80, n & 0x7F])
    if n < 0x200000:
        return bytes([(n >> 14) | 0x80, ((n >> 7) & 0x7F) | 0x80, n & 0x7F])
    return bytes([(n >> 22) | 0x80, ((n >> 15) & 0x7F) | 0x80, ((n >> 8) & 0x7F) | 0x80, n & 0xFF])


class Amf3Oracle:
    """Just enough AMF3 for rows of ints and strings, with the string reference table."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {}

    def string(self, s: str) -> bytes:
        if s == "":
            return b"\x01"
        if s in self.strings:
            return u29(self.strings[s] << 1)
        self.strings[s] = len(self.strings)
        b = s.encode()
        return u29(len(b) << 1 | 1) + b

    def value(self, v: object) -> bytes:
        if isinstance(v, int) and -(2**28) <= v < 2**28:
            return b"\x04" + u29(v)
        if isinstance(v, str):
            return b"\x06" + self.string(v)
        if v is None:
            return b"\x01"
        raise TypeError(v)


def amf3_collection_of_rows(alias: str, columns: tuple[str, ...], rows) -> bytes:
    """An ArrayCollection (traits #0) around an Array whose first row writes the rows'
    traits inline (#1: sealed, not dynamic) and every other row references them."""
    o = Amf3Oracle()
    out = b"\x0a\x07" + o.string("flex.messaging.io.ArrayCollection")
    out += b"\x09" + u29(len(rows) << 1 | 1) + b"\x01"
    for i, row in enumerate(rows):
        if i == 0:
            out += b"\x0a" + u29(len(columns) << 4 | 0x03) + o.string(alias) + b"".join(o.string(c) for c in columns)
        else:
            out += b"\x0a" + u29(1 << 2 | 0x01)
        out += b"".join(o.value(v) for v in row)
    return out


def amf0_value(v: object) -> bytes:
    if isinstance(v, bool):
        return b"\x01" + bytes([v])
    if isinstance(v, (int, float)):
        return b"\x00" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        return b"\x02" + struct.pack(">H", len(b)) + b
    if v is None:
        return b"\x05"
    if isinstance(v, (list, tuple)):
        return b"\x0a" + struct.pack(">I", len(v)) + b"".join(amf0_value(x) for x in v)
    if isinstance(v, dict):
        return b"\x03" + amf0_members(v) + b"\x00\x00\x09"
    raise TypeError(v)


def amf0_members(d: dict) -> bytes:
    out = b""
    for k, v in d.items():
        kb = k.encode()
        out += struct.pack(">H", len(kb)) + kb + amf0_value(v)
    return out


def amf0_recordset(columns, rows, *, total=None, service="PageableResult", id=None) -> bytes:
    server_info = {
        "totalCount": len(rows) if total is None else total,
        "initialData": [list(r) for r in rows],
        "cursor": 1,
        "serviceName": service,
        "columnNames": list(columns),
        "version": 1,
        "id": id,
    }
    return b"\x10\x00\x09RecordSet" + amf0_members({"serverInfo": server_info}) + b"\x00\x00\x09"


# --- data --------------------------------------------------------------------------------


def tile_rows(count: int = 1000) -> list[tuple]:
    from amfkit.demo import data as demo_data

    return list(demo_data.tiles(1, count))


@pytest.fixture(scope="module")
def tiles_db():
    db = sqlite3.connect(":memory:")
    from amfkit.demo import data as demo_data

    db.execute(demo_data.SCHEMA)
    db.executemany("INSERT INTO tiles VALUES (?, ?, ?, ?, ?, ?, ?)", tile_rows())
    yield db
    db.close()


def sqlite_recordset(db, **kw) -> RecordSet:
    return RecordSet.from_cursor(db.execute(TILE_QUERY, (1,)), **kw)


# --- from_cursor ---------------------------------------------------------------------------


def test_from_cursor_keeps_the_fetched_tuples(tiles_db):
    rs = sqlite_recordset(tiles_db)
    assert rs.columns == COLUMNS
    assert len(rs) == 1000
    assert all(type(row) is tuple for row in rs.rows)
    assert rs.rows[:2] == [(r[1], r[2], r[3], r[5], r[6]) for r in tile_rows(2)]
    assert list(rs) == rs.rows


def test_from_cursor_accepts_other_row_types(tiles_db):
    tiles_db.row_factory = sqlite3.Row
    try:
        by_row = sqlite_recordset(tiles_db)
    finally:
        tiles_db.row_factory = None
    plain = sqlite_recordset(tiles_db)
    assert by_row.rows == plain.rows and type(by_row.rows[0]) is tuple

    class DictCursor:
        description = [("a",), ("b",)]

        def fetchall(self):
            return [{"b": 2, "a": 1}, {"a": 3, "b": 4}]

    assert RecordSet.from_cursor(DictCursor()).rows == [(1, 2), (3, 4)]


def test_from_cursor_needs_a_result_set():
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        cur = db.execute("CREATE TABLE t (a)")
        with pytest.raises(ValueError, match="no result set"):
            RecordSet.from_cursor(cur)


def test_empty_result():
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        rs = RecordSet.from_cursor(db.execute("SELECT 1 AS a WHERE 0"))
    assert rs.columns == ("a",) and len(rs) == 0
    assert amf3.decode(amf3.encode(rs.amf3())) == amfkit.ArrayCollection()
    info = amf0.decode(amf0.encode(rs.amf0()))["serverInfo"]
    assert info["totalCount"] == 0 and info["initialData"] == []


# --- the AMF3 view -----------------------------------------------------------------------


def test_amf3_view_is_typed_rows_sharing_one_traits_entry(tiles_db):
    rs = sqlite_recordset(tiles_db, alias="org.amfkit.demo.Tile")
    data = amf3.encode(rs.amf3())
    assert data == amf3_collection_of_rows("org.amfkit.demo.Tile", COLUMNS, rs.rows)
    # one inline traits entry for the rows: the alias is written once, 999 rows reference it
    assert data.count(b"org.amfkit.demo.Tile") == 1
    back = amf3.decode(data)
    assert isinstance(back, amfkit.ArrayCollection) and len(back) == 1000


def test_amf3_view_small_exact_bytes():
    rs = RecordSet(("a", "b"), [(1, "x"), (2, "x"), (-1, "")], alias="Row")
    expected = (
        b"\x0a\x07\x43flex.messaging.io.ArrayCollection"
        b"\x09\x07\x01"
        b"\x0a\x23\x07Row\x03a\x03b" b"\x04\x01\x06\x03x"  # row 0: traits inline (2 sealed)
        b"\x0a\x05" b"\x04\x02\x06\x08"  # row 1: traits #1, "x" by reference (#4)
        b"\x0a\x05" b"\x04\xff\xff\xff\xff\x06\x01"  # row 2: -1 as a 29-bit int, ""
    )
    assert amf3.encode(rs.amf3()) == expected
    assert expected == amf3_collection_of_rows("Row", ("a", "b"), rs.rows)


def test_amf3_view_anonymous_rows_decode_to_plain_objects():
    rs = RecordSet(("a", "b"), [(1, None), (2, 2.5)])
    back = amf3.decode(amf3.encode(rs.amf3()))
    assert [dict(o) for o in back] == [{"a": 1, "b": None}, {"a": 2, "b": 2.5}]


def test_amf3_rows_decode_into_a_registered_class():
    class Tile:
        pass

    amfkit.register_class(Tile, "test.recordset.Tile", static=COLUMNS, dynamic=False)
    try:
        rs = RecordSet(COLUMNS, [(1, 2, 3, "ff0000", 0)], alias="test.recordset.Tile")
        (tile,) = amf3.decode(amf3.encode(rs.amf3()))
        assert type(tile) is Tile and (tile.n, tile.c) == (1, "ff0000")
    finally:
        amfkit.unregister_class(Tile)


def test_duplicate_column_names_are_refused_for_named_views():
    rs = RecordSet(("id", "id"), [(1, 2)])
    with pytest.raises(ValueError, match="'id' appears twice"):
        rs.amf3()
    with pytest.raises(ValueError, match="appears twice"):
        rs.records()
    # the AS2 view has positional rows: duplicates are harmless there
    assert amf0.decode(amf0.encode(rs.amf0()))["serverInfo"]["columnNames"] == ["id", "id"]


# --- the AMF0 view -----------------------------------------------------------------------


def test_amf0_view_is_the_as2_recordset(tiles_db):
    rs = sqlite_recordset(tiles_db)
    data = amf0.encode(rs.amf0())
    assert data == amf0_recordset(COLUMNS, rs.rows)
    back = amf0.decode(data)
    assert isinstance(back, amfkit.TypedObject) and back.alias == "RecordSet"
    info = back["serverInfo"]
    assert list(info) == ["totalCount", "initialData", "cursor", "serviceName", "columnNames", "version", "id"]
    assert info["totalCount"] == 1000 and info["cursor"] == 1 and info["version"] == 1
    assert info["columnNames"] == list(COLUMNS)
    assert info["id"] is None  # not pageable: everything is in initialData
    assert [tuple(r) for r in info["initialData"]] == rs.rows


def test_amf0_view_small_exact_bytes():
    rs = RecordSet(("a",), [(1,)], service_name="S")
    assert amf0.encode(rs.amf0()) == (
        b"\x10\x00\x09RecordSet"
        b"\x00\x0aserverInfo\x03"
        b"\x00\x0atotalCount\x00" + struct.pack(">d", 1) + b"\x00\x0binitialData\x0a\x00\x00\x00\x01\x0a\x00\x00\x00\x01\x00"
        + struct.pack(">d", 1)
        + b"\x00\x06cursor\x00"
        + struct.pack(">d", 1)
        + b"\x00\x0bserviceName\x02\x00\x01S"
        b"\x00\x0bcolumnNames\x0a\x00\x00\x00\x01\x02\x00\x01a"
        b"\x00\x07version\x00" + struct.pack(">d", 1) + b"\x00\x02id\x05"
        b"\x00\x00\x09"
        b"\x00\x00\x09"
    )


# --- views by protocol ---------------------------------------------------------------------


def test_view_by_protocol_and_context():
    rs = RecordSet(("a",), [(1,), (2,)])
    assert isinstance(rs.view("amf3"), amfkit.Table)
    assert rs.view("amf0").alias == "RecordSet"
    assert rs.view("jsonrpc") == [{"a": 1}, {"a": 2}] == rs.view("xmlrpc")
    assert isinstance(rs.for_context(Context(protocol="amf3")), amfkit.Table)
    assert rs.for_context(Context(protocol="amf0")).alias == "RecordSet"
    assert isinstance(rs.for_context(None), amfkit.Table)


def test_encoder_default_turns_a_recordset_into_its_view():
    rs = RecordSet(("a",), [(1,), (2,)])
    assert amf0.encode({"r": rs}, default=encoder_default("amf0")) == amf0.encode({"r": rs.amf0()})
    assert amf3.encode([rs], default=encoder_default("amf3")) == amf3.encode([rs.amf3()])
    with pytest.raises(TypeError, match="type object"):
        amf3.encode(object(), default=encoder_default("amf3"))
    assert amf3.decode(amf3.encode([object()], default=encoder_default("amf3", lambda o: "other"))) == ["other"]


# --- paging --------------------------------------------------------------------------------


@pytest.mark.parametrize("page_size", [1, 100, 300, 999])
def test_paging_through_every_page_gives_every_row(tiles_db, page_size):
    pager = Pager()
    services = Services({"PageableResult": PageableResultService(pager)})
    rs = sqlite_recordset(tiles_db, page_size=page_size, pager=pager)
    # the client receives the AMF0 bytes, not our object
    info = amf0.decode(amf0.encode(rs.amf0()))["serverInfo"]
    assert info["totalCount"] == 1000 and len(info["initialData"]) == page_size
    assert info["serviceName"] == "PageableResult" and isinstance(info["id"], str) and info["id"] in pager
    assert rs.amf0()["serverInfo"]["id"] == info["id"]  # registered once
    got = [tuple(r) for r in info["initialData"]]
    cursor = len(got) + 1  # 1-based, as AS2's RecordSet asks
    calls = 0
    while cursor <= info["totalCount"]:
        reply = asyncio.run(services.call("PageableResult.getRecords", [info["id"], cursor, page_size], Context(protocol="amf0")))
        reply = amf0.decode(amf0.encode(reply))
        assert reply["Cursor"] == cursor and 1 <= len(reply["Page"]) <= page_size
        got.extend(tuple(r) for r in reply["Page"])
        cursor += len(reply["Page"])
        calls += 1
    assert got == rs.rows
    assert calls == -(-(1000 - page_size) // page_size)
    assert asyncio.run(services.call("PageableResult.release", [info["id"]])) is True
    assert info["id"] not in pager
    with pytest.raises(Fault) as e:
        asyncio.run(services.call("PageableResult.getRecords", [info["id"], 1, 10]))
    assert e.value.code == "Server.ResourceUnavailable"


def test_small_results_are_not_paged():
    pager = Pager()
    rs = RecordSet(("a",), [(1,), (2,)], page_size=2, pager=pager)
    assert not rs.pageable and rs.amf0()["serverInfo"]["id"] is None and len(pager) == 0


def test_amf3_view_of_a_pageable_recordset_carries_every_row():
    pager = Pager()
    rs = RecordSet(("a",), [(i,) for i in range(50)], page_size=10, pager=pager)
    assert len(amf3.decode(amf3.encode(rs.amf3()))) == 50 and len(pager) == 0


def test_get_records_checks_its_arguments():
    pager = Pager()
    services = Services({"P": PageableResultService(pager)})
    id = pager.add(("a",), [(1,), (2,), (3,)])
    call = lambda *args: asyncio.run(services.call("P.getRecords", list(args)))  # noqa: E731
    assert call(id, 3, 10) == {"Cursor": 3, "Page": [(3,)]}
    assert call(id, 4, 10) == {"Cursor": 4, "Page": []}
    assert call(id, 1, 0) == {"Cursor": 1, "Page": []}
    for bad in [(id, 0, 1), (id, 1, -1), (id, 1.5, 1), (id, "1", 1), (id, True, 1)]:
        with pytest.raises(Fault) as e:
            call(*bad)
        assert e.value.code == "Client.Argument"
    assert asyncio.run(services.call("P.release", [])) is False
    assert asyncio.run(services.call("P.release", ["nope"])) is False


def test_pager_expires_unused_recordsets_and_keeps_used_ones():
    now = [1000.0]
    pager = Pager(ttl=60, clock=lambda: now[0])
    a = pager.add(("x",), [(1,)])
    b = pager.add(("x",), [(2,)])
    now[0] += 50
    assert pager.page(a, 1, 1)["Page"] == [(1,)]  # a used: its deadline moves
    now[0] += 20  # b unused for 70 s: gone; a used 20 s ago: kept
    assert a in pager and b not in pager
    with pytest.raises(KeyError):
        pager.page(b, 1, 1)
    now[0] += 61
    assert len(pager) == 0


def test_pager_bounds_entries_and_page_size():
    pager = Pager(max_entries=3, max_page=2)
    ids = [pager.add(("x",), [(i,), (i,), (i,)]) for i in range(5)]
    assert len(pager) == 3 and ids[0] not in pager and ids[1] not in pager and ids[4] in pager
    assert len(pager.page(ids[4], 1, 100)["Page"]) == 2
    assert pager.total(ids[4]) == 3 and pager.columns(ids[4]) == ("x",)
    pager.clear()
    assert len(pager) == 0
    with pytest.raises(ValueError):
        Pager(ttl=0)


def test_default_pager_is_used_without_one():
    rs = RecordSet(("a",), [(1,), (2,), (3,)], page_size=1)
    id = rs.amf0()["serverInfo"]["id"]
    try:
        assert id in DEFAULT_PAGER
        assert PageableResultService().getRecords(id, 2, 2) == {"Cursor": 2, "Page": [(2,), (3,)]}
    finally:
        DEFAULT_PAGER.release(id)


def test_constructor_checks():
    with pytest.raises(ValueError):
        RecordSet(("a",), [], page_size=0)
    with pytest.raises(ValueError):
        RecordSet(("a",), [], page_size=True)
    with pytest.raises(TypeError):
        RecordSet((1,), [])  # type: ignore[arg-type]


# --- PostgreSQL (a real server) -------------------------------------------------------------


def test_postgresql_cursor_gives_the_same_bytes_as_sqlite(postgres, tiles_db):  # noqa: F811
    import psycopg
    from psycopg.rows import dict_row

    from amfkit.demo import data as demo_data

    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS tiles")
        conn.execute(
            """
            CREATE TABLE tiles (
                set_id integer NOT NULL DEFAULT 0,
                slot_number smallint NOT NULL DEFAULT 0,
                x smallint DEFAULT 0,
                y smallint DEFAULT 0,
                move_number bigint NOT NULL DEFAULT 0,
                color char(6) NOT NULL DEFAULT '',
                rotation smallint NOT NULL DEFAULT 0,
                PRIMARY KEY (set_id, slot_number)
            )
            """
        )
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO tiles VALUES (%s, %s, %s, %s, %s, %s, %s)", tile_rows())
            with cur.copy("COPY tiles FROM STDIN") as copy:  # a second set, through COPY
                for row in demo_data.tiles(2, 24):
                    copy.write_row(row)
        assert conn.execute("SELECT count(*) FROM tiles WHERE set_id = 1").fetchone()[0] == 1000

        with conn.cursor() as cur:
            cur.execute(TILE_QUERY.replace("?", "%s"), (1,))
            pg = RecordSet.from_cursor(cur, alias="org.amfkit.demo.Tile")
        lite = sqlite_recordset(tiles_db, alias="org.amfkit.demo.Tile")
        assert pg.columns == lite.columns == COLUMNS
        assert pg.rows == lite.rows
        for codec, view in ((amf0, "amf0"), (amf3, "amf3")):
            pg_bytes = codec.encode(pg.view(view))
            assert pg_bytes == codec.encode(lite.view(view))
            assert codec.decode(pg_bytes) == codec.decode(codec.encode(lite.view(view)))
        assert amf3.encode(pg.amf3()) == amf3_collection_of_rows("org.amfkit.demo.Tile", COLUMNS, lite.rows)

        # dict rows (psycopg.rows.dict_row) come out in column order too
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute("SELECT rotation AS r, slot_number AS n FROM tiles WHERE set_id = 2 ORDER BY n")
            rs = RecordSet.from_cursor(cur)
        assert rs.columns == ("r", "n") and rs.rows == [(row[6], row[1]) for row in demo_data.tiles(2, 24)]

        # paging a PostgreSQL result
        pager = Pager()
        with conn.cursor() as cur:
            cur.execute(TILE_QUERY.replace("?", "%s"), (1,))
            paged = RecordSet.from_cursor(cur, page_size=250, pager=pager)
        id = paged.amf0()["serverInfo"]["id"]
        rows = list(paged.amf0()["serverInfo"]["initialData"])
        while len(rows) < 1000:
            rows += pager.page(id, len(rows) + 1, 250)["Page"]
        assert rows == lite.rows


def test_a_missing_postgresql_fails_the_tests_instead_of_skipping_them(monkeypatch):
    import pg

    monkeypatch.setattr(pg, "find_bindir", lambda: None)
    with pytest.raises(pytest.fail.Exception, match="make system-deps"):
        with pg.start_postgres():
            pass  # pragma: no cover


def test_the_postgresql_fixture_finds_a_server():
    import pg

    bindir = pg.find_bindir()
    assert bindir is not None and (bindir / "initdb").is_file()


def test_module_docstring_example():
    import amfkit.data.recordset as recordset

    result = doctest.testmod(recordset)
    assert result.failed == 0 and result.attempted > 0
