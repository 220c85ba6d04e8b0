"""pcap reading on crafted captures (written with dpkt, checked against tshark): segments
out of order and retransmitted, chunked bodies, gzip and deflate content codings,
keep-alive with several requests on one connection, a capture begun mid-connection, and
the bounds (a gap far ahead, a compressed bomb)."""

from __future__ import annotations

import gzip
import shutil
import socket
import subprocess
import zlib
from pathlib import Path

import dpkt
import pytest

from amfkit import capture
from amfkit.capture import pcap as pcap_reader
from amfkit.remoting import packet

CLIENT, SERVER = ("127.0.0.1", 40000), ("127.0.0.2", 80)


def _amf(target: str, value: object) -> bytes:
    return packet.encode(packet.Envelope(3, bodies=[packet.Body(target, "/1", [value])]))


def _answer(value: object) -> bytes:
    return packet.encode(packet.Envelope(3, bodies=[packet.Body("/1/onResult", "null", value)]))


def _request(body: bytes, extra: bytes = b"") -> bytes:
    return b"POST /gateway HTTP/1.1\r\nHost: game.example\r\nContent-Type: application/x-amf\r\n" + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _response(body: bytes, *, chunked: bool = False, coding: bytes = b"") -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amf\r\n" + (b"Content-Encoding: " + coding + b"\r\n" if coding else b"")
    if chunked:
        pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
        return head + b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


class Wire:
    """A TCP connection written segment by segment into a pcap (Ethernet frames)."""

    def __init__(self, path: Path, *, handshake: bool = True) -> None:
        self.f = open(path, "wb")
        self.w = dpkt.pcap.Writer(self.f)
        self.t = 1_700_000_000.0
        self.seq = {CLIENT: 1000, SERVER: 900_000}
        if handshake:
            self.segment(CLIENT, b"", dpkt.tcp.TH_SYN, advance=1)
            self.segment(SERVER, b"", dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, advance=1)

    def segment(self, src: tuple[str, int], data: bytes, flags: int = dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, *, seq: int | None = None, advance: int | None = None) -> None:
        dst = SERVER if src == CLIENT else CLIENT
        tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=self.seq[src] if seq is None else seq, ack=self.seq[dst], flags=flags, data=data, win=65535)
        ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=6, data=tcp, ttl=64)
        ip.len = len(ip)
        self.w.writepkt(bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip)), ts=self.t)
        self.t += 0.001
        if seq is None:
            self.seq[src] += len(data) if advance is None else advance

    def send(self, src: tuple[str, int], data: bytes, size: int = 40) -> None:
        for i in range(0, len(data), size):
            self.segment(src, data[i : i + size])

    def close(self) -> None:
        self.f.close()


def _tshark_bodies(path: Path) -> list[str]:
    tshark = shutil.which("tshark")
    assert tshark, "tshark is needed (make system-deps installs it)"
    out = subprocess.run(
        [tshark, "-r", str(path), "-o", "tcp.reassemble_out_of_order:TRUE", "-Y", "http.request", "-T", "fields", "-e", "tcp.reassembled.data", "-e", "tcp.payload"],
        capture_output=True, check=True, text=True,
    ).stdout
    return [line.split("\t")[0] or line.split("\t")[1] for line in out.splitlines() if line.strip()]


def test_out_of_order_and_retransmitted_segments(tmp_path: Path) -> None:
    body = _amf("UserService.login", {"name": "x" * 200, "level": 3})
    req = _request(body)
    wire = Wire(tmp_path / "ooo.pcap")
    base = wire.seq[CLIENT]
    pieces = [req[i : i + 60] for i in range(0, len(req), 60)]
    offsets = [sum(len(p) for p in pieces[:i]) for i in range(len(pieces))]
    order = [0, 2, 1, 4, 3] + list(range(5, len(pieces)))
    for i in order:
        wire.segment(CLIENT, pieces[i], seq=base + offsets[i])
        if i == 2:
            wire.segment(CLIENT, pieces[0], seq=base)  # a retransmission of what came already
    wire.seq[CLIENT] = base + len(req)
    wire.segment(CLIENT, req[50:130], seq=base + 50)  # an overlapping retransmission at the end
    wire.send(SERVER, _response(_answer(True)))
    wire.close()
    [ex] = capture.read(tmp_path / "ooo.pcap")
    assert ex.request_body == body and ex.notes == []
    [call] = capture.calls_of([ex]).calls
    assert (call.target, call.arguments, call.result) == ("UserService.login", [{"name": "x" * 200, "level": 3}], True)
    # tshark puts the request together the same way.
    assert bytes.fromhex(_tshark_bodies(tmp_path / "ooo.pcap")[0]) == req


