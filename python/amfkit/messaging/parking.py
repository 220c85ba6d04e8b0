"""The bounds on parked polls (long-polling): how many one process holds, and how many
one client does (docs/messaging.md, "Long-polling").

A client holds at most `max_per_client` parked polls: a newer poll displaces its oldest
one, which is answered at once as a no-op (`DSNoOpPoll`): the client listens to its
newest poll, and an older one is most often a request whose connection it gave up.

    >>> parking = Parking(max_parked=10, max_per_client=1)
    >>> first, _ = parking.park("client-1")
    >>> second, displaced = parking.park("client-1")
    >>> first.displaced, displaced, parking.parked
    (True, 1, 1)
"""

from __future__ import annotations

import threading

__all__ = ["Parking", "Ticket"]


class Ticket:
    """One parked poll. `displaced` turns true when a newer poll of its client takes its
    place: the poll then ends with a no-op answer."""

    __slots__ = ("client_id", "displaced")

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.displaced = False


class Parking:
    """Parked polls of one process, bounded in all and per client. Thread-safe."""

    def __init__(self, max_parked: int, max_per_client: int) -> None:
        if max_parked < 0 or max_per_client < 0:
            raise ValueError("max_parked and max_parked_per_client must be 0 or more")
        self.max_parked = int(max_parked)
        self.max_per_client = int(max_per_client)
        self._lock = threading.Lock()
        self._by_client: dict[str, list[Ticket]] = {}
        self._count = 0

    @property
    def parked(self) -> int:
        """The polls parked now."""
        return self._count

    def parked_by(self, client_id: str) -> int:
        """The polls one client has parked now."""
        with self._lock:
            return len(self._by_client.get(client_id, ()))

    def park(self, client_id: str) -> tuple[Ticket | None, int]:
        """(a ticket for a new parked poll of the client, how many of its older polls it
        displaced); the ticket is None when the process holds `max_parked` polls (or
        parking is off): answer that poll at once."""
        if self.max_per_client == 0:
            return None, 0
        with self._lock:
            mine = self._by_client.get(client_id)
            displaced = 0
            if mine is not None:
                while len(mine) >= self.max_per_client:
                    mine.pop(0).displaced = True
                    self._count -= 1
                    displaced += 1
            if self._count >= self.max_parked:
                if mine is not None and not mine:
                    del self._by_client[client_id]
                return None, displaced
            ticket = Ticket(client_id)
            if mine is None:
                mine = self._by_client[client_id] = []
            mine.append(ticket)
            self._count += 1
            return ticket, displaced

    def release(self, ticket: Ticket) -> None:
        """The poll ended (answered, timed out, cancelled); a displaced ticket is already
        released."""
        with self._lock:
            mine = self._by_client.get(ticket.client_id)
            if mine is None:
                return
            try:
                mine.remove(ticket)
            except ValueError:
                return
            self._count -= 1
            if not mine:
                del self._by_client[ticket.client_id]
