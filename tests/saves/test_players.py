"""Saves between players (`amfkit.players`): the names and places Flash Player, Ruffle
desktop and Ruffle web give a save, pinned from Ruffle's source (repository
ruffle-rs/ruffle: `core/src/avm2/globals/flash/net/shared_object.rs` and
`core/src/avm1/globals/shared_object.rs` `get_local` build the name; `web/src/storage.rs`
keeps it in localStorage as base64; `desktop/src/backends/storage.rs` as a file; the save
manager in `web/packages/core/src/internal/player/inner.tsx` (`isB64SOL`) takes an
entry for a save when its bytes hold `TCSO` at offset 6), and every conversion between
them, both ways, with the .sol bytes unchanged."""

from __future__ import annotations

import base64
import json
import os

import pytest

from amfkit import players
from amfkit.players import SaveError, SaveKey, read_saves, ruffle_web_entries, write_saves

from repo import FIXTURES

SAMPLES = FIXTURES / "sol" / "samples"

# (SWF URL, getLocal name, localPath) -> Ruffle's name for the save.
RUFFLE_NAMES = [
    # Ruffle issue 12452: Flash Player kept it at ...\#SharedObjects\QXHRYVW2\static.arantius.com\games\8planet.swf\mykaka_starBall.sol
    (("http://static.arantius.com/games/8planet.swf", "mykaka_starBall", None), "static.arantius.com/games/8planet.swf/mykaka_starBall"),
    (("https://www.example.com/a/b/game.swf?level=3#start", "save", None), "www.example.com/a/b/game.swf/save"),
    (("https://www.example.com/a/b/game.swf", "save", "/a"), "www.example.com/a/save"),
    (("https://www.example.com/a/b/game.swf", "save", "/"), "www.example.com//save"),  # format!("{host}/{path}/{name}") with an empty path
    (("https://www.example.com/a/b/game.swf", "slots/one", None), "www.example.com/a/b/game.swf/#slots/one"),
    (("file:///C:/Users/ada/game.swf", "save", None), "localhost/Users/ada/game.swf/save"),  # the drive letter is dropped
    (("file:///home/ada/game.swf", "save", None), "localhost/home/ada/game.swf/save"),
    (("http://127.0.0.1:8000/game.swf", "save", None), "127.0.0.1/game.swf/save"),  # no port
]


@pytest.mark.parametrize("args, name", RUFFLE_NAMES)
def test_ruffle_names_a_save_from_the_swf_url_the_name_and_local_path(args, name):
    key = SaveKey.for_swf(*args)
    assert key.ruffle_key() == name
    assert SaveKey.from_ruffle_key(name) == key


@pytest.mark.parametrize("args, message", [
    (("https://example.com/a/game.swf", "save", "/b"), "is not a prefix"),
    (("https://example.com/ab/game.swf", "save", "/a"), "is not a prefix"),  # whole segments only
    (("https://example.com/a/game.swf", "save", ""), "empty localPath"),
    (("https://example.com/a/game.swf", "my save", None), "refuses a shared object name"),
    (("https://example.com/a/game.swf", "a#b", None), "refuses a shared object name"),
    (("https://example.com/a/.hidden/game.swf", "save", None), "cannot hold the path segment '.hidden'"),
    (("https://example.com/a/game.swf", "../up", None), "cannot hold the path segment '..'"),
])
def test_names_the_players_refuse(args, message):
    with pytest.raises(SaveError, match=message):
        SaveKey.for_swf(*args)


def test_the_file_below_shared_objects_is_the_name_plus_sol():
    """Ruffle desktop: `SharedObjects/{name}.sol`; Flash Player: the same below
    `#SharedObjects/<random>/` (the 8planet save of Ruffle issue 12452)."""
    key = SaveKey.for_swf("http://static.arantius.com/games/8planet.swf", "mykaka_starBall")
    assert key.relpath() == "static.arantius.com/games/8planet.swf/mykaka_starBall.sol"
    assert SaveKey("h", "", "n").relpath() == "h/n.sol"
    slash = SaveKey("h", "g.swf", "slots/one")
    assert slash.relpath() == "h/g.swf/#slots/one.sol"
    for k in (key, SaveKey("h", "", "n"), slash):
        assert SaveKey.from_relpath(k.relpath()) == k


