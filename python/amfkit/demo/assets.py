"""The demo's asset store: a folder of named files the demo gateway serves at
GET /assets/NAME, holding the file storage article's ten PNG files (`amfkit.demo.images`,
put at startup when missing or different) and what clients upload through
`AssetService` (under uploads/, at most 1 MiB each, the 100 newest kept).

`default_path(port=None, db_path=None)` says where the folder is: beside the database
`db_path` when one is given, else at `AMFKIT_DEMO_ASSETS` when set, else beside the
default database (`amfkit.demo.data.default_path()`); named `demo-assets-PORT` for the
server on PORT (`amfkit serve --demo` sets `AMFKIT_DEMO_ASSETS` to it, so that all its
workers share one folder), `demo-assets` otherwise. docs/gateway.md (The demo gateway).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Optional

from ..assets import Asset, AssetError, AssetNotFound, AssetStore, check_name
from ..assets.names import check_content_type
from ..assets.store import guess_type
from ..remoting.services import Fault
from . import data as demo_data, images

__all__ = [
    "ENV",
    "MAX_UPLOAD",
    "MAX_UPLOADS",
    "UPLOADS",
    "AssetService",
    "default_path",
    "open_store",
    "seed",
]

#: The environment variable naming the demo's asset folder.
ENV = "AMFKIT_DEMO_ASSETS"
#: Where uploads go, and the limits on them.
UPLOADS = "uploads/"
MAX_UPLOAD = 1024 * 1024
MAX_UPLOADS = 100
#: The content types an upload keeps (prefixes); any other is served as
#: application/octet-stream (a download, never a page of the demo's origin).
SAFE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "audio/", "video/", "text/plain", "application/octet-stream", "application/json", "application/x-amf")

#: What `AssetService.list` returns.
AssetList = list[dict[str, Any]]


def default_path(port: Optional[int] = None, db_path: Optional[str | os.PathLike[str]] = None) -> Path:
    """The demo's asset folder (see the module docstring)."""
    name = "demo-assets" if port is None else f"demo-assets-{port}"
    if db_path is not None:
        return Path(db_path).expanduser().absolute().parent / name
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    return demo_data.default_path().absolute().parent / name


def open_store(where: AssetStore | str | os.PathLike[str]) -> AssetStore:
    """The demo's store, seeded (`seed`): `where` when it is one, else a file store at
    the folder `where`."""
    store = where if isinstance(where, AssetStore) else AssetStore.open(os.fspath(where))
    seed(store)
    return store


def seed(store: AssetStore) -> int:
    """Put the demo's images that are missing or different; returns how many were put.
    Puts are atomic, so workers starting together may all do it."""
    put = 0
    for name, data in images.files():
        try:
            same = store.stat(name).size == len(data) and store.get(name) == data
        except AssetNotFound:
            same = False
        if not same:
            store.put(name, data, content_type="image/png")
            put += 1
    return put


def metadata(asset: Asset) -> dict[str, Any]:
    """An asset's metadata as the services return it (`modified` travels as a Date)."""
    return {
        "name": asset.name,
        "size": asset.size,
        "etag": asset.etag,
        "modified": asset.modified,
        "content_type": asset.content_type,
    }


class AssetService:
    """The demo's files: upload, download and list (every one is also served at
    GET /assets/NAME).

        AssetService.upload("notes/hi.txt", ByteArray(b"hello"))
            -> {name: "uploads/notes/hi.txt", size: 5, etag, modified, content_type: "text/plain"}
        AssetService.download("images/01.png")    -> a ByteArray of 891 bytes
        AssetService.list("images/")              -> [{name: "images/01.png", size: 891, ...}, ...]
    """

    def __init__(self, store: AssetStore, *, max_upload: int = MAX_UPLOAD, max_uploads: int = MAX_UPLOADS) -> None:
        self.store = store
        self.max_upload = max_upload
        self.max_uploads = max_uploads

    async def upload(self, name: str, data: bytes | str, content_type: Optional[str] = None) -> dict[str, Any]:
        """Store `data` (a ByteArray, or text stored as UTF-8) as uploads/NAME (a name
        already under uploads/ is kept), at most 1 MiB; `content_type` defaults to what
        the extension suggests (HTML, SVG, scripts and other types a browser would run
        are stored as application/octet-stream). Past 100 uploads the oldest are removed. Returns the
        upload's metadata: {name, size, etag, modified, content_type}."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if len(data) > self.max_upload:
            raise Fault(f"an upload is at most {self.max_upload} bytes, not {len(data)}", code="Asset.TooLarge")
        full = check_name(name if name.startswith(UPLOADS) else UPLOADS + name)  # else Asset.InvalidName
        if content_type is not None:
            try:
                check_content_type(content_type)
            except ValueError as e:
                raise Fault(str(e), code="Client.Argument") from None
        # Anyone may upload to the demo, and its uploads are served from the gateway's
        # own origin: nothing a browser would run there (HTML, SVG, scripts) is served
        # as such.
        kind = (content_type or guess_type(full)).split(";", 1)[0].strip().lower()
        if not kind.startswith(SAFE_TYPES):
            content_type = "application/octet-stream"
        asset = await self.store.aput(full, data, content_type=content_type)
        await asyncio.to_thread(self._prune, full)
        return metadata(asset)

    async def download(self, name: str) -> Asset:
        """The asset NAME (images/01.png, uploads/...): its bytes, as a ByteArray (the
        fault Asset.NotFound when there is none)."""
        return await self.store.aload(name)

    async def list(self, prefix: str = "") -> list[dict[str, Any]]:
        """The metadata of the assets whose names start with `prefix` (all by default),
        sorted by name: [{name, size, etag, modified, content_type}, ...]."""
        return await asyncio.to_thread(self._list, prefix)

    def _list(self, prefix: str) -> AssetList:
        out: AssetList = []
        for name in self.store.names(prefix):
            try:
                out.append(metadata(self.store.stat(name)))
            except AssetNotFound:
                continue  # removed since it was listed
        return out

    def _prune(self, keep: str) -> None:
        """Remove the oldest uploads past `max_uploads` (never `keep`, just put)."""
        uploads = []
        for name in self.store.names(UPLOADS):
            try:
                uploads.append(self.store.stat(name))
            except AssetNotFound:
                continue
        excess = len(uploads) - self.max_uploads
        if excess <= 0:
            return
        uploads.sort(key=lambda a: (a.modified, a.name))
        for asset in [a for a in uploads if a.name != keep][:excess]:
            try:
                self.store.delete(asset.name)
            except AssetError:
                continue  # another worker removed it first
