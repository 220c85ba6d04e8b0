"""pcap and pcapng files (tcpdump, Wireshark, dumpcap) as `Exchange`s: frames read by
dpkt (Ethernet, Linux cooked v1 and v2, BSD loopback, raw IP; IPv4 and IPv6), each TCP
connection's two directions put in order (`tcp.Stream`), and HTTP/1.1 read from them by
h11 (keep-alive, chunked bodies; content codings removed with the capture's cap).

Needs dpkt and h11 (pip install 'amfkit[capture]'). Plain HTTP only: TLS is not read."""

from __future__ import annotations

import io
import socket
from dataclasses import dataclass, field
from typing import Any, Iterator

from .._text import error_text
from .exchange import DEFAULT_MAX_BODY_SIZE, CaptureError, Exchange, decoded_body
from .tcp import DEFAULT_MAX_STREAM, Stream

__all__ = ["read_pcap", "looks_like_pcap", "MAX_CONNECTIONS"]

#: Connections followed at once (more: later ones are left out, with a note).
MAX_CONNECTIONS = 65536

_PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_METHODS = (b"GET ", b"POST ", b"PUT ", b"HEAD ", b"DELETE ", b"OPTIONS ", b"PATCH ")


def looks_like_pcap(data: bytes) -> bool:
    return data[:4] in _PCAP_MAGICS or data[:4] == _PCAPNG_MAGIC


Endpoint = tuple[str, int]


@dataclass
class _Connection:
    key: tuple[Endpoint, Endpoint]
    first: float
    client: Endpoint | None = None
    streams: dict[Endpoint, Stream] = field(default_factory=dict)

    def stream(self, sender: Endpoint, max_stream: int) -> Stream:
        s = self.streams.get(sender)
        if s is None:
            s = self.streams[sender] = Stream(max_bytes=max_stream)
        return s


def read_pcap(
    data: bytes,
    *,
    name: str = "capture.pcap",
    max_body_size: int = DEFAULT_MAX_BODY_SIZE,
    max_stream: int = DEFAULT_MAX_STREAM,
) -> list[Exchange]:
    """The HTTP exchanges of a pcap or pcapng file, in the order their requests began."""
    try:
        import dpkt  # type: ignore[import-untyped]
    except ImportError as e:
        raise CaptureError(f"reading pcap files needs dpkt and h11 (pip install 'amfkit[capture]'): {e}") from None
    connections: dict[tuple[Endpoint, Endpoint], _Connection] = {}
    finished: list[_Connection] = []
    notes: list[str] = []
    for time, ip, tcp in _segments(data, dpkt, notes):
        src: Endpoint = (ip[0], tcp.sport)
        dst: Endpoint = (ip[1], tcp.dport)
        key = (src, dst) if src <= dst else (dst, src)
        conn = connections.get(key)
        flags = tcp.flags
        if conn is not None and flags & dpkt.tcp.TH_SYN and not flags & dpkt.tcp.TH_ACK and src in conn.streams and conn.streams[src].delivered:
            finished.append(connections.pop(key))  # a new connection on the same ports
            conn = None
        if conn is None:
            if len(connections) + len(finished) >= MAX_CONNECTIONS:
                _note(notes, f"more than {MAX_CONNECTIONS} TCP connections: later ones left out")
                continue
            conn = connections[key] = _Connection(key, time)
        stream = conn.stream(src, max_stream)
        if flags & dpkt.tcp.TH_SYN:
            stream.start(tcp.seq)
            if not flags & dpkt.tcp.TH_ACK:
                conn.client = src
            elif conn.client is None:
                conn.client = dst
        if tcp.data:
            if conn.client is None and stream.base is None:
                head = bytes(tcp.data[:8])
                conn.client = src if head.startswith(_METHODS) else dst if head.startswith(b"HTTP/") else None
            stream.add(tcp.seq, bytes(tcp.data), time)
        if flags & (dpkt.tcp.TH_FIN | dpkt.tcp.TH_RST):
            stream.fin = True
    out: list[Exchange] = []
    for conn in sorted([*finished, *connections.values()], key=lambda c: c.first):
        out.extend(_http(conn, name, max_body_size))
        conn.streams.clear()  # its bytes are in the exchanges now
    out.sort(key=lambda e: e.time or 0.0)
    for i, ex in enumerate(out):
        ex.index = i
    if notes and out:
        out[0].notes[:0] = notes
    elif notes and not out:
        raise CaptureError(f"no HTTP exchange in the capture ({'; '.join(notes)})")
    return out