@pytest.mark.parametrize("bad", ["", "../x", "a/../b", "a\\b", ".x", "a/./b", "x\0y", "#SharedObjects"])
def test_a_name_that_cannot_be_a_path_is_refused(bad):
    with pytest.raises(SaveError):
        SaveKey("host", "p", bad)


@pytest.mark.parametrize("key", ["host/p/", "host/../name", "host/p/../x", "host/p\\q/n", "host/.git/n", "nohost", "/p/n", ".."])
def test_a_key_that_cannot_be_a_path_is_refused(key):
    with pytest.raises(SaveError):
        SaveKey.from_ruffle_key(key)


def test_ruffle_takes_an_entry_for_a_save_by_its_tcso():
    data = (SAMPLES / "AS3-Demo.sol").read_bytes()
    assert players.is_sol(data) and data[6:10] == b"TCSO"
    assert not players.is_sol(b"\x00\xbf\x00\x00\x00\x00XXXX") and not players.is_sol(b"{}")


# -- the three places -----------------------------------------------------------------

SAVES = [
    (SaveKey("www.example.com", "games/hero.swf", "hero"), "AS3-Demo.sol"),
    (SaveKey("www.example.com", "games/hero.swf", "slots/one"), "AS3-Object-Demo.sol"),
    (SaveKey("www.example.com", "", "shared"), "AS2-Demo.sol"),
    (SaveKey("localhost", "Users/ada/old.swf", "prefs"), "AS2-Number-Demo.sol"),
    (SaveKey("127.0.0.1", "game.swf", "big"), "AS3-TypedObject-Demo.sol"),
]


def saves() -> list[players.Save]:
    return [players.Save(key, (SAMPLES / name).read_bytes(), name) for key, name in SAVES]


def make_flash(root) -> str:
    """A Flash Player folder as Flash Player lays it out: #SharedObjects/<random>/..."""
    base = root / "Flash_Player"
    profile = base / "#SharedObjects" / "QXHRYVW2"
    for key, name in SAVES:
        path = profile / key.relpath()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((SAMPLES / name).read_bytes())
    (base / "macromedia.com" / "support" / "flashplayer" / "sys").mkdir(parents=True)
    (base / "macromedia.com" / "support" / "flashplayer" / "sys" / "settings.sol").write_bytes((SAMPLES / "AS2-Boolean-Demo.sol").read_bytes())
    return str(base)


def make_ruffle_desktop(root) -> str:
    base = root / "ruffle"
    for key, name in SAVES:
        path = base / "SharedObjects" / key.relpath()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((SAMPLES / name).read_bytes())
    return str(base)


def make_ruffle_web(root) -> str:
    root.mkdir(parents=True, exist_ok=True)
    entries = {k.ruffle_key(): base64.b64encode((SAMPLES / n).read_bytes()).decode() for k, n in SAVES}
    entries["theme"] = "dark"  # a page's other localStorage entries
    entries["notes"] = base64.b64encode(b"not a save at all").decode()
    path = root / "saves.json"
    path.write_text(json.dumps(entries))
    return str(path)


MAKERS = {"flash": make_flash, "ruffle-desktop": make_ruffle_desktop, "ruffle-web": make_ruffle_web}


def as_set(found: list[players.Save]) -> set[tuple[SaveKey, bytes]]:
    return {(s.key, s.data) for s in found}


@pytest.mark.parametrize("fmt", sorted(MAKERS))
def test_each_place_is_read_and_told_apart(tmp_path, fmt):
    source = MAKERS[fmt](tmp_path)
    assert players.detect(source) == fmt
    problems: list[str] = []
    found = read_saves(source, problems=problems)
    assert as_set(found) == as_set(saves())
    if fmt == "ruffle-web":
        assert len(problems) == 2 and any("'theme'" in p for p in problems) and any("not a .sol file" in p for p in problems)
    else:
        assert problems == []  # the settings folder beside #SharedObjects is not read


def test_a_flash_profile_and_shared_objects_folder_are_read_too(tmp_path):
    base = make_flash(tmp_path)
    for source in (os.path.join(base, "#SharedObjects"), os.path.join(base, "#SharedObjects", "QXHRYVW2")):
        assert players.detect(source) == "flash"
        assert as_set(read_saves(source)) == as_set(saves())
    assert as_set(read_saves(os.path.join(make_ruffle_desktop(tmp_path), "SharedObjects"))) == as_set(saves())


