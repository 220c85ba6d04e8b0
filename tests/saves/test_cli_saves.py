"""The command line of saves: `amfkit sol FILE --get/--set/--delete` through nested data,
and `amfkit sol ls | export | import` between Flash Player, Ruffle desktop and Ruffle
web, with one-line errors and nothing written on a failure."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zlib

import pytest

import amfkit
from amfkit import sol
from amfkit.cli.main import main

from repo import FIXTURES

SAMPLES = FIXTURES / "sol" / "samples"


def run(capsys, *args):
    status = main(["sol", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def game(tmp_path):
    inner = amfkit.amf3.encode({"player": {"gold": 120, "name": "Ada"}, "level": 3})
    data = sol.dumps(sol.SOL("game", {"SDAT": zlib.compress(inner, 9), "version": 2}))
    path = tmp_path / "game.sol"
    path.write_bytes(data)
    return path


def test_get_and_set_through_the_steps(capsys, game):
    status, out, err = run(capsys, game, "--get", "SDAT|zlib|amf3.player.gold")
    assert (status, out, err) == (0, "120\n", "")
    before = game.read_bytes()
    status, _, err = run(capsys, game, "--set", "SDAT|zlib|amf3.player.gold=9999", "--set", 'SDAT|zlib|amf3.player.name="Bob"', "-o", game)
    assert (status, err) == (0, "")
    assert run(capsys, game, "--get", "SDAT|zlib|amf3.player", "--compact")[1] == '{"gold": 9999, "name": "Bob"}\n'
    after = game.read_bytes()
    assert zlib.decompress(sol.loads(after)["SDAT"]) == amfkit.amf3.encode({"player": {"gold": 9999, "name": "Bob"}, "level": 3})
    assert sol.loads(after)["SDAT"][:2] == sol.loads(before)["SDAT"][:2] == b"\x78\xda"  # still level 9
    status, _, _ = run(capsys, game, "--delete", "SDAT|zlib|amf3.level", "-o", game)
    assert status == 0 and run(capsys, game, "--get", "SDAT|zlib|amf3", "--compact")[1] == '{"player": {"gold": 9999, "name": "Bob"}}\n'


def test_an_unchanged_value_writes_the_same_file(capsys, game, tmp_path):
    out = tmp_path / "same.sol"
    assert run(capsys, game, "--set", "SDAT|zlib|amf3.player.gold=120", "-o", out)[0] == 0
    assert out.read_bytes() == game.read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--get", "version|zlib"], "version|zlib: |zlib reads a ByteArray, not an int"),
    (["--get", "SDAT|amf3"], "SDAT|amf3: "),
    (["--get", "SDAT|zip"], "unknown step |zip"),
    (["--get", "SDAT|zlib|amf3.nope"], "no member 'nope' in SDAT|zlib|amf3"),
    (["--set", "SDAT|zlib|amf3.x=nope", "-o", "X"], "the value is not JSON"),
    (["--delete", "SDAT|zlib", "-o", "X"], "--delete: SDAT|zlib: a step cannot be deleted"),
])
def test_errors_through_the_steps_are_one_line(capsys, game, tmp_path, args, message):
    args = [str(tmp_path / "X") if a == "X" else a for a in args]
    status, out, err = run(capsys, game, *args)
    assert status == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("amfkit sol: ") and message in err, err
    assert not (tmp_path / "X").exists()


def test_help_names_the_steps_and_the_actions():
    r = subprocess.run([sys.executable, "-m", "amfkit", "sol", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "|zlib" in r.stdout and "amfkit sol ls SOURCE" in r.stdout
    for action in ("ls", "export", "import"):
        r = subprocess.run([sys.executable, "-m", "amfkit", "sol", action, "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and f"amfkit sol {action}" in r.stdout


# -- the saves of the players ---------------------------------------------------------


@pytest.fixture
def flash(tmp_path):
    profile = tmp_path / "Flash_Player" / "#SharedObjects" / "QXHRYVW2"
    files = {
        "static.arantius.com/games/8planet.swf/mykaka_starBall.sol": "AS2-Demo.sol",
        "www.example.com/games/hero.swf/hero.sol": "AS3-Demo.sol",
        "www.example.com/games/hero.swf/#slots/one.sol": "AS3-Object-Demo.sol",
        "localhost/Users/ada/old.swf/prefs.sol": "AS3-Number-Demo.sol",
    }
    for rel, name in files.items():
        path = profile / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((SAMPLES / name).read_bytes())
    (profile / "www.example.com" / "games" / "hero.swf" / "broken.sol").write_bytes((SAMPLES / "2.sol").read_bytes())
    return tmp_path / "Flash_Player", profile, files


def test_ls_lists_saves_by_site_and_swf(capsys, flash):
    folder, _, _ = flash
    status, out, err = run(capsys, "ls", folder)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"# flash: {folder}: 5 saves, 3 sites"
    assert lines[1:3] == ["localhost", "  Users/ada/old.swf"]
    assert lines[3].startswith("    prefs  ") and "amf3" in lines[3]
    assert "static.arantius.com" in lines and "  games/8planet.swf" in lines
    hero = lines.index("  games/hero.swf")
    assert lines[hero + 1].startswith("    broken  ") and "unreadable: " in lines[hero + 1]
    assert lines[hero + 2].startswith("    hero  ") and f"{len((SAMPLES / 'AS3-Demo.sol').read_bytes())} bytes" in lines[hero + 2]
    assert lines[hero + 3].startswith("    slots/one  ")
    members = ", ".join(sol.loads((SAMPLES / "AS2-Demo.sol").read_bytes()))
    assert any(members[:40] in line for line in lines)


def test_ls_json(capsys, flash):
    folder, profile, _ = flash
    status, out, _ = run(capsys, "ls", folder, "--json")
    rows = json.loads(out)
    assert status == 0 and len(rows) == 5
    hero = next(r for r in rows if r["name"] == "hero")
    assert hero["site"] == "www.example.com" and hero["swf"] == "games/hero.swf" and hero["amf_version"] == 3
    assert hero["members"] == list(sol.loads((SAMPLES / "AS3-Demo.sol").read_bytes()))
    assert hero["source"] == str(profile / "www.example.com" / "games" / "hero.swf" / "hero.sol")
    assert "sealed member count 19 exceeds" in next(r for r in rows if r["name"] == "broken")["error"]


def test_export_to_ruffle_web_and_import_into_flash_and_ruffle_desktop(capsys, flash, tmp_path):
    folder, profile, files = flash
    saves_json = tmp_path / "saves.json"
    status, _, err = run(capsys, "export", folder, "--to", "ruffle-web", "-o", saves_json)
    assert status == 0
    assert "skipped" not in err and "5 saves read" in err and "5 localStorage entries" in err
    entries = json.loads(saves_json.read_text())
    assert entries["www.example.com/games/hero.swf/#slots/one"] == base64.b64encode((SAMPLES / "AS3-Object-Demo.sol").read_bytes()).decode()
    assert entries["static.arantius.com/games/8planet.swf/mykaka_starBall"] == base64.b64encode((SAMPLES / "AS2-Demo.sol").read_bytes()).decode()

    into = tmp_path / "new-flash"
    status, _, err = run(capsys, "import", saves_json, "--to", "flash", "-o", into)
    assert status == 0 and "5 saves written" in err
    (made,) = os.listdir(into / "#SharedObjects")
    for rel, name in files.items():
        assert (into / "#SharedObjects" / made / rel).read_bytes() == (SAMPLES / name).read_bytes()

    ruffle = tmp_path / "ruffle"
    assert run(capsys, "export", folder, "--to", "ruffle-desktop", "-o", ruffle)[0] == 0
    assert (ruffle / "SharedObjects" / "www.example.com" / "games" / "hero.swf" / "hero.sol").read_bytes() == (SAMPLES / "AS3-Demo.sol").read_bytes()
    # Ruffle desktop back to Ruffle web: the same entries.
    again = tmp_path / "again.json"
    assert run(capsys, "export", ruffle, "--to", "ruffle-web", "-o", again)[0] == 0
    assert json.loads(again.read_text()) == entries
    # Importing the same saves again changes nothing; other bytes are refused.
    status, _, err = run(capsys, "import", saves_json, "--to", "flash", "-o", into)
    assert status == 0 and "0 saves written, 5 already there" in err
    entries["www.example.com/games/hero.swf/hero"] = entries["localhost/Users/ada/old.swf/prefs"]
    saves_json.write_text(json.dumps(entries))
    status, _, err = run(capsys, "import", saves_json, "--to", "flash", "-o", into)
    assert status == 1 and "is there with other bytes: nothing written (--replace writes over it)" in err and err.count("\n") == 1
    assert run(capsys, "import", saves_json, "--to", "flash", "-o", into, "--replace")[0] == 0
    assert (into / "#SharedObjects" / made / "www.example.com/games/hero.swf/hero.sol").read_bytes() == (SAMPLES / "AS3-Number-Demo.sol").read_bytes()


def test_export_names_what_it_skips(capsys, tmp_path):
    saves_json = tmp_path / "page.json"
    saves_json.write_text(json.dumps({
        "theme": "dark mode",
        "127.0.0.1/game.swf/save": base64.b64encode((SAMPLES / "AS3-Demo.sol").read_bytes()).decode(),
    }))
    status, out, err = run(capsys, "export", saves_json, "--to", "ruffle-web", "-o", "-")
    assert status == 0 and list(json.loads(out)) == ["127.0.0.1/game.swf/save"]
    assert err.splitlines()[0] == "amfkit sol: skipped 'theme': not base64, not a save"


@pytest.mark.parametrize("args, message", [
    (["ls", "NOWHERE"], "NOWHERE: no such file or folder"),
    (["export", "EMPTY", "--to", "flash", "-o", "OUT"], "no saves in"),
])
def test_action_errors_are_one_line(capsys, tmp_path, args, message):
    (tmp_path / "EMPTY").mkdir()
    args = [str(tmp_path / a) if a in ("NOWHERE", "EMPTY", "OUT") else a for a in args]
    status, out, err = run(capsys, *args)
    assert status == 1 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "OUT").exists()


def test_a_file_named_like_an_action(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ls").write_bytes((SAMPLES / "AS3-Demo.sol").read_bytes())
    status, out, _ = run(capsys, "./ls")
    assert status == 0 and out.startswith("# sol 'AS3-Demo', amf3")
