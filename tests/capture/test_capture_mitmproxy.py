"""The mitmproxy addon (amfkit.capture.mitmproxy_addon) and the packet text it shows and
edits: the recorded bodies (Py3AMF's requests, amfkit's answers) come back byte for byte
from unchanged text, one changed value changes only its bytes; the "AMF" view shows what
`amfkit decode` prints for the same bytes; and a real mitmdump between a client and
`amfkit serve --demo` shows AMF bodies so and rewrites values in requests (the `amf_set`
option) and responses (the `amf.set` command)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from amfkit import capture
from amfkit.capture import packetedit, packettext
from amfkit.cli.main import main
from amfkit.remoting import packet
from servers import HOST, serve_cli


def _bodies(recording: Any) -> list[bytes]:
    out = []
    for ex in capture.read(recording.flows):
        out += [b for b in (ex.request_body, ex.response_body) if b]
    return out


def test_unchanged_text_gives_the_same_bytes(recording: Any) -> None:
    bodies = _bodies(recording)
    assert len(bodies) == 16
    for data in bodies:
        assert packetedit.reencode(packettext.to_json(data), data) == data
        assert packetedit.assign(data, []) == data


def test_one_changed_value_changes_only_its_bytes(recording: Any) -> None:
    requests = [ex.request_body for ex in capture.read(recording.flows)]
    # Py3AMF's AMF0 echo("hello") (length fields 0, kept) and its AMF3 echo([1, "two", 3.0]).
    hello, three = requests[0], requests[2]
    assert hello is not None and three is not None
    edited = packetedit.assign(hello, ['bodies[0].value[0]="hello, world"'])
    assert edited == hello.replace(b"\x02\x00\x05hello", b"\x02\x00\x0chello, world")
    edited = packetedit.assign(three, ['bodies[0].value[0][1]="six"'])
    assert edited == three.replace(b"\x06\x07two", b"\x06\x07six")
    doc = json.loads(packettext.to_json(three))
    doc["bodies"][0]["value"][0][2] = 4  # a double stays a double
    assert packetedit.reencode(json.dumps(doc), three) == three.replace(b"\x05\x40\x08" + bytes(6), b"\x05\x40\x10" + bytes(6))


def test_real_lengths_follow_the_value_and_parts_can_be_added() -> None:
    data = packet.encode(packet.Envelope(0, bodies=[packet.Body("Echo.echo", "/1", ["hi"]), packet.Body("Echo.echo", "/2", [{"a": 1.0}])]))
    edited = packetedit.assign(data, ['bodies[0].value[0]="hello"'])
    assert edited == packet.encode(packet.Envelope(0, bodies=[packet.Body("Echo.echo", "/1", ["hello"]), packet.Body("Echo.echo", "/2", [{"a": 1.0}])]))
    doc = json.loads(packettext.to_json(data))
    doc["headers"].append({"name": "Credentials", "must_understand": True, "value": {"userid": "ada"}})
    doc["bodies"].pop(0)
    again = packet.decode(packetedit.reencode(json.dumps(doc), data))
    assert again.headers[0].value == {"userid": "ada"} and again.headers[0].must_understand
    assert [(b.target, b.response, b.value) for b in again.bodies] == [("Echo.echo", "/2", [{"a": 1.0}])]


def test_bad_edits_are_one_line_errors() -> None:
    data = packet.encode(packet.Envelope(0, bodies=[packet.Body("Echo.echo", "/1", ["hi"])]))
    with pytest.raises(packetedit.EditError, match="^not valid JSON"):
        packetedit.reencode("{", data)
    with pytest.raises(packetedit.EditError, match="^version must be 0, 1 or 3"):
        packetedit.reencode('{"version": 7, "headers": [], "bodies": []}', data)
    with pytest.raises(packetedit.EditError, match="no member"):
        packetedit.assign(data, ['bodies[0].nothing.here="x"'])
    with pytest.raises(packetedit.EditError, match=r"__bytes__ is not valid base64, at \$\.bodies\[0\]\.value\[0\]"):
        packetedit.assign(data, ['bodies[0].value[0]={"__bytes__": "%%%"}'])


def _view_text(data: bytes) -> str:
    """The text the addon's "AMF" view gives mitmproxy for `data` (the addon loaded as
    mitmproxy loads it, from its path)."""
    import importlib.util

    from amfkit.cli.mitmproxy import addon_path

    spec = importlib.util.spec_from_file_location("amfkit_mitmproxy_addon_under_test", addon_path())
    assert spec is not None and spec.loader is not None
    addon = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(addon)
    [view] = [v for v in addon.VIEWS if v.name == "AMF"]
    if addon.EDITABLE:  # mitmproxy 12's views
        return str(view.prettify(data, None))
    _, lines = view(data, content_type="application/x-amf")
    return "\n".join("".join(text for _, text in line) for line in lines)


def test_the_view_shows_what_amfkit_decode_prints(recording: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bodies = _bodies(recording)
    assert len(bodies) > 10
    body = tmp_path / "body.amf"
    for data in bodies:
        body.write_bytes(data)
        assert main(["decode", str(body)]) == 0
        printed = capsys.readouterr().out
        assert printed.startswith("# amf packet, version ")
        assert packettext.RENDER(data) + "\n" == printed
        assert _view_text(data) + "\n" == printed
    ping = [ex.request_body for ex in capture.read(recording.flows)][5]
    assert ping is not None
    text = packettext.RENDER(ping)
    assert text.startswith("# amf packet, version 3, 0 headers, 1 body, ")
    assert "\nbody 0: target 'null', response '/1'\n  Flex CommandMessage: operation 5 (client ping)" in text


def test_the_view_keeps_an_unknown_externalizable_class_opaque(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A body holding a class nobody registered is shown (its bytes kept opaque), as
    `amfkit decode --unknown-externalizable opaque` shows it; plain `decode` refuses it."""
    from amfkit import Opaque

    data = packet.encode(packet.Envelope(3, bodies=[packet.Body("/1/onResult", "null", Opaque("com.game.Map", b"\x01\x02\x03"))]))
    body = tmp_path / "body.amf"
    body.write_bytes(data)
    assert main(["decode", str(body)]) == 1
    assert "externalizable class" in capsys.readouterr().err
    assert main(["decode", "--unknown-externalizable", "opaque", str(body)]) == 0
    printed = capsys.readouterr().out
    assert "externalizable 'com.game.Map' kept opaque (3 bytes)" in printed
    assert packettext.RENDER(data) + "\n" == printed == _view_text(data) + "\n"