def files_below(root) -> dict[str, bytes]:
    out = {}
    for top, _, names in os.walk(root):
        for n in names:
            p = os.path.join(top, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root).replace(os.sep, "/")] = f.read()
    return out


def convert(source: str, target_fmt: str, out) -> str:
    found = read_saves(source)
    if target_fmt == "ruffle-web":
        out.mkdir(parents=True)
        path = out / "out.json"
        path.write_text(json.dumps(ruffle_web_entries(found)))
        return str(path)
    write_saves(found, str(out), target_fmt)
    return str(out)


PAIRS = [(a, b) for a in MAKERS for b in MAKERS if a != b]


@pytest.mark.parametrize("source_fmt, target_fmt", PAIRS)
def test_every_conversion_both_ways_keeps_every_byte(tmp_path, source_fmt, target_fmt):
    source = MAKERS[source_fmt](tmp_path / "src")
    there = convert(source, target_fmt, tmp_path / "there")
    assert players.detect(there) == target_fmt
    assert as_set(read_saves(there)) == as_set(saves())
    back = convert(there, source_fmt, tmp_path / "back")
    assert as_set(read_saves(back)) == as_set(saves())
    if source_fmt == "ruffle-web":
        with open(source) as f, open(back) as g:
            original = {k: v for k, v in json.load(f).items() if k not in ("theme", "notes")}
            assert json.load(g) == original  # the same keys, the same base64
    elif source_fmt == "ruffle-desktop":
        assert files_below(os.path.join(back, "SharedObjects")) == files_below(os.path.join(source, "SharedObjects"))
    else:
        (profile,) = os.listdir(os.path.join(back, "#SharedObjects"))
        assert len(profile) == 8 and profile.isalnum() and profile.upper() == profile
        assert files_below(os.path.join(back, "#SharedObjects", profile)) == files_below(os.path.join(source, "#SharedObjects", "QXHRYVW2"))


def test_ruffle_web_entries_are_standard_base64_sorted_by_key():
    entries = ruffle_web_entries(saves())
    assert list(entries) == sorted(entries)
    for key, name in SAVES:
        value = entries[key.ruffle_key()]
        assert base64.b64decode(value, validate=True) == (SAMPLES / name).read_bytes()
        assert value == base64.standard_b64encode((SAMPLES / name).read_bytes()).decode()


def test_local_with_net_is_ruffle_s_localhost(tmp_path):
    profile = tmp_path / "#SharedObjects" / "ABCD1234"
    key = SaveKey(players.LOCAL_WITH_NET, "games/g.swf", "save")
    (profile / "#localWithNet" / "games" / "g.swf").mkdir(parents=True)
    (profile / key.relpath()).write_bytes((SAMPLES / "AS3-Demo.sol").read_bytes())
    found = read_saves(str(tmp_path))
    assert [s.key for s in found] == [key]
    assert list(ruffle_web_entries(found)) == ["localhost/games/g.swf/save"]
    written = write_saves(found, str(tmp_path / "ruffle"), "ruffle-desktop")
    assert [os.path.relpath(p, tmp_path / "ruffle") for p, _ in written] == [os.path.join("SharedObjects", "localhost", "games", "g.swf", "save.sol")]
    # Both sandboxes holding the save are one save for Ruffle: refused, nothing written.
    other = SaveKey("localhost", "games/g.swf", "save")
    (profile / "localhost" / "games" / "g.swf").mkdir(parents=True)
    (profile / other.relpath()).write_bytes((SAMPLES / "AS2-Demo.sol").read_bytes())
    with pytest.raises(SaveError, match="two saves are 'localhost/games/g.swf/save' for Ruffle"):
        ruffle_web_entries(read_saves(str(tmp_path)))


def test_nothing_is_written_over_another_save_without_replace(tmp_path):
    target = tmp_path / "ruffle"
    write_saves(saves(), str(target), "ruffle-desktop")
    changed = saves()
    changed[0] = players.Save(changed[0].key, (SAMPLES / "AS3-Null-Demo.sol").read_bytes(), "x")
    before = files_below(target)
    with pytest.raises(SaveError, match="is there with other bytes: nothing written"):
        write_saves(changed, str(target), "ruffle-desktop")
    assert files_below(target) == before
    states = write_saves(changed, str(target), "ruffle-desktop", replace=True)
    assert sorted(state for _, state in states) == ["same"] * 4 + ["written"]
    assert read_saves(str(target))[0].data in {s.data for s in changed}
    assert not [n for n in files_below(target) if n.endswith(".tmp")]


