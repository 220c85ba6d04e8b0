"""The demo's asset store: the file storage article's images put at startup (once),
served at GET /assets/images/NN.png by the demo gateway in process, `AssetService` upload ->
download -> list through the gateway as an AMF3 client, its limits, and where the folder
is (one per port for `amfkit serve --demo`)."""

from __future__ import annotations

import asyncio
import os
import time

import httpx
import pytest

from amfkit.assets import AssetStore
from amfkit.cli.main import main
from amfkit.demo import app as demo_app, assets as demo_assets, images
from amfkit.demo.assets import MAX_UPLOAD, MAX_UPLOADS, AssetService
from amfkit.remoting.client import AsyncClient
from amfkit.remoting.services import Fault, Services


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """(gateway, asset folder): the demo gateway on a fresh database and asset folder."""
    root = tmp_path_factory.mktemp("demo-assets")
    gateway = demo_app.build(root / "tiles.sqlite3", assets=root / "assets")
    return gateway, root / "assets"


async def with_http(gateway, fn):
    transport = httpx.ASGITransport(app=gateway)
    async with httpx.AsyncClient(transport=transport, base_url="http://demo") as http:
        return await fn(http, AsyncClient("http://demo/gateway", http_client=http))


def run(gateway, fn):
    return asyncio.run(with_http(gateway, fn))


# -- the demo's images ---------------------------------------------------------------------


def test_the_images_are_put_once_then_only_when_changed(tmp_path):
    folder = tmp_path / "assets"
    store = demo_assets.open_store(folder)  # seeds
    files = images.files()
    assert list(store.names("images/")) == [name for name, _ in files]
    assert all(store.get(name) == data for name, data in files)
    stamps = {name: store.stat(name).etag for name, _ in files}

    assert demo_assets.seed(store) == 0  # all there: nothing put
    (folder / "images" / "03.png").write_bytes(b"damaged")
    (folder / "images" / "07.png").unlink()
    assert demo_assets.seed(AssetStore.open(str(folder))) == 2
    assert store.get("images/03.png") == files[2][1] and store.get("images/07.png") == files[6][1]
    assert all(store.stat(name).etag == stamps[name] for name, _ in files if name not in ("images/03.png", "images/07.png"))
    store.close()


def test_the_gateway_serves_the_images(demo):
    gateway, _ = demo
    first_name, first = images.files()[0]
    last_name, last = images.files()[-1]

    async def go(http, _client):
        return await http.get(f"/assets/{first_name}"), await http.get(f"/assets/{last_name}"), await http.get("/assets/images/11.png")

    r, r_last, missing = run(gateway, go)
    assert r.status_code == 200 and r.content == first and r.headers["content-type"] == "image/png"
    assert first_name == "images/01.png" and len(first) == 891
    assert r_last.status_code == 200 and r_last.content == last and len(last) == 55_242
    assert missing.status_code == 404


# -- AssetService ---------------------------------------------------------------------------


def test_upload_download_list_through_the_gateway(demo):
    gateway, folder = demo
    png = images.png(300, seed=5)

    async def go(http, client):
        meta = await client.AssetService.upload("pics/mine.png", png)
        text = await client.AssetService.upload("uploads/notes.txt", "h\u00e9llo", "text/plain; charset=utf-8")
        down = await client.AssetService.download("uploads/pics/mine.png")
        seed = await client.AssetService.download("images/02.png")
        listed = await client.AssetService.list("uploads/")
        everything = await client.AssetService.list()
        served = await http.get("/assets/uploads/pics/mine.png")
        return meta, text, down, seed, listed, everything, served

    meta, text, down, seed, listed, everything, served = run(gateway, go)
    assert set(meta) == {"name", "size", "etag", "modified", "content_type"}
    assert meta["name"] == "uploads/pics/mine.png" and meta["size"] == 300 and meta["content_type"] == "image/png"
    assert text["name"] == "uploads/notes.txt" and text["size"] == 6 and text["content_type"] == "text/plain; charset=utf-8"
    assert bytes(down) == png and bytes(seed) == images.files()[1][1]
    assert [d["name"] for d in listed] == ["uploads/notes.txt", "uploads/pics/mine.png"]
    assert listed[1] == meta
    assert [d["name"] for d in everything] == sorted([n for n, _ in images.files()] + ["uploads/notes.txt", "uploads/pics/mine.png"])
    assert served.status_code == 200 and served.content == png and served.headers["content-type"] == "image/png"
    assert (folder / "uploads" / "pics" / "mine.png").read_bytes() == png


def test_an_upload_a_browser_would_run_is_served_as_a_download(tmp_path):
    gateway = demo_app.build(tmp_path / "tiles.sqlite3", assets=tmp_path / "assets")

    async def go(http, client):
        kinds = [
            (await client.AssetService.upload("page.html", "<script>alert(1)</script>"))["content_type"],
            (await client.AssetService.upload("pic.svg", "<svg onload='alert(1)'/>"))["content_type"],
            (await client.AssetService.upload("x.png", b"<html>", "text/html"))["content_type"],
            (await client.AssetService.upload("y.bin", b"x", "image/svg+xml"))["content_type"],
        ]
        served = await http.get("/assets/uploads/page.html")
        return kinds, served

    kinds, served = run(gateway, go)
    assert kinds == ["application/octet-stream"] * 4
    assert served.headers["content-type"] == "application/octet-stream" and served.headers["x-content-type-options"] == "nosniff"


