"""The gateway-under-abuse load test's pieces: a real `amfkit serve --demo` process on
127.0.0.1, what /proc says about it, a raw HTTP/1.1 exchange over a socket, the hostile
requests and their expected answers, and the valid and abusive client loops.

Everything runs in threads of the test process against the server process; each loop
runs until a shared `threading.Event` is set and records what it saw in a `Tally`.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from amfkit.remoting import packet
from amfkit.remoting.packet import Body, Envelope

from wire import u29

HOST = "127.0.0.1"
PATH = "/gateway"


# --- the server process ---------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class Server:
    """`amfkit serve --demo` in a subprocess (one worker: the process is the server)."""

    proc: subprocess.Popen[bytes]
    port: int
    stderr_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}{PATH}"

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def start_time(self) -> str:
        """Field 22 of /proc/PID/stat: when the process started (changes if the pid is reused)."""
        stat = Path(f"/proc/{self.pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_fds(self, at_most: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        n = self.fds()
        while n > at_most and time.monotonic() < deadline:
            time.sleep(0.1)
            n = self.fds()
        return n

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a hang is a bug worth seeing
                self.proc.kill()
                self.proc.wait(10)


def start_server(tmp: Path, *, header_timeout: float, body_timeout: float, extra: tuple[str, ...] = ()) -> Server:
    """Start `amfkit serve --demo` with short deadlines; returns once it answers."""
    amfkit_cli = Path(sys.executable).with_name("amfkit")
    stderr_path = tmp / "server.stderr"
    # Blocks of 1 MiB or more (request bodies, inflated bombs) are mapped and given back
    # to the system when freed, instead of glibc's default of keeping up to 32 MiB ones
    # in its heap: RSS then shows what the server holds, not what the allocator kept.
    env = dict(os.environ, AMFKIT_DEMO_DB=str(tmp / "demo.sqlite3"), PYTHONUNBUFFERED="1", MALLOC_MMAP_THRESHOLD_=str(1 << 20))
    for attempt in range(5):
        port = free_port()
        cmd = [
            str(amfkit_cli), "serve", "--demo", "--port", str(port), "--log-level", "warning",
            "--header-timeout", str(header_timeout), "--body-timeout", str(body_timeout), *extra,
        ]
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        server = Server(proc, port, stderr_path)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                with socket.create_connection((HOST, port), timeout=1) as s:
                    s.sendall(b"GET " + PATH.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if read_response(s, 5)[0] == 200:
                        return server
            except OSError:
                time.sleep(0.05)
        server.stop()
        if "address already in use" not in server.stderr().lower():
            raise RuntimeError(f"the server did not start:\n{server.stderr()}")
    raise RuntimeError("no free port for the server")


# --- raw HTTP/1.1 ---------------------------------------------------------------------


class Closed(Exception):
    """The server closed the connection before a whole response came."""


def read_response(sock: socket.socket, timeout: float, buf: bytearray | None = None) -> tuple[int, dict[str, str], bytes]:
    """Read one response (Content-Length framed, which is all amfkit and uvicorn send
    here); `buf` keeps bytes past it for the next call on a kept-alive connection."""
    if buf is None:
        buf = bytearray()
    sock.settimeout(timeout)
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise Closed(bytes(buf[:200]))
        buf += chunk
    head, _, _ = bytes(buf).partition(b"\r\n\r\n")
    del buf[: len(head) + 4]
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise Closed(bytes(buf[:200]))
        buf += chunk
    body = bytes(buf[:n])
    del buf[:n]
    return status, headers, body


def is_closed(sock: socket.socket, timeout: float) -> bool:
    """Whether the server closes the connection (EOF or reset) within `timeout`."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except OSError:  # a timeout: still open
        return False


def post(body: bytes, content_type: str = "application/x-amf", extra: str = "", length: int | None = None) -> bytes:
    n = len(body) if length is None else length
    return (
        f"POST {PATH} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {n}\r\n{extra}\r\n"
    ).encode("latin-1") + body


def amf_request(version: int, target: str, args: list[Any], response: str = "/1") -> bytes:
    return packet.encode(Envelope(version, [], [Body(target, response, args)]))


def amf_result(data: bytes) -> Any:
    envelope = packet.decode(data)
    body = envelope.bodies[0]
    if not body.target.endswith("/onResult"):
        raise AssertionError(f"a fault: {body.value!r}")
    return body.value


# --- hostile requests -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Hostile:
    """A request and what the server must answer: `status`, and whether the connection
    stays usable (`keep`) or is closed after the answer."""

    name: str
    request: bytes
    status: int
    keep: bool
    check: Callable[[bytes], bool] | None = None