def test_keep_alive_chunked_gzip_and_deflate(tmp_path: Path) -> None:
    wire = Wire(tmp_path / "keepalive.pcap")
    answers = [_answer(list(range(n))) for n in (5, 50, 500)]
    wire.send(CLIENT, _request(_amf("S.a", 1)))
    wire.send(SERVER, _response(answers[0], chunked=True))
    wire.send(CLIENT, _request(_amf("S.b", 2)))
    wire.send(SERVER, _response(gzip.compress(answers[1]), coding=b"gzip"), size=1460)
    deflated = zlib.compress(_amf("S.c", 3))
    wire.send(CLIENT, _request(deflated, b"Content-Encoding: deflate\r\n"))
    wire.send(SERVER, _response(zlib.compress(answers[2]), chunked=True, coding=b"deflate"))
    wire.segment(CLIENT, b"", dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK, advance=1)
    wire.close()
    exchanges = capture.read(tmp_path / "keepalive.pcap")
    assert [e.status for e in exchanges] == [200, 200, 200]
    calls = capture.calls_of(exchanges).calls
    assert [(c.target, c.arguments, c.result) for c in calls] == [
        ("S.a", [1], list(range(5))),
        ("S.b", [2], list(range(50))),
        ("S.c", [3], list(range(500))),
    ]
    assert len(_tshark_bodies(tmp_path / "keepalive.pcap")) == 3


def test_capture_begun_mid_connection(tmp_path: Path) -> None:
    wire = Wire(tmp_path / "late.pcap", handshake=False)
    wire.send(CLIENT, _request(_amf("S.late", "x")))
    wire.send(SERVER, _response(_answer("y")))
    wire.close()
    [call] = capture.calls_of(capture.read(tmp_path / "late.pcap")).calls
    assert (call.target, call.result) == ("S.late", "y")


def test_missing_segment_leaves_the_request_incomplete_not_zero_filled(tmp_path: Path) -> None:
    req = _request(_amf("S.gap", "z" * 300))
    wire = Wire(tmp_path / "gap.pcap")
    base = wire.seq[CLIENT]
    wire.segment(CLIENT, req[:100], seq=base)
    wire.segment(CLIENT, req[200:], seq=base + 200)  # bytes 100-200 never captured
    wire.close()
    found = capture.calls_of(capture.read(tmp_path / "gap.pcap"))
    assert found.calls == []
    assert any("request body is not complete in the capture" in p for p in found.problems)


def test_a_segment_far_ahead_is_dropped_not_allocated(tmp_path: Path) -> None:
    wire = Wire(tmp_path / "far.pcap")
    wire.segment(CLIENT, b"A" * 10, seq=wire.seq[CLIENT] + 2**30)
    wire.send(CLIENT, _request(_amf("S.ok", 1)))
    wire.send(SERVER, _response(_answer(2)))
    wire.close()
    [ex] = capture.read(tmp_path / "far.pcap")
    assert any("ahead of the stream was dropped" in n for n in ex.notes)
    assert [c.result for c in capture.calls_of([ex]).calls] == [2]


def test_a_gzip_bomb_stops_at_the_cap(tmp_path: Path) -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))
    wire = Wire(tmp_path / "bomb.pcap")
    wire.send(CLIENT, _request(_amf("S.bomb", 1)))
    wire.send(SERVER, _response(bomb, coding=b"gzip"), size=1460)
    wire.close()
    [ex] = capture.read(tmp_path / "bomb.pcap", max_body_size=1024 * 1024)
    assert ex.response_body is None
    assert any("inflates to more than 1048576 bytes" in n for n in ex.notes)


def test_not_a_pcap_is_named_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "page.pcap"
    bad.write_bytes(b"<!DOCTYPE html><html>nope</html>")
    with pytest.raises(capture.CaptureError, match=r"^page.pcap: not a capture .*: this looks like an HTML page$"):
        capture.read(bad)
    truncated = tmp_path / "cut.pcap"
    whole = tmp_path / "whole.pcap"
    wire = Wire(whole)
    wire.send(CLIENT, _request(_amf("S.x", 1)))
    wire.close()
    truncated.write_bytes(whole.read_bytes()[:-7])
    exchanges = capture.read(truncated)
    assert exchanges and any("broken record" in n or "not complete" in n for e in exchanges for n in e.notes)
    assert pcap_reader.looks_like_pcap(whole.read_bytes())
