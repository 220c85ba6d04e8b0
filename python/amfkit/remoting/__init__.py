"""AMF remoting: the packet, Flex messages, services, the gateway and the client.

    from amfkit.remoting import Gateway, Client
    gateway = Gateway({"EchoService": EchoService()})   # an ASGI app; gateway.wsgi for WSGI
    Client("http://127.0.0.1:8000/gateway").EchoService.echo([1, 2, 3])

The client needs httpx (`pip install amfkit[client]`); it is imported on first use, so
the gateway and the codec work without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import messages, packet
from .gateway import Gateway
from .packet import Body, Envelope, Header
from .services import Context, Fault, Principal, Services, requires
from .sessions import MemorySessionStore, Session, SessionStore

if TYPE_CHECKING:
    from .client import AsyncClient, Client, TransportError

__all__ = [
    "AsyncClient",
    "Body",
    "Client",
    "Context",
    "Envelope",
    "Fault",
    "Gateway",
    "Header",
    "MemorySessionStore",
    "Principal",
    "Services",
    "Session",
    "SessionStore",
    "TransportError",
    "messages",
    "packet",
    "requires",
]

_CLIENT_NAMES = ("AsyncClient", "Client", "TransportError")


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
