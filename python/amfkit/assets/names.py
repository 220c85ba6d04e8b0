"""Asset names: the one set of rules every backend applies (docs/assets.md, "Names").

A name is a relative, '/'-separated path of UTF-8 text: `logos/amfkit.png`. Refused:
an empty name or component (`a//b`, a trailing '/'), a leading '/', a component that
starts with '.' (so `.`, `..` and hidden files; the file system backend keeps its
temporary files in such a folder), a backslash, NUL and other control characters (C0,
DEL, C1), more than `MAX_NAME_BYTES` bytes of UTF-8 in all or `MAX_COMPONENT_BYTES` in one
component, and text that is not valid Unicode (lone surrogates).
"""

from __future__ import annotations

import re

from .._text import shown

__all__ = ["InvalidAssetName", "MAX_COMPONENT_BYTES", "MAX_NAME_BYTES", "check_name", "check_content_type"]

#: The longest name, in bytes of UTF-8.
MAX_NAME_BYTES = 1024
#: The longest component (what most file systems allow in one file name).
MAX_COMPONENT_BYTES = 255
#: The longest Content-Type a put may give.
MAX_CONTENT_TYPE = 255

_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")
_CONTENT_TYPE = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+/[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*;\s*[\x21-\x7e]+(=[\x20-\x7e]*)?)*")


class InvalidAssetName(ValueError):
    """A name the store refuses (the text says which rule)."""


def check_name(name: object) -> str:
    """`name` when it is a valid asset name; raises `InvalidAssetName` saying why not."""
    if not isinstance(name, str):
        raise InvalidAssetName(f"an asset name is a str, not {type(name).__name__}")
    if not name:
        raise InvalidAssetName("an asset name may not be empty")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidAssetName(f"asset name {shown(name)} is not valid Unicode") from None
    if size > MAX_NAME_BYTES:
        raise InvalidAssetName(f"asset name of {size} bytes is longer than {MAX_NAME_BYTES}")
    bad = _BAD_CHARS.search(name)
    if bad is not None:
        raise InvalidAssetName(f"asset name {shown(name)} holds {bad.group()!r} at {bad.start()} (no control characters or backslashes)")
    if name.startswith("/"):
        raise InvalidAssetName(f"asset name {shown(name)} is absolute (names are relative paths)")
    for part in name.split("/"):
        if not part:
            raise InvalidAssetName(f"asset name {shown(name)} has an empty component")
        if part.startswith("."):
            raise InvalidAssetName(f"asset name {shown(name)} has a component starting with '.' ({shown(part)})")
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise InvalidAssetName(f"asset name {shown(name)} has a component longer than {MAX_COMPONENT_BYTES} bytes")
    return name


def check_content_type(value: object) -> str:
    """`value` when it is a plain `type/subtype[; parameters]` media type (nothing that
    could break a header line); raises ValueError otherwise."""
    if not isinstance(value, str) or len(value) > MAX_CONTENT_TYPE or not _CONTENT_TYPE.fullmatch(value):
        raise ValueError(f"content type {shown(value)} is not a media type like 'image/png'")
    return value
