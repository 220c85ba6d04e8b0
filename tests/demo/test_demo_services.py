"""The demo: its SQLite database, its services (echo, the Amfphp tiles article's tiles in
four shapes, paged and as typed columns, the Protocol Buffers article's instrument
prices), called through `Services` and through the demo `Gateway` in process (httpx's
ASGI transport)."""

from __future__ import annotations

import array
import asyncio
import datetime
import gzip
import hashlib
import json
import os
import sqlite3

import httpx
import pytest

import amfkit
import peers  # tests/support/peers.py (tests/conftest.py puts tests/support on sys.path)
from amfkit import amf0, amf3
from amfkit.demo import app as demo_app, data as demo_data
from amfkit.demo.services import (
    TILE_COLUMNS,
    DemoError,
    InstrumentPriceLarge,
    InstrumentPriceMedium,
    InstrumentPriceSmall,
    Tile,
    TileColumns,
    ValueDate,
    build_services,
    instrument_price,
    parse_tiles_string,
)
from amfkit.remoting import packet
from amfkit.remoting.client import AsyncClient
from amfkit.remoting.http import gzip as gateway_gzip
from amfkit.remoting.services import Context, Fault

AMF0_CTX = Context(protocol="amf0")
AMF3_CTX = Context(protocol="amf3")
SHAPES = ("getTilesAsString", "getTilesAsArray", "getTilesAsRecordSet", "getTilesAsTypedObjects", "getTilesAsColumns")


def call(services, target, *args, context=AMF3_CTX):
    return asyncio.run(services.call(target, list(args), context))


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    return tmp_path_factory.mktemp("demo") / "tiles.sqlite3"


@pytest.fixture(scope="module")
def services(db_path):
    return build_services(db_path)


def expected_rows(set_id=1):
    return [(n, x, y, c, r) for _s, n, x, y, _m, c, r in demo_data.tiles(set_id, demo_data.SETS[set_id])]


# --- the database ---------------------------------------------------------------------------


def test_database_is_created_on_first_use_then_reused(tmp_path):
    path = tmp_path / "sub" / "demo.sqlite3"
    assert demo_data.ensure_database(path) == path.resolve()
    db = sqlite3.connect(path)
    assert dict(db.execute("SELECT set_id, count(*) FROM tiles GROUP BY set_id").fetchall()) == {1: 1000, 2: 24}
    cols = [row[1] for row in db.execute("PRAGMA table_info(tiles)")]
    assert cols == ["set_id", "slot_number", "x", "y", "move_number", "color", "rotation"]
    db.close()
    stamp = path.stat().st_mtime_ns
    demo_data.ensure_database(path)
    assert path.stat().st_mtime_ns == stamp  # valid: left alone
    assert [p.name for p in path.parent.iterdir()] == ["demo.sqlite3"]  # no temporary file left


@pytest.mark.parametrize("damage", ["garbage", "old-version", "missing-rows"])
def test_a_damaged_or_stale_database_is_rebuilt(tmp_path, damage):
    path = tmp_path / "demo.sqlite3"
    demo_data.ensure_database(path)
    if damage == "garbage":
        path.write_bytes(b"not a database" * 100)
    else:
        db = sqlite3.connect(path)
        if damage == "old-version":
            db.execute("PRAGMA user_version = 0")
        else:
            db.execute("DELETE FROM tiles WHERE slot_number > 500")
        db.commit()
        db.close()
    demo_data.ensure_database(path)
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM tiles").fetchone()[0] == 1024
    db.close()


def test_default_location(monkeypatch, tmp_path):
    monkeypatch.setenv("AMFKIT_DEMO_DB", str(tmp_path / "env.sqlite3"))
    assert demo_data.default_path() == tmp_path / "env.sqlite3"
    monkeypatch.delenv("AMFKIT_DEMO_DB")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert demo_data.default_path() == tmp_path / "cache" / "amfkit" / f"demo-tiles-v{demo_data.SCHEMA_VERSION}.sqlite3"
    # a cache directory that cannot be made: fall back to the temp directory
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    fallback = demo_data.default_path()
    assert fallback.parent.name.startswith("amfkit-") and fallback.name.endswith(".sqlite3")


