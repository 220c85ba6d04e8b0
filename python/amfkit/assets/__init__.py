"""The asset store: named binary files (images, sounds, documents) kept on the file
system, SQLite, PostgreSQL, memcached or Redis, served over HTTP beside the gateway and
returned by services as ByteArrays.

    from amfkit.assets import AssetStore
    store = AssetStore.open("file:///var/lib/app/assets")
    asset = store.put("logos/amfkit.png", data, content_type="image/png")
    store.get("logos/amfkit.png")     # bytes; AssetNotFound (a KeyError) when absent
    gateway = Gateway(services, assets=store)   # GET and HEAD /assets/<name>

docs/assets.md describes the whole behaviour.
"""

from .names import MAX_COMPONENT_BYTES, MAX_NAME_BYTES, InvalidAssetName, check_name
from .store import (
    DEFAULT_MAX_SIZE,
    Asset,
    AssetChanged,
    AssetError,
    AssetNotFound,
    AssetReader,
    AssetStore,
    AssetTooLarge,
    StoreUnavailable,
)

__all__ = [
    "Asset",
    "AssetChanged",
    "AssetError",
    "AssetNotFound",
    "AssetReader",
    "AssetStore",
    "AssetTooLarge",
    "DEFAULT_MAX_SIZE",
    "InvalidAssetName",
    "MAX_COMPONENT_BYTES",
    "MAX_NAME_BYTES",
    "StoreUnavailable",
    "check_name",
]