def test_a_symbolic_link_out_of_the_folder_is_not_followed(tmp_path):
    target = tmp_path / "ruffle" / "SharedObjects"
    outside = tmp_path / "outside"
    outside.mkdir()
    target.mkdir(parents=True)
    os.symlink(outside, target / "www.example.com")
    with pytest.raises(SaveError, match="www.example.com is a symbolic link .* nothing written"):
        write_saves(saves(), str(tmp_path / "ruffle"), "ruffle-desktop")
    assert os.listdir(outside) == []


def test_flash_with_several_profiles_asks_for_one(tmp_path):
    (tmp_path / "#SharedObjects" / "AAAAAAAA").mkdir(parents=True)
    (tmp_path / "#SharedObjects" / "BBBBBBBB").mkdir()
    with pytest.raises(SaveError, match="holds 2 Flash Player profiles"):
        write_saves(saves(), str(tmp_path), "flash")
    write_saves(saves(), str(tmp_path / "#SharedObjects" / "BBBBBBBB"), "flash")
    assert len(read_saves(str(tmp_path / "#SharedObjects" / "BBBBBBBB"))) == len(SAVES)


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", "not a JSON object"),
    ("{nope", "not JSON"),
])
def test_a_json_file_that_is_not_localstorage_entries(tmp_path, text, message):
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(SaveError, match=message):
        read_saves(str(path))


def test_what_is_not_a_save_is_named_and_left_out(tmp_path):
    root = tmp_path / "SharedObjects"
    (root / "h" / "g.swf").mkdir(parents=True)
    (root / "h" / "g.swf" / "junk.sol").write_bytes(b"not a sol")
    (root / "top.sol").write_bytes((SAMPLES / "AS3-Demo.sol").read_bytes())  # no site folder
    (root / "h" / "g.swf" / "ok.sol").write_bytes((SAMPLES / "AS3-Demo.sol").read_bytes())
    (root / "h" / "g.swf" / "readme.txt").write_text("ignored")
    problems: list[str] = []
    found = read_saves(str(tmp_path), problems=problems)
    assert [s.key for s in found] == [SaveKey("h", "g.swf", "ok")]
    assert len(problems) == 2 and any("junk.sol: not a .sol file" in p for p in problems)
    assert any("top.sol" in p and "not below a site's folder" in p for p in problems)


def test_a_scan_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(players, "MAX_SAVES", 3)
    source = make_ruffle_desktop(tmp_path)
    with pytest.raises(SaveError, match="more than 3"):
        read_saves(source)
    monkeypatch.setattr(players, "MAX_FILE", 20)
    monkeypatch.setattr(players, "MAX_SAVES", 100)
    problems: list[str] = []
    assert read_saves(source, problems=problems) == []
    assert all("more than the 20 a save may have" in p for p in problems) and len(problems) == len(SAVES)


def test_a_localstorage_key_that_climbs_out_is_left_out(tmp_path):
    sol_b64 = base64.b64encode((SAMPLES / "AS3-Demo.sol").read_bytes()).decode()
    path = tmp_path / "evil.json"
    path.write_text(json.dumps({
        "../../../../tmp/evil": sol_b64,
        "host/../../x": sol_b64,
        "host/a\\\\..\\\\b/x": sol_b64,
        "host/game.swf/ok": sol_b64,
    }))
    problems: list[str] = []
    found = read_saves(str(path), problems=problems)
    assert [s.key for s in found] == [SaveKey("host", "game.swf", "ok")] and len(problems) == 3
    target = tmp_path / "flash"
    write_saves(found, str(target), "flash")
    written = sorted(os.path.relpath(os.path.join(top, n), tmp_path) for top, _, names in os.walk(tmp_path) for n in names)
    assert len(written) == 2 and written[0] == "evil.json"
    assert written[1].startswith("flash") and written[1].endswith(os.path.join("host", "game.swf", "ok.sol"))


def test_a_sol_file_given_as_the_source_says_so(tmp_path):
    path = tmp_path / "one.sol"
    path.write_bytes((SAMPLES / "AS3-Demo.sol").read_bytes())
    with pytest.raises(SaveError, match="a .sol file, not a JSON file of localStorage entries"):
        read_saves(str(path))