def test_data_is_deterministic_and_shaped_like_the_articles():
    rows = list(demo_data.tiles(1, 1000))
    assert rows == list(demo_data.tiles(1, 1000))
    assert [r[1] for r in rows] == list(range(1000))
    assert all(0 <= r[2] < 640 and 0 <= r[3] < 480 and 0 <= r[6] < 4 for r in rows)
    assert all(len(r[5]) == 6 and int(r[5], 16) >= 0 for r in rows)
    moves = [r[4] for r in rows]
    assert moves == sorted(set(moves))
    text = "\n".join(f"{n},{x},{y},{c},{r}" for _s, n, x, y, _m, c, r in rows)
    # pinned: changing the data must bump SCHEMA_VERSION (the file name and the check)
    assert len(text) == 20464
    assert hashlib.sha256(text.encode()).hexdigest() == "2002b2d9d743c98433c0327fb9a8707ebd13bca429ab978ecf76ecc1ee6718e1"
    assert rows[0] == (1, 0, 384, 107, 7, "98b76e", 2) and rows[999] == (1, 999, 175, 376, 4039, "40678c", 1)


# --- EchoService ------------------------------------------------------------------------------

ECHO_VALUES = [
    None,
    True,
    0,
    -(2**28),
    2**40,
    3.5,
    "",
    "héllo",
    [1, "two", [3.0]],
    {"a": 1, "b": [None, "x"]},
    b"\x00\x01bytes",
    datetime.datetime(2024, 5, 17, 12, 30),
    amfkit.TypedObject("com.example.Thing", {"id": 1}),
    amfkit.MixedArray({"k": 1, 0: "zero"}),
    amfkit.Undefined,
    amfkit.XML("<a/>"),
]


@pytest.mark.parametrize("value", ECHO_VALUES, ids=repr)
def test_echo_returns_its_argument_unchanged(services, value):
    assert call(services, "EchoService.echo", value) is value


def test_fail_raises_an_error_with_the_message(services):
    with pytest.raises(DemoError, match="^boom$"):
        call(services, "EchoService.fail", "boom")
    with pytest.raises(Fault) as e:
        call(services, "EchoService.fail", 42)
    assert e.value.code == "Client.Argument"


# --- TileService ------------------------------------------------------------------------------


def test_every_shape_carries_the_same_rows(services):
    rows = expected_rows()
    text = call(services, "TileService.getTilesAsString", 1)
    assert not text.endswith("\n") and text.count("\n") == 999
    assert parse_tiles_string(text) == rows
    assert call(services, "TileService.getTilesAsArray", 1) == [dict(zip(TILE_COLUMNS, r)) for r in rows]
    table = call(services, "TileService.getTilesAsRecordSet", 1)
    assert isinstance(table, amfkit.Table) and table.columns == TILE_COLUMNS and table.rows == rows
    assert table.alias == "org.amfkit.demo.Tile" and table.collection
    typed = call(services, "TileService.getTilesAsTypedObjects", 1)
    assert typed == [Tile(*r) for r in rows]
    columns = call(services, "TileService.getTilesAsColumns", 1)
    assert type(columns) is TileColumns and columns.rows() == rows
    assert call(services, "TileService.getTiles", 1).rows == rows


def test_sets_filter_and_unknown_sets_are_empty(services):
    assert parse_tiles_string(call(services, "TileService.getTilesAsString", 2)) == expected_rows(2)
    assert call(services, "TileService.getTilesAsString", 99) == ""
    assert parse_tiles_string("") == []
    assert call(services, "TileService.getTilesAsArray", 99) == []
    assert call(services, "TileService.getTilesAsRecordSet", 99).rows == []
    assert call(services, "TileService.getTilesAsColumns", 99).rows() == []
    assert amf3.decode(amf3.encode(call(services, "TileService.getTilesAsColumns", 99))).rows() == []
    assert call(services, "TileService.getTilesAsColumns", 2).rows() == expected_rows(2)
    assert call(services, "TileService.getTilesAsString") == call(services, "TileService.getTilesAsString", 1)
    with pytest.raises(Fault) as e:
        call(services, "TileService.getTilesAsString", "1")
    assert e.value.code == "Client.Argument"


