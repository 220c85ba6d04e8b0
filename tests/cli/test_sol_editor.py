"""`amfkit sol` as a save editor: --get, --set, --delete, -o; everything not changed is
written back byte for byte; errors are one line."""

from __future__ import annotations

import json

import pytest

from amfkit import MixedArray, sol
from amfkit.cli import valuepath
from amfkit.cli.main import main

from repo import FIXTURES

DEMO = FIXTURES / "sol" / "samples" / "AS3-Demo.sol"
AS2 = FIXTURES / "sol" / "samples" / "AS2-Demo.sol"


def run(capsys, *args):
    status = main(["sol", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def test_get_prints_one_value_as_json(capsys):
    status, out, _ = run(capsys, DEMO, "--get", "myObject.p4.prop")
    assert status == 0 and json.loads(out) == "val"
    status, out, _ = run(capsys, DEMO, "--get", "myIntArray[1]", "--compact")
    assert (status, out) == (0, "2\n")
    status, out, _ = run(capsys, DEMO, "--get", "myObject", "--compact")
    assert json.loads(out)["p5"] == {"__date__": "2014-07-30T00:40:30.523Z"}


def test_set_changes_only_the_bytes_of_the_value(capsys, tmp_path):
    out_path = tmp_path / "out.sol"
    status, _, err = run(capsys, DEMO, "--set", "myInt=8", "--set", "myObject.p1=6", "-o", out_path)
    assert (status, err) == (0, "")
    before, after = DEMO.read_bytes(), out_path.read_bytes()
    assert len(before) == len(after)
    assert [(a, b) for a, b in zip(before, after) if a != b] == [(7, 8), (5, 6)]
    edited = sol.load(out_path)
    assert edited["myInt"] == 8 and edited["myObject"]["p1"] == 6


def test_set_keeps_a_number_s_kind_and_adds_members(capsys, tmp_path):
    out_path = tmp_path / "out.sol"
    assert run(capsys, DEMO, "--set", "myFloat=3", "--set", 'player={"gold": 9999, "name": "Ada"}', "-o", out_path)[0] == 0
    edited = sol.load(out_path)
    assert edited["myFloat"] == 3.0 and type(edited["myFloat"]) is float
    assert edited["player"] == {"gold": 9999, "name": "Ada"}


def test_delete_and_writing_back_over_the_file(capsys, tmp_path):
    path = tmp_path / "save.sol"
    path.write_bytes(DEMO.read_bytes())
    assert run(capsys, path, "--delete", "myString", "-o", path)[0] == 0
    assert "myString" not in sol.load(path)
    assert sol.load(path)["myInt"] == 7


def test_an_amf0_save_edits_too(capsys, tmp_path):
    shared = sol.loads(AS2.read_bytes())
    arrays = [k for k, v in shared.items() if isinstance(v, MixedArray)]
    out_path = tmp_path / "out.sol"
    key = next(k for k, v in shared.items() if isinstance(v, float) and v == v)
    assert run(capsys, AS2, "--set", f"{valuepath.text([key])}=12", "-o", out_path)[0] == 0
    edited = sol.load(out_path)
    assert edited[key] == 12.0
    for k in arrays:  # what the edit did not touch keeps the count Flash Player wrote
        assert edited[k].length == shared[k].length


@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", "myObject.nope.x=1", "-o", "X"], "--set: no member 'nope' in myObject"),
        (["--set", "myInt=abc", "-o", "X"], "the value is not JSON"),
        (["--set", "myInt=8"], "give -o OUT"),
        (["-o", "X"], "-o is for --set and --delete"),
        (["--get", "myIntArray[7]"], "index 7 is out of range in myIntArray (it has 3 items)"),
        (["--get", "myInt.x"], "myInt is an int, which has no members"),
        (["--get", "myIntArray.x"], "myIntArray is a list: use an index"),
        (["--get", "a[0"], "is not closed"),
        (["--get", ""], "the path is empty"),
        (["--delete", "nothing", "-o", "X"], "--delete: no member 'nothing' in the top level"),
        (["--get", "myInt", "--set", "myInt=1", "-o", "X"], "cannot be combined"),
    ],
)
def test_errors_are_one_clear_line(capsys, tmp_path, args, message):
    args = [str(tmp_path / a) if a == "X" else a for a in args]
    status, out, err = run(capsys, DEMO, *args)
    assert status == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("amfkit sol: ") and message in err, err
    assert not (tmp_path / "X").exists()


def test_a_corrupt_file_is_refused_in_one_line(capsys, tmp_path):
    status, _, err = run(capsys, FIXTURES / "sol" / "samples" / "2.sol", "--set", "a=1", "-o", tmp_path / "x.sol")
    assert status == 1 and "sealed member count 19 exceeds" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "path, steps",
    [
        ("player.gold", ["player", "gold"]),
        ("items[0].name", ["items", 0, "name"]),
        ('scores["high score"]', ["scores", "high score"]),
        ('a["x.y=z"].b', ["a", "x.y=z", "b"]),
        ("scores.15", ["scores", "15"]),
        ("$odd_name", ["$odd_name"]),
    ],
)
def test_paths(path, steps):
    assert valuepath.parse(path) == steps
    assert valuepath.parse(valuepath.text(steps)) == steps


def test_an_assignment_splits_after_its_path():
    assert valuepath.parse_assignment('a["k=v"]={"x": "=1"}') == (["a", "k=v"], '{"x": "=1"}')
    root = {"scores": MixedArray({3: 10, 14: 20}, length=15)}
    assert valuepath.get(root, ["scores", "14"]) == 20  # digits reach an int key too
    valuepath.set_value(root, ["scores", "3"], 11)
    assert root["scores"][3] == 11 and root["scores"].length == 15
