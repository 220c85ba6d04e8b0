"""Credentials and principals: the gateway's authenticator, `user:password` tokens, and
the principal kept in a session (docs/gateway.md, "Credentials")."""

from __future__ import annotations

import base64
import binascii
import inspect
from collections.abc import Mapping
from typing import Any, Callable

from .._text import shown
from .services import Principal
from .sessions import PRINCIPAL_KEY

__all__ = ["Authenticator", "authenticate", "principal_of", "split_credentials", "stored"]

#: `authenticator(userid, password)`: sync or async; a `Principal`, None to refuse, or
#: any other true value for a principal named `userid` with no roles.
Authenticator = Callable[[str, str], Any]


async def authenticate(authenticator: Authenticator, user: Any, password: Any) -> Principal | None:
    """The principal `authenticator` accepts for these credentials; None when refused."""
    result = authenticator(user, password)
    if inspect.isawaitable(result):
        result = await result
    if result is None or result is False:
        return None
    if isinstance(result, Principal):
        return result
    return Principal(user if isinstance(user, str) else shown(user))


def split_credentials(token: Any, charset: Any = None) -> tuple[str, str]:
    """base64 `user:password` (a str or bytes) -> (user, password); ValueError if not."""
    if isinstance(token, str):
        token = token.strip().encode("ascii", "replace")
    if not isinstance(token, (bytes, bytearray)):
        raise ValueError("base64 'user:password' text was expected")
    try:
        raw = base64.b64decode(bytes(token), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64") from None
    enc = charset if isinstance(charset, str) and charset.lower() in ("utf-8", "iso-8859-1", "latin-1", "us-ascii") else "utf-8"
    try:
        text = raw.decode(enc)
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    user, sep, password = text.partition(":")
    if not sep:
        raise ValueError("no ':' between user and password")
    return user, password


def stored(principal: Principal) -> list[Any]:
    """A principal as a session keeps it under `PRINCIPAL_KEY`: `[name, [roles...]]`."""
    return [principal.name, sorted(principal.roles)]


def principal_of(session: Mapping[str, Any] | None) -> Principal | None:
    """The principal a session keeps, if any."""
    if not session:
        return None
    value = session.get(PRINCIPAL_KEY)
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str):
        return Principal(value[0], frozenset(value[1] or ()))
    return None
