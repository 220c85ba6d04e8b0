"""TCP streams out of captured segments: each direction of a connection put back in
order, retransmitted and overlapping bytes kept once, with bounds.

Why amfkit has its own (the README's dependency notes): the libraries measured for this
did not do the job. scapy's `TCPSession` fills a missing segment with zeros and parses
the stream at once (a segment that comes out of order gives an HTTP body with a hole of
zeros); dpkt has no reassembly; pypcapkit groups by ACK number, allocates the whole
distance to a forged sequence number (gigabytes) and takes seconds to import. This
module only orders bytes: reading the capture file (dpkt) and HTTP (h11) are libraries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Stream", "DEFAULT_MAX_STREAM", "DEFAULT_WINDOW"]

#: The most bytes one direction of one connection may carry (more: cut, with a note).
DEFAULT_MAX_STREAM = 256 * 1024 * 1024
#: How far past the bytes delivered a segment may start and still be kept (a TCP window
#: is at most 1 GiB with scaling; real out-of-order gaps are a few segments).
DEFAULT_WINDOW = 16 * 1024 * 1024
#: The most segments waiting for an earlier one, per direction.
MAX_PENDING = 4096

_MOD = 1 << 32


@dataclass
class Stream:
    """One direction of a TCP connection. `start(seq)` sets the first byte's sequence
    number (the SYN's plus one); `add(seq, data, time)` takes a segment in any order;
    `chunks` are the bytes delivered in order, each with the time of the segment that
    completed it. `notes` say what was dropped."""

    max_bytes: int = DEFAULT_MAX_STREAM
    window: int = DEFAULT_WINDOW
    base: int | None = None
    delivered: int = 0
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    pending: dict[int, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    cut: bool = False
    fin: bool = False

    def start(self, isn: int) -> None:
        if self.base is None:
            self.base = (isn + 1) % _MOD

    def add(self, seq: int, data: bytes, time: float) -> None:
        if not data or self.cut:
            return
        if self.base is None:  # the capture began after the handshake
            self.base = seq
        offset = (seq - self.base) % _MOD
        if offset >= _MOD // 2:  # before the base: wholly or partly a retransmission
            behind = _MOD - offset
            if behind >= len(data):
                return
            data, offset = data[behind:], 0
        if offset < self.delivered:
            if offset + len(data) <= self.delivered:
                return  # a retransmission of bytes already delivered
            data = data[self.delivered - offset :]
            offset = self.delivered
        if offset - self.delivered > self.window:
            self._note(f"a segment {offset - self.delivered} bytes ahead of the stream was dropped")
            return
        if offset > self.delivered:
            if len(self.pending) >= MAX_PENDING:
                self._note(f"more than {MAX_PENDING} segments out of order: later ones dropped")
                return
            if len(data) > len(self.pending.get(offset, b"")):
                self.pending[offset] = data
            return
        self._deliver(data, time)
        pending = self.pending
        while pending:
            # Segments now reached (retransmissions may overlap what was delivered).
            ready = [o for o in pending if o <= self.delivered]
            if not ready:
                break
            for o in sorted(ready):
                piece = pending.pop(o)
                if o + len(piece) > self.delivered:
                    self._deliver(piece[self.delivered - o :], time)

    def _deliver(self, data: bytes, time: float) -> None:
        room = self.max_bytes - self.delivered
        if len(data) > room:
            data = data[:room]
            self.cut = True
            self._note(f"stream cut at {self.max_bytes} bytes")
        if data:
            self.chunks.append((time, data))
            self.delivered += len(data)

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    @property
    def missing(self) -> bool:
        """Whether bytes after a gap are waiting (a segment was never captured)."""
        return bool(self.pending)
