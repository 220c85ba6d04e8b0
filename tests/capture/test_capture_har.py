"""HAR reading: bodies stored as base64, as Latin-1 text (mitmproxy), as UTF-8 text with
replaced bytes (lossy: flagged, never a traceback), compressed request bodies capped,
and files that are not HAR named in one line."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from amfkit import capture
from amfkit.remoting import packet

REQUEST = packet.encode(packet.Envelope(0, bodies=[packet.Body("Shop.buy", "/1", ["sword", 1.5, {"gold": 300}])]))
ANSWER = packet.encode(packet.Envelope(0, bodies=[packet.Body("/1/onResult", "null", {"ok": True, "gold": 150})]))
AMF = [{"name": "Content-Type", "value": "application/x-amf"}]


def _har(tmp_path: Path, post: dict[str, Any], content: dict[str, Any], req_headers: list[dict[str, str]] = AMF) -> Path:
    doc = {"log": {"version": "1.2", "entries": [{
        "startedDateTime": "2024-05-01T10:00:00.250Z",
        "request": {"method": "POST", "url": "http://game.example/gateway", "headers": req_headers, "postData": post},
        "response": {"status": 200, "headers": AMF, "content": content},
    }]}}
    path = tmp_path / "capture.har"
    path.write_text(json.dumps(doc))
    return path


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize(
    "post",
    [
        pytest.param({"mimeType": "application/x-amf", "text": _b64(REQUEST), "encoding": "base64"}, id="base64"),
        pytest.param({"mimeType": "application/x-amf", "text": REQUEST.decode("latin-1")}, id="latin-1-text"),
    ],
)
def test_bodies_read_back_exactly(tmp_path: Path, post: dict[str, Any]) -> None:
    path = _har(tmp_path, post, {"mimeType": "application/x-amf", "text": _b64(ANSWER), "encoding": "base64"})
    [ex] = capture.read(path)
    assert ex.request_body == REQUEST and ex.response_body == ANSWER and ex.notes == []
    assert ex.time == pytest.approx(1714557600.25)
    [call] = capture.calls_of([ex]).calls
    assert (call.target, call.arguments, call.result) == ("Shop.buy", ["sword", 1.5, {"gold": 300}], {"ok": True, "gold": 150})


def test_utf8_text_of_binary_is_flagged_lossy_not_a_traceback(tmp_path: Path) -> None:
    lossy = REQUEST.decode("utf-8", "replace")  # what a browser writes for a binary body
    assert "\ufffd" in lossy
    path = _har(tmp_path, {"mimeType": "application/x-amf", "text": lossy}, {"mimeType": "application/x-amf", "text": _b64(ANSWER), "encoding": "base64"})
    found = capture.calls_of(capture.read(path))
    assert any("request body lossy" in p for p in found.problems)
    # Whatever the decoder makes of the damaged bytes, it is reported, not raised.
    assert len(found.calls) <= 1


def test_a_gzipped_request_body_is_inflated_with_a_cap(tmp_path: Path) -> None:
    headers = AMF + [{"name": "Content-Encoding", "value": "gzip"}]
    path = _har(tmp_path, {"text": _b64(gzip.compress(REQUEST)), "encoding": "base64"}, {"text": _b64(ANSWER), "encoding": "base64"}, headers)
    assert capture.read(path)[0].request_body == REQUEST
    bomb = _har(tmp_path, {"text": _b64(gzip.compress(b"\0" * 4_000_000)), "encoding": "base64"}, {"text": ""}, headers)
    [ex] = capture.read(bomb, max_body_size=100_000)
    assert ex.request_body is None and any("inflates to more than 100000 bytes" in n for n in ex.notes)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not a HAR file: its JSON does not parse"),
        (b'{"log": {}}', "not a HAR file: no log.entries list"),
        (b"", "the file is empty"),
    ],
)
def test_not_har_is_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.har"
    path.write_bytes(content)
    with pytest.raises(capture.CaptureError) as info:
        capture.read(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_body_that_is_not_amf_is_a_problem_not_a_call(tmp_path: Path) -> None:
    path = _har(tmp_path, {"text": "hello"}, {"text": "<html></html>"})
    found = capture.calls_of(capture.read(path))
    assert found.calls == [] and len(found.problems) == 1 and "request: not an AMF packet" in found.problems[0]
