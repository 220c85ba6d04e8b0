"""`amfkit inspect` and `amfkit serve --replay` on the real recording."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from amfkit.cli.main import main
from amfkit.remoting.client import Client
from amfkit.remoting import Fault
from servers import serve_cli


def test_inspect_tree(recording: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(recording.pcap)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# 10 of 10 AMF calls in 8 HTTP exchanges\n")
    assert "  EchoService.echo (netconnection)\n    [0]: string 'hello'\n  result: string 'hello'\n" in out
    assert "  fault Server.Processing: two\n" in out
    assert "command ping (command)  messageId " in out


def test_inspect_json_and_filters(recording: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(recording.har), "--json", "--target", "EchoService.*", "--status", "fault"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(c["target"], c["fault"]["message"], c["kind"]) for c in doc["calls"]] == [
        ("EchoService.fail", "two", "netconnection"),
        ("EchoService.fail", "flex fault", "remoting"),
    ]
    assert doc["calls"][1]["message_id"] == doc["calls"][1]["correlation_id"]
    assert main(["inspect", str(recording.flows), "--json", "--url", "/gateway", "--status", "2xx", "--target", "command *"]) == 0
    assert [c["target"] for c in json.loads(capsys.readouterr().out)["calls"]] == ["command ping"]


def test_inspect_summary(recording: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(recording.flows), "--summary", "--json"]) == 0
    rows = {r["target"]: r for r in json.loads(capsys.readouterr().out)["targets"]}
    assert rows["EchoService.echo"]["calls"] == 6 and rows["EchoService.fail"]["faults"] == 2
    assert rows["TileService.getTilesAsString"]["response_bytes"] > 20_000  # the gzipped answer, inflated
    assert main(["inspect", str(recording.flows), "--summary"]) == 0
    assert "EchoService.echo" in capsys.readouterr().out


def _packet_texts(out: str) -> list[str]:
    """The packets `inspect --packets` printed, in order (each the text below its
    `### request` or `### response` line)."""
    parts = re.split(r"^(?:## .*|### (?:request|response))\n", out, flags=re.M)
    heads = re.findall(r"^(## .*|### (?:request|response))\n", out, flags=re.M)
    return [text for head, text in zip(heads, parts[1:]) if head.startswith("### ")]


def test_inspect_packets_print_what_decode_prints(recording: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from amfkit import capture
    from amfkit.capture import packettext

    assert main(["inspect", str(recording.pcap), "--packets"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# 8 HTTP exchanges holding 10 of 10 AMF calls\n")
    assert len(re.findall(r"^## .* POST http://.*/gateway 200: calls? #\d", out, flags=re.M)) == 8
    printed = _packet_texts(out)
    calls = capture.calls_of(capture.read(recording.pcap)).calls
    packets: list[bytes] = []
    for c in calls:
        assert c.packets is not None and c.packets[1] is not None
        if not packets or c.packets[0] is not packets[-2]:
            packets += [c.packets[0], c.packets[1]]
    assert len(printed) == len(packets) == 16
    body = tmp_path / "body.amf"
    for text, data in zip(printed, packets):
        body.write_bytes(data)
        assert main(["decode", str(body)]) == 0
        decoded = capsys.readouterr().out
        assert text == decoded == packettext.RENDER(data) + "\n"
    # Filtered: the exchanges holding the calls chosen, each once.
    assert main(["inspect", str(recording.har), "--packets", "--status", "fault"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# 2 HTTP exchanges holding 2 of 10 AMF calls\n") and len(_packet_texts(out)) == 4
    assert main(["inspect", str(recording.har), "--packets", "--json"]) == 1
    assert "--packets prints packets as text" in capsys.readouterr().err


def test_inspect_names_what_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("just some notes\n")
    assert main(["inspect", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("amfkit inspect: notes.txt: not a capture") and err.count("\n") == 1


def test_serve_replay_answers(recording: Any, python_exe: str, python_env: dict[str, str], tmp_path: Path) -> None:
    def ready(url: str) -> None:
        httpx.get(url, timeout=5)

    with serve_cli(python_exe, python_env, tmp_path, f"--replay={recording.pcap}", ready=ready) as url:
        with Client(url, amf3=True) as c:
            assert c.EchoService.echo([1, "two", 3.0]) == [1, "two", 3.0]
            with pytest.raises(Fault) as info:
                c.EchoService.echo("other")
            assert info.value.code == "Replay.NotRecorded"
        with Client(url, flex=True) as c:
            assert c.EchoService.echo("flex") == "flex"


def test_serve_replay_refuses_a_file_without_calls(tmp_path: Path, python_exe: str, python_env: dict[str, str]) -> None:
    empty = tmp_path / "empty.har"
    empty.write_text('{"log": {"entries": []}}')
    out = subprocess.run([python_exe, "-m", "amfkit", "serve", "--replay", str(empty)], env=python_env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.strip() == f"amfkit serve: no answered AMF call in {empty}: nothing to replay"
