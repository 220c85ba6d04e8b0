"""`amfkit scaffold`: the module written from the real recording is formatted (black
--check), passes mypy --strict, and `amfkit serve module:gateway` answers the recorded
client as the server did; a capture holding every kind of value literals cannot show
plainly (dates, ByteArrays, typed objects sealed, dynamic and AMF0, Undefined, NaN, a
cycle, shared references, a Dictionary with object keys, Vectors, XML, a large value, an
externalizable class nobody registered)
gives a module whose answers are the recorded ones, byte for byte."""

from __future__ import annotations

import array
import base64
import datetime
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

import capture_client
from amfkit import XML, ArrayCollection, Date, Dictionary, MixedArray, ObjectKey, ObjectVector, Opaque, TypedObject, Undefined
from amfkit.capture import match
from amfkit.cli.main import main
from amfkit.remoting import packet
from servers import serve_cli


def _tools_check(module: Path) -> None:
    black = Path(sys.executable).parent / "black"
    assert black.exists() or shutil.which("black"), "black is needed (it is in the dev list)"
    out = subprocess.run([str(black), "--check", "--diff", str(module)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(module)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_recording_scaffolds_a_module_that_answers_the_client(
    recording: Any, tmp_path: Path, python_exe: str, python_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "game_services.py"
    assert main(["scaffold", str(recording.har), "-o", str(module)]) == 0
    text = module.read_text()
    assert "class EchoService:" in text and "    def echo(self, text: Any) -> Any:" in text
    assert "    def getTilesAsString(self, number: Any) -> Any:" in text
    assert 'raise Fault("two", code="Server.Processing"' in text
    assert text.rstrip().endswith('gateway = Gateway({"EchoService": EchoService(), "TileService": TileService()})')
    _tools_check(module)
    assert main(["scaffold", str(recording.har), "-o", str(module)]) == 1
    assert "exists (--force overwrites it)" in capsys.readouterr().err
    with serve_cli(python_exe, python_env, tmp_path, "game_services:gateway", ready=lambda url: httpx.get(url, timeout=5)) as url:
        again = capture_client.run(url)
    seen = recording.seen
    assert again["calls"] == seen["calls"]
    assert again["batch"] == seen["batch"]
    assert again["flex"] == seen["flex"]


# -- every kind of value --------------------------------------------------------------

PLAYER = TypedObject("com.game.Player", {"id": 7, "name": "Ada", "gold": 120.5}, sealed=("id", "name", "gold"), dynamic=False)
BAG = TypedObject("com.game.Bag", {"size": 3, "colour": "red"}, sealed=("size",), dynamic=True)
SHARED = {"x": 1}
LOOP: dict[str, Any] = {"name": "loop"}
LOOP["self"] = LOOP
KEY = {"k": 1}

#: (target, arguments, result) of the crafted capture: one AMF3 NetConnection call each.
CALLS: list[tuple[str, list[Any], Any]] = [
    ("Game.getPlayer", [7], PLAYER),
    ("Game.getPlayer", [8], TypedObject("com.game.Player", {"id": 8, "name": "Bob", "gold": 1.0}, sealed=("id", "name", "gold"), dynamic=False)),
    ("Game.getBag", [PLAYER], BAG),
    ("Game.dates", [datetime.datetime(2024, 5, 17, 12, 30, 1, 250000)], [datetime.datetime(1999, 12, 31, 23, 59, 59), Date(math.nan)]),
    ("Game.bytes", [b"\x00\x01\xff"], {"small": b"\x00abc\xff", "large": bytes(range(256)) * 4}),
    ("Game.odd", ["x"], {"u": Undefined, "nan": math.nan, "inf": -math.inf, "xml": XML("<a b='1'/>"), "neg": -0.0}),
    ("Game.shared", [], {"a": SHARED, "b": SHARED}),
    ("Game.cycle", [], LOOP),
    ("Game.dictionary", [], Dictionary({"plain": 1, 2: "two"})),
    ("Game.objectKeys", [], Dictionary({ObjectKey(KEY): "object key"})),
    ("Game.vectors", [], {"ints": array.array("i", [1, -2, 3]), "objs": ObjectVector([PLAYER], type_name="com.game.Player"), "col": ArrayCollection([1, 2])}),
    ("Game.mixed", [], MixedArray({0: "a", 1: "b", "name": "m"})),
    ("Game.big", [], [{"i": i, "name": f"row {i}"} for i in range(1500)]),
    ("Game.text", [], "line one of a long text that goes on and on\nline two, also long enough to matter\n"),
    ("Game.long", ["a value long enough that the comparison line does not fit in eighty-eight columns"], 1),
    ("Game.long", ["other"], 2),
    # An externalizable class nobody registered, read from the capture as opaque bytes.
    ("Game.map", [], ["level 1", Opaque("com.game.Map", b"\x04\x07\x01\x02")]),
    ("Game.fail", [1], None),
]


def _har(path: Path) -> list[bytes]:
    """A HAR file of CALLS (the last one answered by a fault); returns the answers' bytes."""
    entries, answers = [], []
    for i, (target, args, result) in enumerate(CALLS):
        request = packet.encode(packet.Envelope(3, bodies=[packet.Body(target, f"/{i + 1}", args)]))
        if target == "Game.fail":
            status = {"code": "Game.NoGold", "description": "not enough gold", "details": {"have": 3}, "level": "error"}
            answer = packet.encode(packet.Envelope(3, bodies=[packet.Body(f"/{i + 1}/onStatus", "null", status)]))
        else:
            answer = packet.encode(packet.Envelope(3, bodies=[packet.Body(f"/{i + 1}/onResult", "null", result)]))
        answers.append(answer)
        amf = [{"name": "Content-Type", "value": "application/x-amf"}]
        entries.append({
            "startedDateTime": "2024-05-17T12:00:00.000Z",
            "request": {"method": "POST", "url": "http://game.example/gateway", "headers": amf,
                        "postData": {"mimeType": "application/x-amf", "text": base64.b64encode(request).decode(), "encoding": "base64"}},
            "response": {"status": 200, "headers": amf, "content": {"mimeType": "application/x-amf", "text": base64.b64encode(answer).decode(), "encoding": "base64"}},
        })
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    return answers


def _value_bytes(data: bytes) -> bytes:
    """The value's bytes of a packet of no headers and one body (what follows the body's
    target, response URI and length field), read from the framing alone."""
    assert data[2:6] == b"\x00\x00\x00\x01", data[:8]
    i = 6
    for _ in range(2):  # the target and the response URI
        i += 2 + int.from_bytes(data[i : i + 2], "big")
    return data[i + 4 :]


def test_every_kind_of_value_comes_back_byte_for_byte(tmp_path: Path, python_exe: str, python_env: dict[str, str]) -> None:
    har = tmp_path / "game.har"
    answers = _har(har)
    module = tmp_path / "game_services.py"
    assert main(["scaffold", str(har), "-o", str(module)]) == 0
    text = module.read_text()
    _tools_check(module)
    # Readable where literals can show it; AMF3 kept where they cannot.
    assert "class Player:" in text and 'register_class(Player, "com.game.Player", static=("id", "name", "gold"), dynamic=False)' in text
    assert 'register_class(Bag, "com.game.Bag", static=("size",))' in text
    assert "    def getPlayer(self, number: Any) -> Any:" in text
    assert "    def getBag(self, player: Any) -> Any:" in text
    assert "datetime.datetime(1999, 12, 31, 23, 59, 59)" in text and "Date(math.nan)" in text
    assert '"u": Undefined' in text and '"nan": math.nan' in text and "XML(" in text
    assert "# a shared or cyclic reference" in text and "# too large to write out" in text
    assert '"small": b"\\x00abc\\xff"' in text and "# a ByteArray of 1024 bytes" in text
    assert "    def dates(self, date: Any) -> Any:" in text
    assert "# a Dictionary key Python cannot hash" in text
    assert 'array.array("i", [1, -2, 3])' in text and "MixedArray(" in text
    assert 'raise Fault("not enough gold", code="Game.NoGold", details={"have": 3})' in text
    assert "# an object of the externalizable class 'com.game.Map', which amfkit cannot read, kept as its bytes" in text
    assert 'return ["level 1", _RESULT_' in text and 'unknown_externalizable="opaque"' in text
    with serve_cli(python_exe, python_env, tmp_path, "game_services:gateway", ready=lambda url: httpx.get(url, timeout=5)) as url:
        with httpx.Client(timeout=30) as client:
            for i, (target, args, _) in enumerate(CALLS):
                request = packet.encode(packet.Envelope(3, bodies=[packet.Body(target, f"/{i + 1}", args)]))
                r = client.post(url, content=request, headers={"content-type": "application/x-amf"})
                r.raise_for_status()
                got = packet.decode(r.content, unknown_externalizable="opaque").bodies[0]
                want = packet.decode(answers[i], unknown_externalizable="opaque").bodies[0]
                assert got.target == want.target, target
                if target == "Game.fail":
                    assert (got.value["code"], got.value["description"], got.value["details"]) == ("Game.NoGold", "not enough gold", {"have": 3})
                    continue
                assert match.key(got.value) == match.key(want.value), target
                assert _value_bytes(r.content) == _value_bytes(answers[i]), target
