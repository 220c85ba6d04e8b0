"""Helpers for the messaging channel tests over a real uvicorn server: one server per test
module whose app each test installs (`Switch`), Flex messages and AMF posts over httpx,
the HTTP stream's frames (parsed after HTTP de-chunking) and a raw-socket client that can
vanish mid-request."""

from __future__ import annotations

import asyncio
import queue
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

import amfkit
from amfkit.remoting import packet
from amfkit.remoting import messages as m
from amfkit.remoting.services import Context

from gateway_util import flex_shape, raw_packet

Op = m.Operation


class Ticker:
    """A service that publishes, as an application's server code does."""

    def quote(self, symbol: str, bid: float, context: Context) -> str:
        return context.publish("prices", {"symbol": symbol, "bid": bid}, headers={"symbol": symbol}, subtopic="fx.eur")

    def echo(self, value: Any) -> Any:
        return value

    async def publish_slowly(self, body: Any, context: Context) -> str:
        """Publish to "chat", then take a while to answer."""
        message_id = context.publish("chat", body)
        await asyncio.sleep(0.05)
        return message_id


class Switch:
    """The app of a module's one server: whatever app the current test installed. It
    notes the server's event loop, for looking at its tasks."""

    def __init__(self) -> None:
        self.app: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.loop = asyncio.get_running_loop()
        await self.app(scope, receive, send)

    def flood(self, publish: Callable[[int], Any], n: int) -> None:
        """Call `publish(i)` for i in range(n) on the server's loop, letting the loop run
        its other tasks every few calls (as requests publishing would)."""
        assert self.loop is not None

        async def run() -> None:
            for i in range(n):
                publish(i)
                if i % 16 == 15:
                    await asyncio.sleep(0)

        asyncio.run_coroutine_threadsafe(run(), self.loop).result(60)

    def tasks(self) -> list[str]:
        """The names of the tasks on the server's loop now (this look excepted)."""
        assert self.loop is not None

        async def names() -> list[str]:
            me = asyncio.current_task()
            return sorted(t.get_name() for t in asyncio.all_tasks() if t is not me)

        return asyncio.run_coroutine_threadsafe(names(), self.loop).result(5)


def command(op: int, dsid: str = "nil", destination: str = "", client_id: Any = None, body: Any = None, **headers: Any) -> m.CommandMessage:
    return m.CommandMessage(operation=op, destination=destination, clientId=client_id, body=body, headers={"DSId": dsid, **headers})


def send(destination: str = "prices", body: Any = "hello", dsid: str = "nil", **headers: Any) -> m.AsyncMessage:
    return m.AsyncMessage(destination=destination, body=body, headers={"DSId": dsid, **headers})


def packet_of(*messages: Any) -> bytes:
    return raw_packet(3, [("null", f"/{i + 1}", flex_shape(x)) for i, x in enumerate(messages)])


def post(url: str, *messages: Any, timeout: float = 10) -> list[Any]:
    """POST one AMF packet of Flex messages; the answers' values."""
    r = httpx.post(url, content=packet_of(*messages), headers={"content-type": "application/x-amf"}, timeout=timeout)
    assert r.status_code == 200, r.text
    return [b.value for b in packet.decode(r.content).bodies]


def ping(url: str, **headers: Any) -> str:
    (ack,) = post(url, command(Op.CLIENT_PING, **headers))
    return str(ack.headers["DSId"])


def subscribe(url: str, dsid: str, destination: str = "prices", **headers: Any) -> str:
    (ack,) = post(url, command(Op.SUBSCRIBE, dsid, destination, **headers))
    assert isinstance(ack, m.AcknowledgeMessage) and not isinstance(ack, m.ErrorMessage), ack
    return str(ack.clientId)


def msg(destination: str = "prices", body: Any = 1, subtopics: tuple[str, ...] = (), **headers: Any) -> Any:
    """A broker's message record with these headers."""
    from amfkit.messaging import Message

    return Message(destination, body, headers, subtopics)


def drained(broker: Any, client_id: str, **kw: Any) -> list[tuple[str, Any]]:
    """(consumer id, body) of what `broker.receive` drains for the client now."""
    batch = asyncio.run(broker.receive(client_id, **kw))
    assert batch is not None
    return [(d.consumer_id, d.message.body) for d in batch.deliveries]


def wait_until(condition: Callable[[], Any], timeout: float = 5.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.01)