def test_recordset_shape_follows_the_protocol(services):
    as2 = call(services, "TileService.getTilesAsRecordSet", 1, context=AMF0_CTX)
    assert isinstance(as2, amfkit.TypedObject) and as2.alias == "RecordSet"
    info = amf0.decode(amf0.encode(as2))["serverInfo"]
    assert info["totalCount"] == 1000 and info["columnNames"] == list(TILE_COLUMNS) and info["id"] is None
    assert [tuple(r) for r in info["initialData"]] == expected_rows()
    as_json = call(services, "TileService.getTilesAsRecordSet", 2, context=Context(protocol="jsonrpc"))
    assert as_json == [dict(zip(TILE_COLUMNS, r)) for r in expected_rows(2)]


def test_amf3_recordset_writes_the_same_bytes_as_the_typed_objects(services):
    """The Table fast path and real Tile instances produce identical AMF3."""
    table = call(services, "TileService.getTilesAsRecordSet", 1)
    typed = call(services, "TileService.getTilesAsTypedObjects", 1)
    assert amf3.encode(table) == amf3.encode(amfkit.ArrayCollection(typed))
    back = amf3.decode(amf3.encode(table))
    assert isinstance(back, amfkit.ArrayCollection) and list(back) == typed and type(back[0]) is Tile


def test_pageable_recordset_pages_through_the_paging_service(services):
    first = call(services, "TileService.getTilesAsPageableRecordSet", 1, 128, context=AMF0_CTX)
    info = amf0.decode(amf0.encode(first))["serverInfo"]
    assert info["totalCount"] == 1000 and len(info["initialData"]) == 128
    assert info["serviceName"] == "PageableResult" and info["id"]
    rows = [tuple(r) for r in info["initialData"]]
    while len(rows) < info["totalCount"]:
        page = call(services, "PageableResult.getRecords", info["id"], len(rows) + 1, 128, context=AMF0_CTX)
        assert page["Cursor"] == len(rows) + 1
        rows += [tuple(r) for r in amf0.decode(amf0.encode(page["Page"]))]
    assert rows == expected_rows()
    assert call(services, "PageableResult.release", info["id"]) is True
    # AMF3 clients are not paged: every row comes at once
    assert len(call(services, "TileService.getTilesAsPageableRecordSet", 1, 128).rows) == 1000
    with pytest.raises(Fault):
        call(services, "TileService.getTilesAsPageableRecordSet", 1, 0)


def test_columns_decode_to_the_querys_rows_in_amf3_and_amf0(services):
    """AMF3: the colours are a Vector.<uint> (marker 0x0E), the integer columns arrays of
    AMF3 integers, in one sealed TileColumns; AMF0: arrays of numbers only."""
    rows = expected_rows()
    columns = call(services, "TileService.getTilesAsColumns", 1)
    data = amf3.encode(columns)
    # one object, sealed traits of 5 members (U29 (5 << 4) | 0b0011), the alias once
    alias = b"org.amfkit.demo.TileColumns"
    assert data[:3] == bytes([0x0A, 0x53, len(alias) << 1 | 1]) and data[3 : 3 + len(alias)] == alias
    assert data.count(alias) == 1 and data.count(b"\x0e\x8f\x51\x00") == 1  # Vector.<uint>, 1000 items, not fixed
    back = amf3.decode(data)
    assert type(back) is TileColumns and back == columns and back.rows() == rows
    assert isinstance(back.c, array.array) and back.c.typecode == "I" and back.c[0] == 0x98B76E
    assert all(type(col) is list and len(col) == 1000 for col in (back.n, back.x, back.y, back.r))

    as2 = call(services, "TileService.getTilesAsColumns", 1, context=AMF0_CTX)
    assert type(as2.c) is list and as2 == columns
    back0 = amf0.decode(amf0.encode(as2))
    assert type(back0.c) is list and back0.rows() == rows  # no Vector behind an AVM+ switch