def test_upload_limits_through_the_gateway(demo):
    gateway, folder = demo
    assert (MAX_UPLOAD, MAX_UPLOADS) == (1024 * 1024, 100)

    async def go(_http, client):
        faults = {}
        for key, call in {
            "too large": client.AssetService.upload("big.bin", b"\0" * (MAX_UPLOAD + 1)),
            "escape": client.AssetService.upload("../images/01.png", b"x"),
            "hidden": client.AssetService.upload(".secret", b"x"),
            "type": client.AssetService.upload("a.bin", b"x", "not a type"),
            "missing": client.AssetService.download("uploads/none.bin"),
            "bad name": client.AssetService.download("/etc/passwd"),
        }.items():
            with pytest.raises(Fault) as e:
                await call
            faults[key] = e.value
        largest = await client.AssetService.upload("max.bin", b"\1" * MAX_UPLOAD)
        return faults, largest

    faults, largest = run(gateway, go)
    assert faults["too large"].code == "Asset.TooLarge" and faults["too large"].message == f"an upload is at most {MAX_UPLOAD} bytes, not {MAX_UPLOAD + 1}"
    assert faults["escape"].code == "Asset.InvalidName" and "'..'" in faults["escape"].message
    assert faults["hidden"].code == "Asset.InvalidName" and "'.secret'" in faults["hidden"].message
    assert faults["type"].code == "Client.Argument" and "not a media type" in faults["type"].message
    assert faults["missing"].code == "Asset.NotFound" and faults["missing"].message == "no asset 'uploads/none.bin'"
    assert faults["bad name"].code == "Asset.InvalidName"
    assert largest["size"] == MAX_UPLOAD
    assert not (folder / "uploads" / "big.bin").exists() and (folder / "images" / "01.png").read_bytes() == images.files()[0][1]


def test_only_the_newest_uploads_are_kept(tmp_path):
    store = AssetStore.open(str(tmp_path / "a"), fsync=False)
    store.put("images/01.png", b"not an upload")
    services = Services({"AssetService": AssetService(store, max_uploads=3)})

    def upload(name):
        time.sleep(0.01)  # past the file system's timestamp granularity
        return asyncio.run(services.call("AssetService.upload", [name, b"x"]))["name"]

    for n in range(5):
        upload(f"{n}.bin")
    assert list(store.names()) == ["images/01.png", "uploads/2.bin", "uploads/3.bin", "uploads/4.bin"]
    upload("uploads/2.bin")  # a replacement is no new upload
    assert list(store.names("uploads/")) == ["uploads/2.bin", "uploads/3.bin", "uploads/4.bin"]
    upload("5.bin")  # the oldest goes: 2.bin, replaced, is now the newest but one
    assert list(store.names("uploads/")) == ["uploads/2.bin", "uploads/4.bin", "uploads/5.bin"]
    store.close()


# -- where the folder is ----------------------------------------------------------------------


def test_the_folder_is_beside_the_database_and_per_port(tmp_path, monkeypatch):
    monkeypatch.delenv(demo_assets.ENV, raising=False)
    monkeypatch.setenv("AMFKIT_DEMO_DB", str(tmp_path / "db" / "tiles.sqlite3"))
    assert demo_assets.default_path() == tmp_path / "db" / "demo-assets"
    assert demo_assets.default_path(8123) == tmp_path / "db" / "demo-assets-8123"
    assert demo_assets.default_path(db_path=tmp_path / "x.db") == tmp_path / "demo-assets"
    monkeypatch.setenv(demo_assets.ENV, str(tmp_path / "chosen"))
    assert demo_assets.default_path(8123) == tmp_path / "chosen"
    assert demo_assets.default_path(db_path=tmp_path / "x.db") == tmp_path / "demo-assets"  # a database given: beside it


def test_serve_demo_gives_every_worker_the_folder_of_its_port(tmp_path, monkeypatch):
    import uvicorn

    monkeypatch.setenv(demo_assets.ENV, "placeholder")
    monkeypatch.delenv(demo_assets.ENV)  # restored as absent afterwards
    monkeypatch.setenv("AMFKIT_DEMO_DB", str(tmp_path / "tiles.sqlite3"))
    monkeypatch.setenv("AMFKIT_DEMO_SHARED", "shm://unused")
    monkeypatch.setattr(demo_app, "_app", lambda scope, receive, send: None)  # not built
    started = []
    monkeypatch.setattr(uvicorn, "run", lambda target, **options: started.append((target, options)))
    assert main(["serve", "--demo", "--port", "8123", "--workers", "2"]) == 0
    assert started and started[0][1]["workers"] == 2
    assert os.environ[demo_assets.ENV] == str(tmp_path / "demo-assets-8123")