def test_the_cli_prints_the_addon_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mitmproxy-addon"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.name == "mitmproxy_addon.py" and path.is_file()


HELPER = '''
from mitmproxy import ctx

def response(flow):
    if flow.request.headers.get("x-amf-test") == "edit-response":
        ctx.master.commands.call("amf.set", [flow], "response", ['bodies[0].value="answer edited"'])
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _call(url: str, text: str, **headers: str) -> tuple[bytes, Any]:
    body = packet.encode(packet.Envelope(0, bodies=[packet.Body("EchoService.echo", "/1", [text])]))
    r = httpx.post(url, content=body, headers={"content-type": "application/x-amf", **headers}, timeout=30)
    r.raise_for_status()
    return body, packet.decode(r.content).bodies[0].value


def test_mitmdump_shows_and_edits_amf(tmp_path: Path, python_exe: str, python_env: dict[str, str]) -> None:
    mitmdump = Path(sys.executable).parent / "mitmdump"
    assert mitmdump.exists(), "mitmdump is needed (pip install 'amfkit[capture]'; it is in the dev list)"
    addon = subprocess.run([python_exe, "-m", "amfkit", "mitmproxy-addon"], env=python_env, capture_output=True, text=True, check=True).stdout.strip()
    helper = tmp_path / "helper.py"
    helper.write_text(HELPER)
    flows = tmp_path / "flows.mitm"
    env = dict(python_env, AMFKIT_DEMO_DB=str(tmp_path / "demo.sqlite3"))
    with serve_cli(python_exe, env, tmp_path, "--demo", ready=lambda url: httpx.get(url, timeout=5)) as server_url:
        server = server_url.rsplit("/", 1)[0]
        port = _free_port()
        proxy_env = {k: v for k, v in python_env.items() if k != "PYTHONWARNINGS"}
        proxy = subprocess.Popen(
            [str(mitmdump), "--mode", f"reverse:{server}", "--listen-host", HOST, "-p", str(port), "-s", addon, "-s", str(helper),
             "--set", 'amf_set=request:bodies[0].value[0]="changed by mitmproxy"', "--flow-detail", "4", "-w", str(flows)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=proxy_env,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection((HOST, port), timeout=1).close()
                    break
                except OSError:
                    assert proxy.poll() is None and time.monotonic() < deadline, proxy.communicate(timeout=5)
                    time.sleep(0.05)
            url = f"http://{HOST}:{port}/gateway"
            sent, answer = _call(url, "hello")
            assert answer == "changed by mitmproxy"  # the request was edited on its way
            _, answer = _call(url, "hello", **{"x-amf-test": "edit-response"})
            assert answer == "answer edited"  # the answer was edited by the amf.set command
        finally:
            proxy.terminate()
            out, err = proxy.communicate(timeout=60)
    shown = out.decode("utf-8", "replace")
    assert "body 0: target 'EchoService.echo', response '/1'" in shown
    assert "[0]: string 'changed by mitmproxy'" in shown
    from mitmproxy import io as mio

    with open(flows, "rb") as f:
        recorded = list(mio.FlowReader(f).stream())
    first = recorded[0].request.content
    # What mitmdump printed for the edited request is what `amfkit decode` prints for it.
    for line in packettext.RENDER(first).splitlines():
        assert line in shown, (line, shown[-2000:])
    # Only the string and the body's length field (amfkit's client writes real lengths).
    before = b"\x00\x00\x00\x0d\x0a\x00\x00\x00\x01\x02\x00\x05hello"
    assert sent.endswith(before)
    assert first == sent.replace(before, b"\x00\x00\x00\x1c\x0a\x00\x00\x00\x01\x02\x00\x14changed by mitmproxy")
    assert b"answer edited" in recorded[1].response.content
    assert not [line for line in err.decode().splitlines() if "Traceback" in line or "amf_set:" in line]