class Frames:
    """The frames of an HTTP stream's body (after HTTP de-chunking): `<hex length>\\r\\n
    <AMF3 value>\\r\\n`, with single 0x00 heartbeat bytes between them."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.heartbeats = 0

    def feed(self, data: bytes) -> list[bytes]:
        buf = self.buffer
        buf += data
        out = []
        while True:
            i = 0
            while i < len(buf) and buf[i] == 0:
                i += 1
            self.heartbeats += i
            del buf[:i]
            end = buf.find(b"\r\n")
            if end < 0:
                return out
            n = int(bytes(buf[:end]), 16)
            if len(buf) < end + 2 + n + 2:
                return out
            out.append(bytes(buf[end + 2 : end + 2 + n]))
            assert buf[end + 2 + n : end + 4 + n] == b"\r\n", "a frame must end with CRLF"
            del buf[: end + 4 + n]


class StreamClient:
    """An open HTTP stream read by a thread: `next()` gives each frame's decoded value
    (its raw bytes in `raw`), None at the end of the stream."""

    def __init__(self, url: str, dsid: str | None, *, query: str = "command=open&version=1", form: dict[str, str] | None = None) -> None:
        self.url = url
        self.dsid = dsid
        self.frames: queue.Queue[bytes | None] = queue.Queue()
        self.parser = Frames()
        self.status: int | None = None
        self.headers: httpx.Headers | None = None
        self.text = ""
        self.opened = threading.Event()
        self.client = httpx.Client(timeout=httpx.Timeout(10, read=30))
        body = form if form is not None else ({"DSId": dsid} if dsid is not None else {})
        self.thread = threading.Thread(target=self._run, args=(f"{url}?{query}", body), daemon=True)
        self.thread.start()
        assert self.opened.wait(10), "the stream did not answer"

    def _run(self, url: str, form: dict[str, str]) -> None:
        try:
            with self.client.stream("POST", url, data=form) as r:
                self.status, self.headers = r.status_code, r.headers
                if r.status_code != 200:
                    self.text = r.read().decode()
                    self.opened.set()
                    return
                self.opened.set()
                for chunk in r.iter_raw():
                    for data in self.parser.feed(chunk):
                        self.frames.put(data)
        except httpx.HTTPError:
            pass
        finally:
            self.opened.set()
            self.frames.put(None)

    def next_raw(self, timeout: float = 5) -> bytes | None:
        return self.frames.get(timeout=timeout)

    def next(self, timeout: float = 5) -> Any:
        data = self.next_raw(timeout)
        return None if data is None else amfkit.amf3.decode(data)

    def close(self) -> None:
        self.client.close()
        self.thread.join(10)


class Chunks:
    """HTTP/1.1 chunked transfer decoding, fed as bytes come."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.ended = False

    def feed(self, data: bytes) -> bytes:
        buf = self.buffer
        buf += data
        out = bytearray()
        while not self.ended:
            end = buf.find(b"\r\n")
            if end < 0:
                break
            n = int(bytes(buf[:end]).split(b";")[0], 16)
            if len(buf) < end + 2 + n + 2:
                break
            out += buf[end + 2 : end + 2 + n]
            del buf[: end + 4 + n]
            self.ended = n == 0
        return bytes(out)


class RawRequest:
    """A POST sent on a plain socket, whose client can vanish mid-answer (`kill`) or
    read slowly (`receive_buffer` bytes of kernel buffer: a small one stops the sender
    soon)."""

    def __init__(self, host: str, port: int, path: str, body: bytes, content_type: str, *, receive_buffer: int | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(10)
        self.sock.connect((host, port))
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        self.sock.sendall(head + body)

    def read_until(self, marker: bytes, timeout: float = 5) -> bytes:
        """Read until `marker` has arrived; everything read."""
        self.sock.settimeout(timeout)
        data = b""
        while marker not in data:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data

    def kill(self) -> None:
        """Vanish: the connection is reset, no more bytes read or sent."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self.sock.close()


class RawWebSocket:
    """A WebSocket client on a plain socket (websockets' sans-I/O protocol) that reads
    only when asked: a stalled reader, for the tests of slow consumers. `receive_buffer`
    bytes of kernel buffer (a small one stops the sender soon)."""

    def __init__(self, url: str, *, receive_buffer: int = 16384) -> None:
        from websockets.client import ClientProtocol
        from websockets.uri import parse_uri

        uri = parse_uri(url)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(10)
        self.sock.connect((uri.host, uri.port))
        self.protocol = ClientProtocol(uri, max_size=None)
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        self.pending: list[bytes] = []
        while self.protocol.handshake_exc is None and self.protocol.state.name == "CONNECTING":
            self._read()
        assert self.protocol.handshake_exc is None, self.protocol.handshake_exc

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.sock.sendall(data)

    def _read(self) -> None:
        data = self.sock.recv(1 << 16)
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
        for event in self.protocol.events_received():
            if getattr(event, "opcode", None) is not None and event.opcode.name == "BINARY":
                self.pending.append(bytes(event.data))
        self._flush()

    def send(self, message: Any) -> None:
        self.protocol.send_binary(amfkit.amf3.encode(message))
        self._flush()

    def receive(self) -> Any:
        while not self.pending:
            self._read()
        return amfkit.amf3.decode(self.pending.pop(0))

    def close(self) -> None:
        self.sock.close()