@pytest.mark.parametrize("version", [0, 3], ids=["amf0", "amf3"])
def test_columns_with_py3amf_as_the_client(services, version):
    """Py3AMF reads the AMF0 columns back into the same rows; it has no Vector support
    (docs/py3amf.md), so it refuses the AMF3 columns with its DecodeError."""
    ctx = AMF0_CTX if version == 0 else AMF3_CTX
    data = peers.amfkit_codec(version).encode(call(services, "TileService.getTilesAsColumns", 1, context=ctx))
    with peers.registered(TileColumns, "org.amfkit.demo.TileColumns", static=TILE_COLUMNS, dynamic=False):
        if version == 0:
            back = peers.decode(data, version)
            assert type(back) is TileColumns and back.rows() == expected_rows()
        else:
            with pytest.raises(peers.pyamf.DecodeError, match="Unknown data type"):
                peers.decode(data, version)


@pytest.mark.parametrize("level", [1, 6])
def test_columns_are_no_bigger_than_the_string_gzipped(services, level):
    """The goal of issue 16: the AMF3 columns no bigger than the string gzipped, at the
    gateway's level 1 and at 6 (the demo's 1000 tiles, the gateway's gzip)."""
    string = response_packet(3, call(services, "TileService.getTilesAsString", 1))
    columns = response_packet(3, call(services, "TileService.getTilesAsColumns", 1))
    assert len(columns) < len(string)
    assert len(gateway_gzip(columns, level)) <= len(gateway_gzip(string, level))


def test_columns_refuse_a_colour_that_is_not_six_hex_digits():
    assert TileColumns.from_rows([(0, 1, 2, "0a0b0c", 3)]).rows() == [(0, 1, 2, "0a0b0c", 3)]
    for bad in ("abcde", "abcdefa", "", "zzzzzz"):
        with pytest.raises(ValueError):
            TileColumns.from_rows([(0, 1, 2, bad, 3), (1, 1, 2, "ffffff", 3)])


def test_discovery_hides_the_context_parameter(services):
    doc = {s["name"]: s for s in services.describe()["services"]}
    methods = {m["name"]: m for m in doc["TileService"]["methods"]}
    assert set(methods) == set(SHAPES) | {"getTiles", "getTilesAsPageableRecordSet"}
    assert [p["name"] for p in methods["getTilesAsRecordSet"]["params"]] == ["set_id"]
    assert [p["name"] for p in methods["getTilesAsPageableRecordSet"]["params"]] == ["set_id", "pageSize"]
    assert [p["name"] for p in methods["getTilesAsColumns"]["params"]] == ["set_id"]
    assert {m["name"] for m in doc["PageableResult"]["methods"]} == {"getRecords", "release"}


def test_tile_service_answers_from_several_threads(services):
    from concurrent.futures import ThreadPoolExecutor

    svc = services.lookup("TileService.getTilesAsString").fn.__self__
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: svc.getTilesAsString(1 + i % 2), range(16)))
    assert results[0::2] == [results[0]] * 8 and results[1::2] == [results[1]] * 8
    # every thread's connection is closed at once (the service's finalizer does this too)
    opened = list(svc._connections._all)
    assert len(opened) >= 2
    svc._connections.close()
    for db in opened:
        with pytest.raises(sqlite3.ProgrammingError):
            db.execute("SELECT 1")
    assert svc.getTilesAsString(2) == results[1]  # reopened on demand


# --- InstrumentPriceService -----------------------------------------------------------------


