"""`amfkit decode`, `encode` and `diff` on bytes nobody here wrote (fixtures/foreign/):
packets recognised and printed part by part with their Flex messages named, every
input form through standard input, `--json` written back to the same bytes by
`encode`, what is not AMF named in one line, the lenient options, and `diff`'s exit
status."""

from __future__ import annotations

import base64
import json
import subprocess
import zlib

import pytest

import amfkit
from amfkit.cli.main import main

from repo import FIXTURES

FOREIGN = FIXTURES / "foreign"
PACKETS = sorted(FOREIGN.glob("*.bin"))


def run_cli(python_exe, python_env, *args, stdin: bytes | None = None):
    return subprocess.run([python_exe, "-m", "amfkit", *args], input=stdin, capture_output=True, env=python_env, timeout=60)


def test_a_packet_is_printed_part_by_part_with_its_flex_message_named(capsys):
    assert main(["decode", str(FOREIGN / "py3amf-flex-request.bin")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:5] == [
        "# amf packet, version 3, 0 headers, 1 body, 357 bytes",
        "body 0: target 'null', response '/1'",
        "  Flex RemotingMessage: destination 'EchoService', operation 'echo'",
        "  array [1]",
        "    [0]: object 'flex.messaging.messages.RemotingMessage' (RemotingMessage, 9 members)",
    ]
    assert "        [1]: ArrayCollection [3]" in lines
    assert main(["decode", str(FOREIGN / "py3amf-flex-command.bin")]) == 0
    out = capsys.readouterr()
    assert "  Flex CommandMessage: operation 5 (client ping)" in out.out.splitlines()
    # Py3AMF writes the full CommandMessage without messageRefType: decoded, and said.
    assert out.err == "amfkit decode: note: class 'flex.messaging.messages.CommandMessage' arrived with none of messageRefType\n"
    assert main(["decode", str(FOREIGN / "py3amf-flex-ack-small.bin")]) == 0
    assert "  Flex AcknowledgeMessage (small form DSK): correlationId '00000001-4455-6677-8899-AABBCCDDEEFF'" in capsys.readouterr().out
    assert main(["decode", str(FOREIGN / "py3amf-netconnection-amf0.bin")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == ["header 0: 'Credentials', must understand", "  object (2 members)"]
    assert "body 1: target 'EchoService.count', response '/2'" in lines


def test_amfphps_fault_is_named_and_its_missing_members_said(capsys):
    assert main(["decode", str(FOREIGN / "amfphp-errormessage.bin")]) == 0
    out = capsys.readouterr()
    assert "  Flex ErrorMessage: faultCode 'AMFPHP_RUNTIME_ERROR', faultString 'service not found'" in out.out.splitlines()
    assert out.err.startswith("amfkit decode: note: class 'flex.messaging.messages.ErrorMessage' arrived with none of body, clientId")


@pytest.mark.parametrize("fixture", PACKETS, ids=lambda p: p.name)
def test_json_of_a_packet_is_written_back_to_its_bytes(fixture, tmp_path, capsys):
    assert main(["decode", "--json", str(fixture)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(text)
    assert doc["__packet__"] in (0, 3)
    src = tmp_path / "p.json"
    src.write_text(text)
    out = tmp_path / "p.bin"
    assert main(["encode", str(src), "-o", str(out)]) == 0
    assert out.read_bytes() == fixture.read_bytes()
    # Compact JSON too.
    assert main(["decode", "--json", "--compact", str(fixture)]) == 0
    compact = capsys.readouterr().out
    assert "\n" not in compact.rstrip("\n") and json.loads(compact) == doc


def test_every_input_form_through_standard_input(python_exe, python_env):
    data = (FOREIGN / "py3amf-netconnection-amf3.bin").read_bytes()
    forms = {
        "hex": data.hex(" ").encode() + b"\n",
        "base64": base64.encodebytes(data),
        "list": str(list(data)).encode(),
        "zlib": zlib.compress(data),
        "http": b"POST /gateway HTTP/1.1\r\nContent-Type: application/x-amf\r\nContent-Length: %d\r\n\r\n" % len(data) + data,
    }
    for name, stdin in forms.items():
        r = run_cli(python_exe, python_env, "decode", "-", stdin=stdin)
        assert r.returncode == 0, (name, r.stderr.decode())
        first = r.stdout.decode().splitlines()[0]
        assert first == f"# amf packet, version 3, 1 header, 2 bodies, 186 bytes (from {name})"


def test_what_is_not_amf_is_one_line_and_exit_1(tmp_path, capsys):
    page = tmp_path / "page.html"
    page.write_text("<!DOCTYPE html>\n<html><head><title>502</title></head><body>Bad Gateway</body></html>\n")
    assert main(["decode", str(page)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"amfkit decode: {page}: not AMF: this looks like an HTML page\n"
    sol = FIXTURES / "sol" / "amf0-basic.sol"
    assert main(["decode", str(sol)]) == 1
    assert "this is a local shared object (.sol) file: read it with `amfkit sol`" in capsys.readouterr().err
    hexed = tmp_path / "body.txt"
    hexed.write_text((FOREIGN / "ruffle-pr23772-flash.amf0").read_bytes().hex(" "))
    assert main(["decode", "--from", "raw", str(hexed)]) == 1
    assert capsys.readouterr().err.endswith("not AMF: this looks like hex text (a text form: read it as one)\n")


def test_from_names_the_form(tmp_path, capsys):
    text = tmp_path / "body.txt"
    text.write_text("0a 00 00 00 01 02 00 0a " + b"G2C Online".hex(" "))
    assert main(["decode", "--from", "hex", str(text)]) == 0
    assert capsys.readouterr().out.splitlines() == ["# amf0 value, 18 bytes (from hex)", "strict array [1]", "  [0]: string 'G2C Online'"]
    assert main(["decode", "--from", "base64", str(text)]) == 1
    assert "not base64" in capsys.readouterr().err


def test_packet_can_be_forced_or_refused(tmp_path, capsys):
    value = tmp_path / "v.amf"
    value.write_bytes(amfkit.amf3.encode({"a": 1}))
    assert main(["decode", "--packet", str(value)]) == 1
    assert f"amfkit decode: {value}: " in capsys.readouterr().err
    assert main(["decode", "--packet", "--amf3", str(value)]) == 1
    assert "--packet reads a packet" in capsys.readouterr().err
    fixture = str(FOREIGN / "py3amf-netconnection-amf0.bin")
    assert main(["decode", "--amf0", "--all", fixture]) == 1  # not a stream of AMF0 values
    capsys.readouterr()


def test_lenient_options_on_the_command_line(tmp_path, capsys):
    ext = bytes.fromhex("0a07") + b"\x15com.x.List" + bytes.fromhex("0905010401060378")
    f = tmp_path / "v.amf"
    f.write_bytes(ext)
    assert main(["decode", str(f)]) == 1
    assert 'externalizable class "com.x.List" is not registered' in capsys.readouterr().err
    assert main(["decode", "--unknown-externalizable", "opaque", str(f)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "opaque object 'com.x.List' (its body kept as 8 bytes) 0905010401060378"
    assert main(["decode", "--externalizable", "com.x.List=arraycollection", str(f)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "ArrayCollection [2], of class 'com.x.List'"
    assert main(["decode", "--externalizable", "com.x.List", str(f)]) == 1
    assert "give CLASS=arraycollection, CLASS=objectproxy or CLASS=opaque" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["decode", "--unknown-externalizable", "guess", str(f)])
    assert e.value.code == 2
    capsys.readouterr()


def test_the_inflation_cap_is_an_option(tmp_path, capsys):
    bomb = tmp_path / "bomb.z"
    bomb.write_bytes(zlib.compress(b"\x0a" + bytes(20_000_000), 9))
    assert main(["decode", "--max-inflate", "1000000", str(bomb)]) == 1
    assert "zlib data inflates to more than 1000000 bytes" in capsys.readouterr().err
    assert main(["decode", str(bomb)]) == 1  # within the default 64 MiB, then not AMF that reads
    assert "cannot be read" in capsys.readouterr().err


# -- diff -------------------------------------------------------------------------------------


def test_diff_of_ruffle_pr_23772(capsys):
    a, b = FOREIGN / "ruffle-pr23772-ruffle-packet.bin", FOREIGN / "ruffle-pr23772-flash-packet.bin"
    assert main(["diff", str(a), str(b)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"# A: {a}: amf packet, version 0, 0 headers, 1 body, 59 bytes",
        f"# B: {b}: amf packet, version 0, 0 headers, 1 body, 53 bytes",
        "$.bodies[0][0]: ECMA array vs strict array",
        "# 1 difference",
    ]
    assert main(["diff", "--json", str(a), str(b)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["same"] is False
    assert report["differences"] == [{"path": "$.bodies[0][0]", "kind": "type", "a": "ECMA array", "b": "strict array"}]


def test_diff_of_the_same_payload_in_two_forms_is_exit_0(python_exe, python_env, tmp_path):
    a = FOREIGN / "py3amf-flex-error.bin"
    b64 = tmp_path / "b.txt"
    b64.write_bytes(base64.b64encode(a.read_bytes()))
    r = run_cli(python_exe, python_env, "diff", str(a), "-", stdin=a.read_bytes().hex().encode())
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().splitlines()[-1] == "# the same"
    r = run_cli(python_exe, python_env, "diff", "--json", str(a), str(b64))
    assert r.returncode == 0 and json.loads(r.stdout)["same"] is True


def test_diff_trouble_is_exit_2_not_a_difference(python_exe, python_env, tmp_path, capsys):
    """As GNU diff: 1 says the inputs differ, 2 that they could not be compared (an input
    missing, unreadable, not AMF, a bad option), so a script can tell the two apart."""
    flash = str(FOREIGN / "ruffle-pr23772-flash.amf0")
    with pytest.raises(SystemExit) as e:
        main(["diff", "only-one"])
    assert e.value.code == 2
    assert main(["diff", "-", "-"]) == 2
    assert "only one of A and B can be standard input" in capsys.readouterr().err
    page = tmp_path / "p.html"
    page.write_text("<html></html>")
    assert main(["diff", str(page), flash]) == 2
    assert capsys.readouterr().err == f"amfkit diff: {page}: not AMF: this looks like an HTML page\n"
    missing = tmp_path / "missing.bin"
    assert main(["diff", flash, str(missing)]) == 2
    assert capsys.readouterr().err == f"amfkit diff: {missing}: No such file or directory\n"
    assert main(["diff", "--externalizable", "com.x.Y=guess", flash, flash]) == 2
    assert "--externalizable 'com.x.Y=guess'" in capsys.readouterr().err
    # The process's exit status, and the other commands keep 1 for the same trouble.
    r = run_cli(python_exe, python_env, "diff", str(page), flash)
    assert r.returncode == 2 and r.stdout == b"" and r.stderr.decode().count("\n") == 1
    r = run_cli(python_exe, python_env, "decode", str(page))
    assert r.returncode == 1
    r = run_cli(python_exe, python_env, "diff", str(FOREIGN / "ruffle-pr23772-ruffle.amf0"), flash)
    assert r.returncode == 1 and r.stdout.decode().splitlines()[-1] == "# 1 difference"