def _packet_with_value(version: int, value: bytes) -> bytes:
    """A one-body packet calling EchoService.echo whose value is `value` (raw bytes)."""
    head = struct.pack(">HH", version, 0) + struct.pack(">H", 1)
    target, response = b"EchoService.echo", b"/1"
    return head + struct.pack(">H", len(target)) + target + struct.pack(">H", len(response)) + response + struct.pack(">I", len(value)) + value


def hostile_requests(seed: int = 5) -> list[Hostile]:
    rng = random.Random(seed)
    valid = amf_request(3, "EchoService.echo", [[1, "two", 3.5]])
    deep3 = b"\x11\x0a" + b"\x09\x03\x01" * 100_000 + b"\x01"  # AVM+ switch, then 100,000 nested arrays
    bomb = gzip.compress(b"\x00" * (64 << 20), 9)  # 64 MiB of zeros in ~64 KiB
    json_flood = b"[" + b"0," * 1_100_000 + b"0]"  # over max_objects (1,000,000) values
    return [
        Hostile("random bytes", post(rng.randbytes(4096)), 400, True),
        Hostile("truncated packet", post(valid[: len(valid) // 2]), 400, True),
        Hostile("empty body", post(b""), 400, True),
        Hostile("lying header count", post(struct.pack(">HH", 3, 0xFFFF)), 400, True),
        Hostile("lying body count", post(struct.pack(">HHH", 3, 0, 0xFFFF)), 400, True),
        Hostile("lying string length", post(_packet_with_value(3, b"\x11\x06" + u29((0x0FFFFFFF << 1) | 1))), 400, True),
        Hostile("lying array count", post(_packet_with_value(3, b"\x11\x09" + u29((0x0FFFFFFF << 1) | 1) + b"\x01")), 400, True),
        Hostile("lying value length", post(valid[:-1] + b"\xff\xff\xff\xff"), 400, True),
        Hostile("deep nesting", post(_packet_with_value(3, deep3)), 400, True),
        Hostile("deep AMF0 nesting", post(_packet_with_value(0, b"\x0a\x00\x00\x00\x01" * 100_000 + b"\x05")), 400, True),
        Hostile("out-of-range reference", post(_packet_with_value(3, b"\x11\x0a" + u29(50 << 1))), 400, True),
        Hostile("invalid UTF-8", post(_packet_with_value(3, b"\x11\x06\x05\xff\xfe")), 400, True),
        Hostile("gzip bomb", post(bomb, extra="Content-Encoding: gzip\r\n"), 413, True),
        Hostile("corrupt gzip", post(b"\x1f\x8b\x08\x00" + rng.randbytes(100), extra="Content-Encoding: gzip\r\n"), 400, True),
        Hostile("unknown content encoding", post(valid, extra="Content-Encoding: br\r\n"), 415, True),
        Hostile("wrong content type", post(valid, content_type="text/html"), 415, True),
        Hostile("multipart content type", post(b"--x\r\n\r\n", content_type="multipart/form-data; boundary=x"), 415, True),
        Hostile("bad Content-Length", f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n".encode(), 400, False),
        Hostile("Content-Length 1 GiB, no body", post(b"", length=1 << 30), 413, False),
        Hostile("JSON not JSON", post(b"{not json", content_type="application/json"), 200, True,
                lambda b: json.loads(b)["error"]["code"] == -32700),
        Hostile("JSON value flood", post(json_flood, content_type="application/json"), 200, True,
                lambda b: json.loads(b)["error"]["code"] == -32700 and "allowed" in json.loads(b)["error"]["message"]),
        Hostile("JSON deep nesting", post(b"[" * 100_000 + b"]" * 100_000, content_type="application/json"), 200, True,
                lambda b: json.loads(b)["error"]["code"] == -32700),
        Hostile("XML-RPC entity", post(b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><methodCall><methodName>&a;</methodName></methodCall>', content_type="text/xml"), 200, True,
                lambda b: b"<fault>" in b),
        Hostile("XML element flood", post(b"<methodCall>" + b"<a/>" * 1_100_000 + b"</methodCall>", content_type="text/xml"), 200, True,
                lambda b: b"<fault>" in b and b"allowed" in b),
        Hostile("head too large", f"POST {PATH} HTTP/1.1\r\nHost: x\r\nX-Big: {'a' * 100_000}\r\n\r\n".encode(), 431, False),
        Hostile("not HTTP", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64) + b"\r\n\r\n", 400, False),
    ]


# --- tallies --------------------------------------------------------------------------


class Tally:
    """Counts of outcomes and latencies, shared by the threads of one client kind."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.latencies: list[float] = []
        self.errors: list[str] = []

    def ok(self, what: str, latency: float | None = None) -> None:
        with self.lock:
            self.counts[what] += 1
            if latency is not None:
                self.latencies.append(latency)

    def error(self, what: str) -> None:
        with self.lock:
            self.counts["error"] += 1
            if len(self.errors) < 20:
                self.errors.append(what)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


# --- valid clients --------------------------------------------------------------------


def valid_client(kind: str, server: Server, stop: threading.Event, tally: Tally, expected_tiles: dict[str, Any], seed: int) -> None:
    """Call the demo services over one kept-alive connection until `stop`, checking
    every result. Kinds: amf3, amf0 (EchoService.echo), tiles (TileService, AMF3),
    jsonrpc (EchoService.echo)."""
    import httpx

    from amfkit.remoting import Client

    rng = random.Random(seed)
    if kind == "jsonrpc":
        client: Any = httpx.Client(timeout=30)
    else:
        client = Client(server.url, amf3=kind != "amf0", timeout=30)
    try:
        i = 0
        while not stop.is_set():
            i += 1
            value = [i, "é✓" * rng.randrange(1, 40), rng.random(), True, None, {"k": "v" * rng.randrange(0, 100)}]
            t0 = time.perf_counter()
            try:
                if kind == "jsonrpc":
                    r = client.post(server.url, json={"jsonrpc": "2.0", "method": "EchoService.echo", "params": [value], "id": i})
                    result = r.json()["result"] if r.status_code == 200 else r.status_code
                    expected: Any = value
                elif kind == "tiles":
                    if i % 2:
                        result = client.TileService.getTilesAsString(2)
                        expected = expected_tiles["string"]
                    else:
                        result = client.TileService.getTilesAsArray(2)
                        expected = expected_tiles["array"]
                else:
                    result = client.EchoService.echo(value)
                    expected = value
            except Exception as e:  # every failure is counted, and fails the test
                tally.error(f"{kind}: {type(e).__name__}: {e}")
                continue
            latency = time.perf_counter() - t0
            if result == expected:
                tally.ok(kind, latency)
            else:
                tally.error(f"{kind}: wrong result {str(result)[:200]}")
    finally:
        client.close()


# --- abusive clients ------------------------------------------------------------------


def malformed_client(server: Server, stop: threading.Event, tally: Tally, cases: list[Hostile]) -> None:
    """Send each hostile request, check its answer, then (when the connection is to stay
    open) a valid call on the same connection; reconnect when it is to be closed."""
    valid = amf_request(0, "EchoService.echo", ["after"])
    sock: socket.socket | None = None
    buf = bytearray()
    while not stop.is_set():
        for case in cases:
            if stop.is_set():
                break
            try:
                if sock is None:
                    sock = socket.create_connection((HOST, server.port), timeout=10)
                    buf = bytearray()
                sock.sendall(case.request)
                status, headers, body = read_response(sock, 10, buf)
                if status != case.status or (case.check is not None and not case.check(body)):
                    tally.error(f"{case.name}: {status} {body[:120]!r}")
                    raise Closed("unexpected")
                if case.keep:
                    sock.sendall(post(valid))
                    status, _, body = read_response(sock, 10, buf)
                    if status != 200 or amf_result(body) != "after":
                        tally.error(f"{case.name}: the next call on the connection got {status}")
                    tally.ok(f"{case.name}: {case.status}, then 200")
                else:
                    closed = headers.get("connection") == "close" and is_closed(sock, 5)
                    if not closed:
                        tally.error(f"{case.name}: the connection was not closed")
                    tally.ok(f"{case.name}: {case.status}, closed")
                    sock.close()
                    sock = None
            except (OSError, Closed, ValueError) as e:
                if not isinstance(e, Closed) or str(e) != "unexpected":
                    tally.error(f"{case.name}: {type(e).__name__}: {e}")
                if sock is not None:
                    sock.close()
                sock = None
    if sock is not None:
        sock.close()


def oversized_body_client(server: Server, stop: threading.Event, tally: Tally) -> None:
    """A real 20 MiB body: declared (refused from the headers) and chunked (refused once
    16 MiB came); the answer is 413 and the connection is closed. Both are sent before
    `stop` is looked at, so that a round on a busy machine has one of each."""
    body = b"\x00" * (20 << 20)
    chunk = 1 << 20
    chunked = b"".join(b"%x\r\n" % chunk + body[i : i + chunk] + b"\r\n" for i in range(0, len(body), chunk)) + b"0\r\n\r\n"
    while not stop.is_set():
        for name, head, payload in (
            ("20 MiB declared", post(b"", length=len(body)), body),
            ("20 MiB chunked", f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\nTransfer-Encoding: chunked\r\n\r\n".encode(), chunked),
        ):
            with socket.create_connection((HOST, server.port), timeout=10) as sock:
                sock.sendall(head)
                result: list[Any] = []
                reader = threading.Thread(target=lambda: result.append(_try_read(sock)))
                reader.start()
                try:
                    sock.sendall(payload)
                except OSError:
                    pass  # the server stopped reading and closed: expected
                reader.join(15)
                got = result[0] if result else None
                # Chunked, the server reads up to the limit first: that takes longer
                # than a short body deadline when the machine is busy, and 408 is as good.
                if isinstance(got, tuple) and got[1] == "close" and (got[0] == 413 or (got[0] == 408 and "chunked" in name)):
                    tally.ok(f"{name}: {got[0]}, closed")
                else:
                    tally.error(f"{name}: {got!r}"[:200])


def _try_read(sock: socket.socket) -> Any:
    try:
        status, headers, _ = read_response(sock, 10)
        return (status, headers.get("connection"))
    except Exception as e:
        return repr(e)


def slowloris(server: Server, stop: threading.Event, tally: Tally, connections: int, interval: float) -> None:
    """`connections` connections sending a request head a byte at a time, one byte per
    connection every `interval` seconds; each must get 408 and be closed at the header
    deadline; a closed one is replaced until `stop`."""
    head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\n".encode() + b"X-Slow: " + b"a" * 10_000
    socks: dict[socket.socket, int] = {}

    def opened() -> None:
        try:
            s = socket.create_connection((HOST, server.port), timeout=5)
            s.setblocking(False)
            socks[s] = 0
        except OSError as e:
            tally.error(f"slowloris connect: {e}")

    for _ in range(connections):
        opened()
    while not stop.is_set():
        for s, sent in list(socks.items()):
            data = _poll(s)
            if data is None:  # still open: one more byte
                try:
                    s.send(head[sent : sent + 1])
                    socks[s] = sent + 1
                    continue
                except BlockingIOError:
                    continue
                except OSError:  # closed meanwhile: its answer may still be there
                    data = _poll(s) or b""
            if data.startswith(b"HTTP/1.1 408 "):
                tally.ok("slowloris: 408, closed")
            elif data:
                tally.error(f"slowloris: {data[:80]!r}")
            else:
                tally.ok("slowloris: closed without an answer")
            s.close()
            del socks[s]
            opened()
        stop.wait(interval)
    for s in socks:
        s.close()


def _poll(s: socket.socket) -> bytes | None:
    """What a non-blocking socket has: None when nothing yet, b"" at EOF or reset."""
    try:
        return s.recv(4096)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def slow_body(server: Server, stop: threading.Event, tally: Tally, connections: int, interval: float) -> None:
    """Connections sending complete headers (AMF, Content-Length 10,000) and then a body
    byte every `interval` seconds; each must get 408 and be closed at the body deadline."""
    head = post(b"", length=10_000)
    socks: list[socket.socket] = []

    def opened() -> None:
        s = socket.create_connection((HOST, server.port), timeout=5)
        s.sendall(head)
        s.setblocking(False)
        socks.append(s)

    for _ in range(connections):
        opened()
    while not stop.is_set():
        for s in list(socks):
            try:
                data = s.recv(4096)
            except BlockingIOError:
                try:
                    s.send(b"\x00")
                except OSError:
                    pass
                continue
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 408 ") and b"connection: close" in data.lower():
                tally.ok("slow body: 408, closed")
            else:
                tally.error(f"slow body: {data[:80]!r}")
            s.close()
            socks.remove(s)
            opened()
        stop.wait(interval)
    for s in socks:
        s.close()


def silent(server: Server, stop: threading.Event, tally: Tally, connections: int) -> None:
    """Connections that send nothing: the server must close them at the header deadline
    without a word; each closed one is replaced until `stop`."""
    socks = [socket.create_connection((HOST, server.port), timeout=5) for _ in range(connections)]
    for s in socks:
        s.setblocking(False)
    while not stop.is_set():
        for s in list(socks):
            try:
                data = s.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                tally.error(f"silent: {data[:80]!r}")
            else:
                tally.ok("silent: closed")
            s.close()
            socks.remove(s)
            n = socket.create_connection((HOST, server.port), timeout=5)
            n.setblocking(False)
            socks.append(n)
        stop.wait(0.2)
    for s in socks:
        s.close()


def never_reads(server: Server, stop: threading.Event, tally: Tally, connections: int, pipelined: int) -> None:
    """Connections that send `pipelined` requests for the 1,000-tile string (about
    20 KB each) at once and never read an answer; closed at `stop`."""
    request = post(amf_request(3, "TileService.getTilesAsString", [1]))
    socks = []
    for _ in range(connections):
        s = socket.create_connection((HOST, server.port), timeout=5)
        s.setblocking(False)
        try:
            s.send(request * pipelined)
        except BlockingIOError:
            pass
        socks.append(s)
    tally.ok("never reads: opened", None)
    stop.wait()
    for s in socks:
        s.close()
    tally.ok("never reads: closed", None)
