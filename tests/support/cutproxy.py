"""A TCP proxy in front of a real server that loses one answer on demand: armed with a
pattern, the next request holding it reaches the server and is carried out there, and
the connection is cut before the server's answer reaches the client. What a client
sees when the server (or the network) goes away between applying a write and
answering it. Armed with a pattern of the answers (`arm_answer`), the next bytes from
the server holding it are dropped and their connection cut: what a client sees when a
server dies after writing to its socket, before the bytes arrived.

    proxy = CuttingProxy(redis_server.host, redis_server.port)
    proxy.arm(b"EVALSHA")       # the next request holding it: applied, never answered
    proxy.arm(b"EVALSHA", apply=False)  # ... cut before it reaches the server
    ...
    assert proxy.cut.wait(5)
    proxy.close()
"""

from __future__ import annotations

import socket
import threading

__all__ = ["CuttingProxy"]


class _Pair:
    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.cutting = False

    def close(self) -> None:
        for s in (self.client, self.server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


class CuttingProxy:
    """Listens on 127.0.0.1 (`port`) and relays each connection to `host:port`."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._pattern: bytes | None = None
        self._answer: bytes | None = None
        self._apply = True
        self._pairs: list[_Pair] = []
        self.cut = threading.Event()
        self._open = threading.Event()  # cleared: new connections wait (`hold`)
        self._open.set()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, pattern: bytes, *, apply: bool = True) -> None:
        """Cut the connection of the next request holding `pattern`, once it was sent on
        (`apply=False`: before, so the server never sees it)."""
        with self._lock:
            self.cut.clear()
            self._pattern = pattern
            self._apply = apply

    def arm_answer(self, pattern: bytes) -> None:
        """Drop the next bytes from the server holding `pattern`, and cut their connection."""
        with self._lock:
            self.cut.clear()
            self._answer = pattern

    def hold(self) -> None:
        """New connections wait, accepted but not relayed, until `release`."""
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._open.wait()
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            pair = _Pair(client, server)
            with self._lock:
                self._pairs.append(pair)
            threading.Thread(target=self._up, args=(pair,), daemon=True).start()
            threading.Thread(target=self._down, args=(pair,), daemon=True).start()

    def _up(self, pair: _Pair) -> None:
        """Client to server: a request holding the armed pattern marks its connection."""
        try:
            while True:
                data = pair.client.recv(65536)
                if not data:
                    break
                with self._lock:
                    drop = False
                    if self._pattern is not None and self._pattern in data:
                        self._pattern = None
                        pair.cutting = True  # before the server can answer
                        drop = not self._apply
                if drop:
                    pair.close()
                    self.cut.set()
                    return
                pair.server.sendall(data)
        except OSError:
            pass
        pair.close()

    def _down(self, pair: _Pair) -> None:
        """Server to client: the answer to a marked request is dropped, and both cut."""
        try:
            while True:
                data = pair.server.recv(65536)
                if not data:
                    break
                with self._lock:
                    if self._answer is not None and self._answer in data:
                        self._answer = None
                        pair.cutting = True
                if pair.cutting:
                    pair.close()
                    self.cut.set()
                    return
                pair.client.sendall(data)
        except OSError:
            pass
        pair.close()

    def cut_now(self) -> None:
        """Cut every connection open now (new ones are relayed as before)."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            pair.close()
        self.cut.set()

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            pair.close()