@pytest.mark.parametrize(
    "method, cls, fields",
    [("getSmall", InstrumentPriceSmall, 6), ("getMedium", InstrumentPriceMedium, 12), ("getLarge", InstrumentPriceLarge, 18)],
)
def test_instrument_prices_are_registered_typed_objects(services, method, cls, fields):
    price = call(services, f"InstrumentPriceService.{method}")
    assert type(price) is cls and len(cls.FIELDS) == fields
    assert [f for f in cls.FIELDS if f.startswith("date")] == [f"date{i}" for i in range(1, fields // 3 + 1)]
    assert all(isinstance(getattr(price, f), ValueDate) for f in cls.FIELDS if f.startswith("date"))
    assert all(isinstance(getattr(price, f), int) for f in cls.FIELDS if f.startswith("numeric"))
    for codec in (amf0, amf3):
        back = codec.decode(codec.encode(price))
        assert type(back) is cls and back == price and type(back.date1) is ValueDate
    data = amf3.encode(price)
    assert data.count(f"org.amfkit.demo.{cls.__name__}".encode()) == 1
    assert data.count(b"org.amfkit.demo.ValueDate") == 1  # the date traits are written once


def test_instrument_price_sizes_grow_with_the_field_count():
    sizes = [len(amf3.encode(instrument_price(s))) for s in ("small", "medium", "large")]
    assert sizes == sorted(sizes) and sizes[2] < 3 * sizes[0]
    assert sizes == [178, 288, 393]  # the seed article measured 198, 290, 371 (its aliases are unknown)


def test_instrument_price_lists(services):
    prices = call(services, "InstrumentPriceService.get", "medium", 3)
    assert len(prices) == 3 and all(type(p) is InstrumentPriceMedium for p in prices)
    assert len({p.numeric1 for p in prices}) == 3
    assert call(services, "InstrumentPriceService.get") == [instrument_price("small")]
    assert call(services, "InstrumentPriceService.get", "LARGE", 0) == []
    for bad in (("huge", 1), ("small", -1), ("small", 10_001)):
        with pytest.raises(Fault) as e:
            call(services, "InstrumentPriceService.get", *bad)
        assert e.value.code == "Client.Argument"


# --- sizes on the wire --------------------------------------------------------------------------


def response_packet(version: int, value) -> bytes:
    return packet.encode(packet.Envelope(version, bodies=[packet.Body("/1/onResult", "null", value)]))


def shape_sizes(services) -> dict[tuple[str, str], tuple[int, int]]:
    """(shape, amf0|amf3) -> (response packet bytes, gzip -6 bytes)."""
    out = {}
    for proto, version, ctx in (("amf0", 0, AMF0_CTX), ("amf3", 3, AMF3_CTX)):
        for shape in SHAPES:
            data = response_packet(version, call(services, f"TileService.{shape}", 1, context=ctx))
            out[shape, proto] = (len(data), len(gzip.compress(data, 6)))
    return out


def test_shape_sizes_reproduce_the_article_and_beat_it_in_amf3(services):
    sizes = shape_sizes(services)
    raw = {k: v[0] for k, v in sizes.items()}
    gz = {k: v[1] for k, v in sizes.items()}
    # AMF0, as in the article: the string is the smallest, then the recordset, then the
    # array; the typed objects repeat their class name and member names on every row.
    assert raw["getTilesAsString", "amf0"] < raw["getTilesAsRecordSet", "amf0"] < raw["getTilesAsArray", "amf0"]
    assert raw["getTilesAsArray", "amf0"] < raw["getTilesAsTypedObjects", "amf0"]
    # the article's gzipped content lengths: string 10,420, recordset 14,099 (within 5%)
    assert abs(gz["getTilesAsString", "amf0"] - 10420) < 0.05 * 10420
    assert abs(gz["getTilesAsRecordSet", "amf0"] - 14099) < 0.05 * 14099
    # AMF3: the recordset and the typed objects are as small as the string, uncompressed
    for shape in ("getTilesAsRecordSet", "getTilesAsTypedObjects"):
        assert raw[shape, "amf3"] <= raw["getTilesAsString", "amf3"]
        assert gz[shape, "amf3"] < gz["getTilesAsArray", "amf3"]
    assert raw["getTilesAsRecordSet", "amf3"] < 0.45 * raw["getTilesAsRecordSet", "amf0"]
    # pinned (the data and the encoders are deterministic): packet bytes per shape
    assert raw == {
        ("getTilesAsString", "amf0"): 20496,
        ("getTilesAsArray", "amf0"): 64034,
        ("getTilesAsRecordSet", "amf0"): 50207,
        ("getTilesAsTypedObjects", "amf0"): 86034,
        ("getTilesAsColumns", "amf0"): 45102,
        ("getTilesAsString", "amf3"): 20498,
        ("getTilesAsArray", "amf3"): 26422,
        ("getTilesAsRecordSet", "amf3"): 20483,
        ("getTilesAsTypedObjects", "amf3"): 20447,
        ("getTilesAsColumns", "amf3"): 14472,
    }


# --- through the demo gateway, in process ----------------------------------------------------


@pytest.fixture(scope="module")
def gateway(db_path):
    return demo_app.build(db_path)


def run(coro):
    return asyncio.run(coro)


async def with_client(gateway, fn, **options):
    transport = httpx.ASGITransport(app=gateway)
    async with httpx.AsyncClient(transport=transport, base_url="http://demo") as http:
        client = AsyncClient("http://demo/gateway", http_client=http, **options)
        return await fn(client)


@pytest.mark.parametrize("amf3_mode", [False, True], ids=["amf0", "amf3"])
def test_gateway_echo_and_fail(gateway, amf3_mode):
    async def go(client):
        values = [None, 1, 2.5, "x", [1, [2]], {"a": {"b": None}}, datetime.datetime(2020, 1, 2, 3, 4, 5)]
        echoed = [await client.EchoService.echo(v) for v in values]
        with pytest.raises(Fault) as e:
            await client.EchoService.fail("it failed")
        return values, echoed, e.value

    values, echoed, fault = run(with_client(gateway, go, amf3=amf3_mode))
    assert echoed == values
    assert fault.message == "it failed" and fault.code == "Server.Processing"


def test_gateway_tile_shapes_amf0_and_amf3(gateway):
    rows = expected_rows()

    async def go(client):
        return {shape: await getattr(client.TileService, shape)(1) for shape in SHAPES}

    for amf3_mode in (False, True):
        got = run(with_client(gateway, go, amf3=amf3_mode))
        assert parse_tiles_string(got["getTilesAsString"]) == rows
        assert [tuple(d[c] for c in TILE_COLUMNS) for d in got["getTilesAsArray"]] == rows
        assert got["getTilesAsTypedObjects"] == [Tile(*r) for r in rows]
        columns = got["getTilesAsColumns"]
        assert type(columns) is TileColumns and columns.rows() == rows
        assert isinstance(columns.c, array.array) is amf3_mode  # a Vector.<uint> in AMF3 only
        rs = got["getTilesAsRecordSet"]
        if amf3_mode:
            assert isinstance(rs, amfkit.ArrayCollection) and list(rs) == [Tile(*r) for r in rows]
        else:
            assert isinstance(rs, amfkit.TypedObject) and rs.alias == "RecordSet"
            assert [tuple(r) for r in rs["serverInfo"]["initialData"]] == rows


def test_gateway_flex_remote_object(gateway):
    async def go(client):
        return await client.TileService.getTiles(2), await client.InstrumentPriceService.getLarge()

    tiles, price = run(with_client(gateway, go, flex=True))
    assert isinstance(tiles, amfkit.ArrayCollection) and list(tiles) == [Tile(*r) for r in expected_rows(2)]
    assert price == instrument_price("large")


def test_gateway_paging_as_an_as2_client(gateway):
    async def go(client):
        rs = await client.TileService.getTilesAsPageableRecordSet(1, 300)
        info = rs["serverInfo"]
        rows = [tuple(r) for r in info["initialData"]]
        while len(rows) < info["totalCount"]:
            page = await client.call(f"{info['serviceName']}.getRecords", info["id"], len(rows) + 1, 300)
            rows += [tuple(r) for r in page["Page"]]
        released = await client.PageableResult.release(info["id"])
        return rows, released

    rows, released = run(with_client(gateway, go, amf3=False))
    assert rows == expected_rows() and released is True


def test_gateway_json_rpc(gateway):
    async def go():
        transport = httpx.ASGITransport(app=gateway)
        async with httpx.AsyncClient(transport=transport, base_url="http://demo") as http:
            batch = [
                {"jsonrpc": "2.0", "id": 1, "method": "TileService.getTilesAsRecordSet", "params": [2]},
                {"jsonrpc": "2.0", "id": 2, "method": "TileService.getTilesAsTypedObjects", "params": [2]},
                {"jsonrpc": "2.0", "id": 3, "method": "InstrumentPriceService.getSmall", "params": []},
                {"jsonrpc": "2.0", "id": 4, "method": "EchoService.fail", "params": ["nope"]},
                {"jsonrpc": "2.0", "id": 5, "method": "TileService.getTilesAsColumns", "params": [2]},
            ]
            r = await http.post("/gateway", content=json.dumps(batch), headers={"content-type": "application/json"})
            return r.status_code, r.json()

    status, answers = run(go())
    assert status == 200
    by_id = {a["id"]: a for a in answers}
    rows = [dict(zip(TILE_COLUMNS, r)) for r in expected_rows(2)]
    assert by_id[1]["result"] == rows and by_id[2]["result"] == rows
    small = by_id[3]["result"]
    assert small["date1"] == {"year": 2010, "month": 4, "day": 2} and small["text1"] == "EUR/USD"
    assert by_id[4]["error"]["message"] == "nope"
    columns = by_id[5]["result"]
    assert list(zip(*(columns[k] for k in TILE_COLUMNS))) == [(n, x, y, int(c, 16), r) for n, x, y, c, r in expected_rows(2)]


@pytest.mark.parametrize("version", [0, 3])
def test_gateway_wire_sizes_with_and_without_gzip(gateway, services, version):
    """The bytes on the wire are the packets measured above; gzip shrinks them."""
    proto = "amf3" if version == 3 else "amf0"
    sizes = shape_sizes(services)

    async def go():
        transport = httpx.ASGITransport(app=gateway)
        async with httpx.AsyncClient(transport=transport, base_url="http://demo") as http:
            out = {}
            for shape in SHAPES:
                request = packet.encode(packet.Envelope(version, bodies=[packet.Body(f"TileService.{shape}", "/1", [1])]))
                for accept in ("identity", "gzip"):
                    r = await http.post(
                        "/gateway",
                        content=request,
                        headers={"content-type": "application/x-amf", "accept-encoding": accept},
                    )
                    assert r.status_code == 200
                    out[shape, accept] = (int(r.headers["content-length"]), r.headers.get("content-encoding"), r.content)
            return out

    got = run(go())
    for shape in SHAPES:
        length, encoding, body = got[shape, "identity"]
        assert encoding is None and length == sizes[shape, proto][0]
        gz_length, gz_encoding, gz_body = got[shape, "gzip"]
        assert gz_encoding == "gzip" and gz_length < length
        assert gz_body == body  # httpx inflated it


def test_demo_app_is_built_lazily(monkeypatch, tmp_path):
    from amfkit.remoting.gateway import Gateway

    monkeypatch.setenv("AMFKIT_DEMO_DB", str(tmp_path / "lazy.sqlite3"))
    monkeypatch.setattr(demo_app, "_app", None)
    assert not (tmp_path / "lazy.sqlite3").exists()
    app = demo_app.app
    assert isinstance(app, Gateway) and demo_app.app is app
    assert (tmp_path / "lazy.sqlite3").exists()
    assert set(app.services.names()) == {"AssetService", "ChatService", "EchoService", "InstrumentPriceService", "PageableResult", "TileService"}
    # The served demo runs its live price feed (amfkit.demo.live).
    assert set(app.messaging.destinations) == {"prices", "chat"}
    app.price_feed.stop()
    with pytest.raises(AttributeError):
        demo_app.nothing_here  # noqa: B018
    assert os.environ["AMFKIT_DEMO_DB"].endswith("lazy.sqlite3")
