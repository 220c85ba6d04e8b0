"""Captured bodies are bytes others wrote: an externalizable class nobody registered here
is kept opaque (where the decoder finds that sound) instead of losing the whole exchange,
a Flex message with fewer members than its class is read and noted once, a replay
answers the opaque value byte for byte while its gateway still reads live requests
strictly, and a file that is no capture is named by what it holds."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest

from amfkit import Opaque, TypedObject
from amfkit import capture
from amfkit.cli.main import main
from amfkit.remoting import Gateway, packet

MAP = Opaque("com.game.Map", b"\x04\x07\x01\x02\x03")
AMF = [{"name": "Content-Type", "value": "application/x-amf"}]
HEADERS = [("content-type", "application/x-amf")]


def _har(path: Path, pairs: list[tuple[bytes, bytes]]) -> Path:
    entries = []
    for request, answer in pairs:
        entries.append({
            "startedDateTime": "2024-05-01T10:00:00.000Z",
            "request": {"method": "POST", "url": "http://game.example/gateway", "headers": AMF,
                        "postData": {"mimeType": "application/x-amf", "text": base64.b64encode(request).decode(), "encoding": "base64"}},
            "response": {"status": 200, "headers": AMF,
                         "content": {"mimeType": "application/x-amf", "text": base64.b64encode(answer).decode(), "encoding": "base64"}},
        })  # fmt: skip
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    return path


def _call(target: str, args: list[Any], n: int = 1) -> bytes:
    return packet.encode(packet.Envelope(3, bodies=[packet.Body(target, f"/{n}", args)]))


def _answer(value: Any, n: int = 1) -> bytes:
    return packet.encode(packet.Envelope(3, bodies=[packet.Body(f"/{n}/onResult", "null", value)]))


def test_an_unknown_externalizable_class_is_kept_opaque_not_a_lost_exchange(tmp_path: Path) -> None:
    har = _har(tmp_path / "game.har", [(_call("Game.getMap", [1]), _answer(["level 1", MAP])), (_call("Game.save", [MAP], 2), _answer(True, 2))])
    found = capture.calls_of(capture.read(har))
    assert found.problems == [] and [c.target for c in found.calls] == ["Game.getMap", "Game.save"]
    get_map, save = found.calls
    assert get_map.result == ["level 1", MAP] and save.arguments == [MAP] and save.result is True
    # The strict reading (what a gateway does with a live request) loses the first
    # call's answer and the whole second exchange.
    strict = capture.calls_of(capture.read(har), unknown_externalizable="error")
    assert [(c.target, c.outcome) for c in strict.calls] == [("Game.getMap", "unanswered")]
    refused = 'not an AMF packet: externalizable class "com.game.Map" is not registered'
    assert [p.split(": ", 1)[1].partition(",")[0] for p in strict.problems] == [f"response: {refused}", f"request: {refused}"]


def test_an_opaque_body_where_it_is_not_sound_is_still_a_problem(tmp_path: Path) -> None:
    """An opaque body takes the rest of its input: followed by another item, the values
    around it lack bytes, and the exchange is reported, not guessed at."""
    har = _har(tmp_path / "game.har", [(_call("Game.getMap", [1]), _answer([MAP, "after"]))])
    found = capture.calls_of(capture.read(har))
    [call] = found.calls
    assert call.answered is False
    assert len(found.problems) == 1 and "response: not an AMF packet:" in found.problems[0]
    assert "an opaque body is sound only where its object ends the input" in found.problems[0]


def test_classes_named_by_the_caller_are_read_as_told(tmp_path: Path) -> None:
    from amfkit import ArrayCollection, amf3

    # A class known to write one Array (as Flex's collections do), under its own name.
    inner = amf3.encode(ArrayCollection([1, 2]))
    named = Opaque("com.game.List", inner[inner.index(b"\x09"):])  # its body: the Array
    har = _har(tmp_path / "game.har", [(_call("Game.list", []), _answer(named))])
    [opaque] = capture.calls_of(capture.read(har)).calls
    assert opaque.result == named
    [told] = capture.calls_of(capture.read(har), externalizable={"com.game.List": "arraycollection"}).calls
    assert list(told.result) == [1, 2] and told.result.alias == "com.game.List"


def test_a_message_with_fewer_members_is_read_and_noted_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Amfphp writes Flex messages with a few of their members: read all the same, and
    said once per capture (not once per exchange)."""
    short = TypedObject(
        "flex.messaging.messages.RemotingMessage", {"operation": "getMap", "destination": "Game", "body": [1]},
        sealed=("body", "destination", "operation"), dynamic=False,
    )  # fmt: skip
    pairs = [(packet.encode(packet.Envelope(3, bodies=[packet.Body("null", f"/{n}", [short])])), _answer("ok", n)) for n in (1, 2)]
    har = _har(tmp_path / "amfphp.har", pairs)
    found = capture.calls_of(capture.read(har))
    assert found.problems == [] and [c.target for c in found.calls] == ["Game.getMap", "Game.getMap"]
    assert found.calls[0].arguments == [1]
    assert len(found.notes) == 1
    assert "class 'flex.messaging.messages.RemotingMessage' arrived with none of clientId, headers, messageId" in found.notes[0]
    assert main(["inspect", str(har)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("amfkit inspect: note: ") and err.count("\n") == 1


def test_replay_answers_the_opaque_value_and_reads_live_requests_strictly(tmp_path: Path) -> None:
    answer = _answer(["level 1", MAP])
    har = _har(tmp_path / "game.har", [(_call("Game.getMap", [1]), answer), (_call("Game.save", [MAP], 2), _answer(True, 2))])
    gateway = Gateway.from_capture(har)

    async def post(body: bytes) -> tuple[int, bytes]:
        status, _, out = await gateway.respond("POST", "/gateway", HEADERS, body)
        return status, out

    status, out = asyncio.run(post(_call("Game.getMap", [1])))
    assert status == 200 and out == answer  # the opaque bytes written back as recorded
    # A live client's request holding a class nobody registered: refused, as any gateway does.
    status, out = asyncio.run(post(_call("Game.save", [MAP], 2)))
    assert status == 400 and b'externalizable class "com.game.Map" is not registered' in out


def test_a_file_that_is_no_capture_is_named_by_what_it_holds(tmp_path: Path) -> None:
    body = _call("Game.getMap", [1])
    for name, data, said in (
        ("body.amf", body, "it holds AMF (amf packet, version 3, 0 headers, 1 body, 33 bytes): amfkit decode reads it"),
        ("body.hex", body.hex(" ").encode(), "it holds AMF (amf packet, version 3, 0 headers, 1 body, 33 bytes (from hex)): amfkit decode reads it"),
        ("page.har.txt", b"<!DOCTYPE html><html><body>502</body></html>", "this looks like an HTML page"),
        ("logo.png", b"\x89PNG\r\n\x1a\n" + bytes(40), "this looks like a PNG image"),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(capture.CaptureError) as info:
            capture.read(path)
        assert str(info.value) == f"{name}: not a capture (HAR, mitmproxy flows, pcap or pcapng): {said}"
