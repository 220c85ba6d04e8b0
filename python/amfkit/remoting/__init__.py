"""AMF remoting: the packet, Flex messages, services, the gateway and the client."""

from __future__ import annotations

from . import messages, packet
from .packet import Body, Envelope, Header
from .services import Context, Fault, Principal, Services, requires

__all__ = [
    "Body",
    "Context",
    "Envelope",
    "Fault",
    "Header",
    "Principal",
    "Services",
    "messages",
    "packet",
    "requires",
]