def _note(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def _segments(data: bytes, dpkt: Any, notes: list[str]) -> Iterator[tuple[float, tuple[str, str], Any]]:
    """(time, (source address, destination address), TCP segment) for every TCP
    segment of the capture."""
    f = io.BytesIO(data)
    try:
        reader = dpkt.pcapng.Reader(f) if data[:4] == _PCAPNG_MAGIC else dpkt.pcap.Reader(f)
    except (ValueError, dpkt.NeedData, dpkt.UnpackError) as e:
        raise CaptureError(f"not a pcap or pcapng file: {error_text(e)}") from None
    link = reader.datalink()
    frames = iter(reader)
    while True:
        try:
            time, frame = next(frames)
        except StopIteration:
            return
        except (dpkt.NeedData, dpkt.UnpackError, ValueError, EOFError) as e:
            _note(notes, f"the capture ends with a broken record ({error_text(e)})")
            return
        try:
            packet = _network(link, frame, dpkt)
        except (dpkt.NeedData, dpkt.UnpackError, ValueError, IndexError):
            continue
        if packet is None:
            if link not in _LINKS:
                _note(notes, f"link type {link} is not read (Ethernet, Linux cooked, loopback and raw IP are)")
            continue
        tcp = packet.data
        if not isinstance(tcp, dpkt.tcp.TCP):
            continue
        if isinstance(packet, dpkt.ip.IP):
            if packet.mf or packet.offset:
                _note(notes, "IP fragments are not reassembled (their segments are left out)")
                continue
            family = socket.AF_INET
        else:
            family = socket.AF_INET6
        yield float(time), (socket.inet_ntop(family, packet.src), socket.inet_ntop(family, packet.dst)), tcp


#: Link types read: Ethernet, BSD loopback, raw IP (3 codes), Linux cooked v1 and v2.
_LINKS = (1, 0, 12, 14, 101, 113, 276)


def _network(link: int, frame: bytes, dpkt: Any) -> Any:
    """The IPv4 or IPv6 packet of a frame (None for anything else)."""
    if link == 1:
        layer = dpkt.ethernet.Ethernet(frame).data
    elif link == 113:
        layer = dpkt.sll.SLL(frame).data
    elif link == 276:
        layer = dpkt.sll2.SLL2(frame).data
    elif link == 0:
        layer = dpkt.loopback.Loopback(frame).data
    elif link in (12, 14, 101):
        version = frame[0] >> 4 if frame else 0
        layer = dpkt.ip.IP(frame) if version == 4 else dpkt.ip6.IP6(frame) if version == 6 else None
    else:
        return None
    return layer if isinstance(layer, (dpkt.ip.IP, dpkt.ip6.IP6)) else None


# -- HTTP/1.1 out of the two streams ----------------------------------------------------


@dataclass
class _Message:
    time: float
    head: Any
    body: bytearray = field(default_factory=bytearray)
    complete: bool = False
    over: bool = False


def _http(conn: _Connection, name: str, limit: int) -> list[Exchange]:
    import h11

    if conn.client is None:
        return []
    (a, b) = conn.key
    server = b if conn.client == a else a
    up = conn.streams.get(conn.client) or Stream()
    down = conn.streams.get(server) or Stream()
    where = f"{name} tcp {_endpoint(conn.client)} > {_endpoint(server)}"
    requests = _parse(h11, h11.SERVER, up, limit, [])
    responses = _parse(h11, h11.CLIENT, down, limit, [r.head for r in requests])
    out = []
    for i, req in enumerate(requests):
        head = req.head
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in head.headers.raw_items()]
        host = next((v for k, v in headers if k.lower() == "host"), None) or _endpoint(server)
        target = head.target.decode("latin-1")
        url = target if target.startswith(("http://", "https://")) else f"http://{host}{target}"
        ex = Exchange(0, head.method.decode("latin-1"), url, time=req.time, request_headers=headers, source=f"{where} #{i}")
        ex.notes.extend(up.notes)
        ex.request_body = _body(req, ex, "request body", limit)
        if i < len(responses):
            res = responses[i]
            ex.status = res.head.status_code
            ex.response_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in res.head.headers.raw_items()]
            ex.notes.extend(n for n in down.notes if n not in ex.notes)
            ex.response_body = _body(res, ex, "response body", limit)
        else:
            ex.notes.append("no response in the capture")
        out.append(ex)
    return out


def _body(message: _Message, ex: Exchange, what: str, limit: int) -> bytes | None:
    if message.over:
        ex.notes.append(f"{what} is over the {limit}-byte limit")
        return None
    if not message.complete:
        ex.notes.append(f"{what} is not complete in the capture")
        return None
    coding = next((v for k, v in (ex.request_headers if what.startswith("request") else ex.response_headers) if k.lower() == "content-encoding"), None)
    return decoded_body(bytes(message.body), coding, limit, what, ex.notes)


def _parse(h11: Any, role: Any, stream: Stream, limit: int, requests: list[Any]) -> list[_Message]:
    """The HTTP messages of one direction: requests (`role` h11.SERVER) or responses
    (h11.CLIENT, each after its request is told to h11)."""
    conn = h11.Connection(role)
    out: list[_Message] = []
    asked = 0
    current: _Message | None = None
    chunks = iter(stream.chunks)
    time = 0.0

    def ask() -> bool:
        nonlocal asked
        if asked >= len(requests):
            return False
        req = requests[asked]
        asked += 1
        conn.send(h11.Request(method=req.method, target=req.target, headers=[(b"host", b"x"), (b"content-length", b"0")]))
        conn.send(h11.EndOfMessage())
        return True

    if role is h11.CLIENT and not ask():
        return out
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as e:
            stream.notes.append(f"HTTP does not parse ({error_text(e)}): the rest of the connection is left out")
            return out
        if event is h11.NEED_DATA:
            try:
                time, data = next(chunks)
            except StopIteration:
                if stream.fin and not stream.missing:
                    conn.receive_data(b"")
                    stream.fin = False
                    continue
                return out
            conn.receive_data(data)
            continue
        if event is h11.PAUSED:
            if role is h11.SERVER:
                conn.send(h11.Response(status_code=200, headers=[(b"content-length", b"0")]))
                conn.send(h11.EndOfMessage())
            try:
                conn.start_next_cycle()
            except h11.LocalProtocolError:
                return out
            if role is h11.CLIENT and not ask():
                return out
            continue
        if isinstance(event, (h11.Request, h11.Response)):
            current = _Message(time, event)
            out.append(current)
        elif isinstance(event, h11.Data) and current is not None:
            if not current.over:
                if len(current.body) + len(event.data) > limit:
                    current.over = True
                    current.body = bytearray()
                else:
                    current.body += event.data
        elif isinstance(event, h11.EndOfMessage) and current is not None:
            current.complete = True
        elif isinstance(event, h11.ConnectionClosed):
            return out


def _endpoint(e: Endpoint) -> str:
    host, port = e
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
