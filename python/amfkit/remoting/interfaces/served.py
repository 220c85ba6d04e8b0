"""What the serving interfaces read from the gateway: `Served` (a `Gateway` is one), so
that they need not import it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Protocol

from .. import http as _http
from ..request import Settings

if TYPE_CHECKING:
    from ...assets.http import AssetServer
    from ..cors import CORSPolicy

__all__ = ["Served"]


class Served(Settings, Protocol):
    """A gateway as its interfaces see it: the AMF settings, and its HTTP options and
    routing."""

    path: str | None
    server_timing: bool
    gzip_threshold: int | None
    gzip_level: int
    body_timer: _http.BodyTimer
    assets: AssetServer | None
    cors: CORSPolicy | None

    def __call__(self, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[[Any], Any]) -> Awaitable[None]: ...

    def _on_path(self, path: str) -> bool: ...

    def close(self) -> None: ...

    def _respond(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes,
        *,
        receive: Callable[[], Awaitable[Any]] | None = None,
        scheme: str | None = None,
    ) -> Awaitable[_http.Response]: ...
