"""Messaging destinations: what a Producer sends to and a Consumer subscribes to, with
their access rules (docs/messaging.md, "Destinations").

    >>> from amfkit.messaging.destinations import Destination
    >>> Destination("prices", send_roles=()).may_send(None)        # server-publish only
    False
    >>> Destination("chat", subscribe_roles=["member"]).subscribe_roles
    frozenset({'member'})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Union

from ..remoting.services import Principal

__all__ = ["Destination", "Roles"]

#: Who may send or subscribe: None, anyone; else an authenticated principal holding one
#: of these roles (none at all: no client, only the server's own `publish`).
Roles = Union[Iterable[str], None]


@dataclass(frozen=True, init=False)
class Destination:
    """A destination's name and rules.

    - `send_roles`, `subscribe_roles`: None (the default) lets any client send or
      subscribe; roles require an authenticated principal holding one of them (the
      gateway's authenticator gives principals); `()` lets no client do it.
    - `allow_subtopics`: whether messages and subscriptions may name subtopics.
    - `ttl`: seconds every message sent here lives, replacing the time to live the
      sender set (BlazeDS's `message-time-to-live`); None keeps the sender's (0: forever).
    """

    name: str
    send_roles: frozenset[str] | None
    subscribe_roles: frozenset[str] | None
    allow_subtopics: bool
    ttl: float | None

    def __init__(
        self,
        name: str,
        *,
        send_roles: Roles = None,
        subscribe_roles: Roles = None,
        allow_subtopics: bool = True,
        ttl: float | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a destination's name must be a non-empty str")
        if isinstance(send_roles, str) or isinstance(subscribe_roles, str):
            raise TypeError("roles are a list of names, not one str")
        if ttl is not None and ttl < 0:
            raise ValueError("ttl must be 0 or more seconds (None keeps the sender's)")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "send_roles", None if send_roles is None else frozenset(send_roles))
        object.__setattr__(self, "subscribe_roles", None if subscribe_roles is None else frozenset(subscribe_roles))
        object.__setattr__(self, "allow_subtopics", bool(allow_subtopics))
        object.__setattr__(self, "ttl", None if ttl is None else float(ttl))

    def may_send(self, principal: Principal | None) -> bool:
        """Whether a client with this principal (None: not authenticated) may send here."""
        return _allowed(self.send_roles, principal)

    def may_subscribe(self, principal: Principal | None) -> bool:
        """Whether a client with this principal may subscribe here."""
        return _allowed(self.subscribe_roles, principal)


def _allowed(roles: frozenset[str] | None, principal: Principal | None) -> bool:
    if roles is None:
        return True
    return principal is not None and bool(roles & principal.roles)
