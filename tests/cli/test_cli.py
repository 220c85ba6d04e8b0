"""The front door: the `amfkit` command line, its tree printer and JSON form, detection,
`bench` dispatch, the version and the entry points. (The demo's tour is in
tests/demo/test_demo_tour.py; `make help`, the dev-dependency lists and the README's
examples in tests/test_project.py.)"""

from __future__ import annotations

import array
import datetime
import doctest
import json
import math
import re
import shutil
import subprocess
import sys
import types

import pytest

import amfkit
from amfkit import (
    XML,
    Date,
    Dictionary,
    MixedArray,
    ObjectKey,
    ObjectVector,
    TypedObject,
    Undefined,
    XMLDocument,
)
from amfkit.cli.main import main
from amfkit.framing import DetectError, attempts_for, decode_auto
from amfkit.jsonio import JSONInputError, dumps, loads
from amfkit.tree import render, render_stream, summary, type_name


def run_cli(python_exe, python_env, *args, stdin: bytes | None = None):
    return subprocess.run(
        [python_exe, "-m", "amfkit", *args],
        input=stdin,
        capture_output=True,
        env=python_env,
        timeout=60,
    )


def sample():
    ada: dict = {"name": "Ada", "roles": ["admin", "ops"]}
    team = TypedObject("com.example.Team", {"name": "Engines", "lead": ada})
    ada["team"] = team
    return {"teams": [team, team], "lead": ada, "n": 7, "x": 2.5}


# -- decode: the tree --------------------------------------------------------------------


def test_decode_prints_a_tree_with_amf3_type_names(tmp_path, capsys):
    f = tmp_path / "v.amf"
    f.write_bytes(amfkit.amf3.encode({"a": [1, 2.5, "x"], "b": None, "c": True}))
    assert main(["decode", str(f)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"# amf3 value, {f.stat().st_size} bytes"
    assert out[1:] == [
        "object (3 members)",
        "  a: array [3]",
        "    [0]: integer 1",
        "    [1]: double 2.5",
        "    [2]: string 'x'",
        "  b: null",
        "  c: boolean true",
    ]


def test_decode_detects_amf0(tmp_path, capsys):
    f = tmp_path / "v.amf"
    f.write_bytes(amfkit.amf0.encode({"a": [1, "x"]}))
    assert main(["decode", str(f)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# amf0 value,")
    assert "a: strict array [2]" in out
    assert "[0]: number 1" in out


def test_decode_detects_an_amf0_stream(tmp_path, capsys):
    f = tmp_path / "s.amf"
    f.write_bytes(amfkit.amf0.Encoder().encode_all(["connect", 1.5, None]))
    assert main(["decode", str(f)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# amf0 stream, 3 values,")
    assert out[1:] == ["[0]: string 'connect'", "[1]: number 1.5", "[2]: null"]


def test_decode_shows_shared_references_and_cycles_once(tmp_path, capsys):
    f = tmp_path / "g.amf"
    f.write_bytes(amfkit.amf3.encode(sample()))
    assert main(["decode", "--amf3", str(f)]) == 0
    out = capsys.readouterr().out
    assert "[0]: object 'com.example.Team' (2 members) #1" in out
    assert "[1]: <ref #1>" in out
    assert "team: <ref #1>" in out
    assert "lead: <ref #2>" in out
    assert out.count("Engines") == 1


def test_decode_reads_stdin(python_exe, python_env):
    data = amfkit.amf3.encode([1, "two"])
    r = run_cli(python_exe, python_env, "decode", "-", stdin=data)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines()[1:] == ["array [2]", "  [0]: integer 1", "  [1]: string 'two'"]
    assert r.stderr == b""


def test_decode_forced_version(tmp_path, capsys):
    f = tmp_path / "one.amf"
    f.write_bytes(b"\x01")  # AMF3 null; an AMF0 boolean cut short
    assert main(["decode", str(f)]) == 0
    assert capsys.readouterr().out.splitlines() == ["# amf3 value, 1 byte", "null"]
    assert main(["decode", "--amf0", str(f)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"amfkit decode: {f}: ")


def test_decode_all_prints_a_list(tmp_path, capsys):
    f = tmp_path / "s.amf"
    f.write_bytes(amfkit.amf3.Encoder().encode_all(["a", "a", 3]))
    assert main(["decode", "--amf3", "--all", "--json", "--compact", str(f)]) == 0
    assert json.loads(capsys.readouterr().out) == ["a", "a", 3]


def test_decode_errors_are_one_line_with_an_offset(tmp_path, capsys):
    f = tmp_path / "cut.amf"
    data = amfkit.amf0.encode({"key": "a longer string value"})
    f.write_bytes(data[:-5])
    assert main(["decode", str(f)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert "\n" not in err
    assert err.startswith(f"amfkit decode: {f}: ")
    assert "Traceback" not in err


def test_decode_missing_file(tmp_path, capsys):
    assert main(["decode", str(tmp_path / "nope.amf")]) == 1
    assert "No such file" in capsys.readouterr().err


def test_decode_empty_input(tmp_path, capsys):
    f = tmp_path / "empty.amf"
    f.write_bytes(b"")
    assert main(["decode", str(f)]) == 1
    assert "empty input" in capsys.readouterr().err
    assert main(["decode", "--all", "--json", str(f)]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_decode_max_depth_is_passed_to_the_decoder(tmp_path, capsys):
    nested: list = []
    cur = nested
    for _ in range(10):
        cur.append([])
        cur = cur[0]
    f = tmp_path / "deep.amf"
    f.write_bytes(amfkit.amf3.encode(nested))
    assert main(["decode", "--amf3", str(f)]) == 0
    capsys.readouterr()
    assert main(["decode", "--amf3", "--max-depth", "4", str(f)]) == 1
    assert "amfkit decode:" in capsys.readouterr().err


def test_decode_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["decode", "--amf0", "--amf3", "x"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["decode", "--max-depth", "0", "x"])
    assert e.value.code == 2
    assert main([]) == 2
    capsys.readouterr()


# -- decode --json and encode ------------------------------------------------------------


def test_json_output_of_every_special_type(tmp_path, capsys):
    value = {
        "bytes": b"\x00\xffAMF",
        "when": datetime.datetime(2024, 5, 17, 12, 30, 0, 250000),
        "undef": Undefined,
        "nan": math.nan,
        "inf": -math.inf,
        "xml": XML("<a/>"),
        "doc": XMLDocument("<b/>"),
        "typed": TypedObject("com.example.Point", {"x": 1, "y": 2}),
        "dict": Dictionary({1: "one", "two": 2}),
    }
    f = tmp_path / "v.amf"
    f.write_bytes(amfkit.amf3.encode(value))
    assert main(["decode", "--json", str(f)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["bytes"] == {"__bytes__": "AP9BTUY="}
    assert doc["when"] == {"__date__": "2024-05-17T12:30:00.250Z"}
    assert doc["undef"] is None
    assert doc["nan"] == {"__float__": "NaN"}
    assert doc["inf"] == {"__float__": "-Infinity"}
    assert doc["xml"] == {"__xml__": "<a/>"}
    assert doc["doc"] == {"__xmldocument__": "<b/>"}
    assert doc["typed"] == {"__alias__": "com.example.Point", "x": 1, "y": 2}
    assert doc["dict"] == {"__dictionary__": [[1, "one"], ["two", 2]]}


def test_json_marks_repeats_with_the_path_of_the_first_occurrence():
    doc = json.loads(dumps(sample()))
    assert doc["teams"][1] == {"__ref__": "$.teams[0]"}
    assert doc["lead"] == {"__ref__": "$.teams[0].lead"}
    assert doc["teams"][0]["lead"]["team"] == {"__ref__": "$.teams[0]"}


def test_json_round_trip_keeps_shared_references_and_cycles():
    back = loads(dumps(sample()))
    team = back["teams"][0]
    assert isinstance(team, TypedObject) and team.alias == "com.example.Team"
    assert back["teams"][1] is team
    assert back["lead"] is team["lead"]
    assert back["lead"]["team"] is team
    assert back["n"] == 7 and back["x"] == 2.5


def test_json_round_trip_of_special_values():
    value = {
        "b": b"\x01\x02",
        "d": datetime.datetime(1969, 12, 31, 23, 59, 59),
        "nan_date": Date(math.nan),
        "far": Date(8.64e15 + 1, tz=-60),
        "f": [math.inf, -math.inf],
        "x": XML("<x/>"),
        "xd": XMLDocument("<y/>"),
        "t": TypedObject("a.B", {"s": 1, "dyn": 2}, sealed=("s",), dynamic=True),
        "t2": TypedObject("a.C", {"s": 1}, sealed=("s",), dynamic=False),
        "weird key": {"": 1, "a.b": 2, "[0]": 3},
    }
    back = loads(dumps(value))
    assert back["b"] == b"\x01\x02"
    assert back["d"] == value["d"]
    assert back["nan_date"] == Date(math.nan)
    assert back["far"] == Date(8.64e15 + 1, tz=-60)
    assert back["f"] == [math.inf, -math.inf]
    assert type(back["x"]) is XML and type(back["xd"]) is XMLDocument
    assert back["t"].sealed == ("s",) and back["t"].dynamic
    assert back["t2"].sealed == ("s",) and not back["t2"].dynamic
    assert back["weird key"] == {"": 1, "a.b": 2, "[0]": 3}


def test_json_round_trip_gives_the_same_amf3_bytes_with_trait_references():
    shape = ("x", "y")
    points = [TypedObject("Point", {"x": i, "y": -i}, sealed=shape, dynamic=False) for i in range(3)]
    data = amfkit.amf3.encode(points)
    decoded = amfkit.amf3.decode(data)
    assert amfkit.amf3.encode(loads(dumps(decoded))) == data


def test_json_dictionary_with_object_keys_round_trips():
    key = {"id": 1}
    d = Dictionary(weak_keys=True)
    d[ObjectKey(key)] = "value"
    d["plain"] = key  # the key object shared as a value
    back = loads(dumps(d))
    assert isinstance(back, Dictionary) and back.weak_keys
    (k,) = [k for k in back if isinstance(k, ObjectKey)]
    assert k.value == {"id": 1}
    assert back["plain"] is k.value


def test_json_lossy_forms():
    doc = json.loads(
        dumps({"u": Undefined, "v": array.array("i", [1, 2]), "m": MixedArray({0: "a", "k": "b"}),
               "o": ObjectVector([1], type_name="T")})
    )
    assert doc == {"u": None, "v": [1, 2], "m": {"0": "a", "k": "b"}, "o": [1]}


def test_json_is_iterative_for_deep_values():
    deep: list = []
    cur = deep
    for _ in range(5000):
        cur.append([])
        cur = cur[0]
    text = dumps(deep, indent=None)
    assert text == "[" * 5001 + "]" * 5001
    assert len(render(deep).splitlines()) == 5001


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "not valid JSON"),
        ('{"__ref__": "$.nowhere"}', "names no container"),
        ('{"__bytes__": "***"}', "not valid base64"),
        ('{"__float__": "nan"}', "__float__ must be"),
        ('{"__date__": "yesterday"}', "not an ISO 8601 date"),
        ('{"__bytes__": "", "extra": 1}', "unexpected keys"),
        ('[{"__alias__": 5}]', "__alias__ must be a string, at $[0]"),
    ],
)
def test_json_input_errors_name_the_path(text, message):
    with pytest.raises(JSONInputError, match=re.escape(message)):
        loads(text)


@pytest.mark.parametrize("version", [0, 3])
def test_encode_from_json_matches_the_library(tmp_path, version):
    value = {"name": "Ada", "scores": [1, 2.5], "when": datetime.datetime(2024, 1, 2, 3, 4, 5)}
    src = tmp_path / "in.json"
    src.write_text(dumps(value), encoding="utf-8")
    out = tmp_path / "out.amf"
    assert main(["encode", f"--amf{version}", "--json", str(src), "-o", str(out)]) == 0
    module = amfkit.amf3 if version == 3 else amfkit.amf0
    assert out.read_bytes() == module.encode(value)


def test_encode_then_decode_round_trip_through_the_shell(python_exe, python_env):
    graph = sample()
    text = dumps(graph).encode()
    enc = run_cli(python_exe, python_env, "encode", "--amf3", "-", stdin=text)
    assert enc.returncode == 0, enc.stderr
    assert enc.stdout == amfkit.amf3.encode(loads(text))
    dec = run_cli(python_exe, python_env, "decode", "--json", "-", stdin=enc.stdout)
    assert dec.returncode == 0, dec.stderr
    assert json.loads(dec.stdout) == json.loads(text)


def test_encode_all_writes_a_stream(tmp_path):
    src = tmp_path / "in.json"
    src.write_text('["connect", 1, null]', encoding="utf-8")
    out = tmp_path / "out.amf"
    assert main(["encode", "--all", str(src), "-o", str(out)]) == 0
    assert out.read_bytes() == amfkit.amf0.Encoder().encode_all(["connect", 1, None])


def test_encode_errors(tmp_path, capsys):
    src = tmp_path / "bad.json"
    src.write_text('{"a": {"__ref__": "$.b"}}', encoding="utf-8")
    assert main(["encode", str(src), "-o", str(tmp_path / "o.amf")]) == 1
    assert "names no container" in capsys.readouterr().err
    src.write_text('{"a": 1}', encoding="utf-8")
    assert main(["encode", "--all", str(src), "-o", str(tmp_path / "o.amf")]) == 1
    assert "--all needs a JSON list" in capsys.readouterr().err


def test_encode_refuses_to_write_bytes_to_a_terminal(tmp_path, capsys, monkeypatch):
    src = tmp_path / "in.json"
    src.write_text("1", encoding="utf-8")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["encode", str(src)]) == 1
    assert "terminal" in capsys.readouterr().err


# -- detection ---------------------------------------------------------------------------


def test_detection_order():
    assert attempts_for(None, None) == [(0, False), (3, False), (0, True)]
    assert attempts_for(3, None) == [(3, False), (3, True)]
    assert attempts_for(None, True) == [(0, True), (3, True)]
    assert attempts_for(0, True) == [(0, True)]


def test_detection_reports_the_reading_that_got_furthest():
    data = amfkit.amf3.encode({"a": "b" * 40})[:-3]
    with pytest.raises(DetectError) as e:
        decode_auto(data)
    best = e.value.best
    assert best is not None
    label, err = best
    assert label == "one AMF3 value"
    assert isinstance(err, amfkit.DecodeError)
    assert e.value.offset == err.offset
    assert str(e.value).startswith(
        "cannot be read as one AMF0 value, one AMF3 value or a stream of AMF0 values; as one AMF3 value: "
    )


def test_detection_accepts_decoder_options():
    decoded = decode_auto(amfkit.amf3.encode([[1]]), version=3, max_depth=None)
    assert decoded.value == [[1]] and not decoded.stream and decoded.version == 3
    with pytest.raises(DetectError):
        decode_auto(amfkit.amf3.encode([[[1]]]), version=3, max_depth=2)


# -- the tree printer --------------------------------------------------------------------


def test_tree_cycle_through_a_list():
    a: list = [1]
    a.append(a)
    assert render(a).splitlines() == ["array [2] #1", "  [0]: integer 1", "  [1]: <ref #1>"]


def test_tree_tags_only_shared_containers():
    shared = {"k": 1}
    text = render({"x": shared, "y": shared, "z": {"k": 2}})
    assert text.splitlines() == [
        "object (3 members)",
        "  x: object (1 member) #1",
        "    k: integer 1",
        "  y: <ref #1>",
        "  z: object (1 member)",
        "    k: integer 2",
    ]


def test_tree_stream_shares_tags_across_values():
    shared = ["s"]
    lines = render_stream([shared, shared], version=0).splitlines()
    assert lines == ["[0]: strict array [1] #1", "  [0]: string 's'", "[1]: <ref #1>"]


def test_tree_type_names_per_version():
    assert type_name(1, 3) == "integer" and type_name(2**28, 3) == "double"
    assert type_name(1, 0) == "number"
    assert type_name("x" * 70000, 0) == "long string"
    assert type_name("é" * 40000, 0) == "long string"  # 80,000 UTF-8 bytes
    assert type_name("x" * 70000, 3) == "string"
    assert type_name(b"", 0) == "ByteArray (AMF3)"
    assert type_name(array.array("I"), 3) == "Vector.<uint>"
    assert type_name(array.array("d"), 3) == "Vector.<Number>"
    assert type_name(MixedArray(), 0) == "ECMA array"
    assert type_name(TypedObject("a"), 0) == "typed object"
    assert type_name({1: 2}, 3) == "Dictionary"
    assert type_name(Undefined) == "undefined"


def test_tree_cuts_long_values_and_shows_odd_keys():
    text = render({"s": "x" * 500, "b": bytes(100), "two words": 1, "": 2}, max_string=10)
    assert "  s: string 'xxxxxxxxxx'… (500 chars)" in text
    assert "  b: ByteArray [100] " + "00" * 32 + "…" in text
    assert "  'two words': integer 1" in text
    assert "  '': integer 2" in text


def test_tree_dictionary_with_object_keys():
    key = {"id": 1}
    d = Dictionary({ObjectKey(key): "v", 3: None})
    assert render(d).splitlines() == [
        "Dictionary (2 entries)",
        "  entry (an object key)",
        "    key: object (1 member)",
        "      id: integer 1",
        "    value: string 'v'",
        "  3 => null",
    ]


def test_tree_dates_and_registered_class_instances():
    class Point:
        def __init__(self, x, y):
            self.x, self.y = x, y

    amfkit.register_class(Point, "test.cli.Point")
    try:
        text = render([Point(1, 2), datetime.datetime(2000, 1, 1), Date(math.nan), Date(1e17, tz=60)])
    finally:
        amfkit.unregister_class(Point)
    assert "[0]: object 'test.cli.Point' (Point, 2 members)" in text
    assert "    x: integer 1" in text
    assert "[1]: date 2000-01-01T00:00:00Z" in text
    assert "[2]: date NaN" in text
    assert "[3]: date 100000000000000000 ms since 1970, tz +60 min" in text


def test_summary_is_one_short_line():
    assert summary({"a": 1}) == "object (1 member)"
    assert len(summary("y" * 500, width=40)) == 40


# -- bench dispatch, version, entry points ----------------------------------------------


def test_bench_dispatches_to_the_suite(monkeypatch):
    seen = []

    def fake_main(argv):
        seen.append(argv)
        return 0

    fake = types.ModuleType("amfkit_bench.codec")
    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "amfkit_bench.codec", fake)
    assert main(["bench", "codec", "--quick", "--size", "100"]) == 0
    assert seen == [["--quick", "--size", "100"]]


def test_bench_with_an_experiment_that_cannot_load_is_a_clean_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "amfkit_bench.codec", None)  # import fails
    assert main(["bench", "codec"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("amfkit bench: cannot load amfkit_bench.codec")


def test_the_command_line_does_not_import_the_lab(python_exe, python_env):
    """The lab (amfkit-bench) is imported by `amfkit bench` only: not by importing the
    command line, building its parser or printing its help."""
    code = (
        "import sys, contextlib, io\n"
        "from amfkit.cli.main import build_parser, main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try: main(['--help'])\n"
        "    except SystemExit: pass\n"
        "assert 'bench' in out.getvalue(), out.getvalue()\n"
        "print(sorted(m for m in sys.modules if m.startswith('amfkit_bench')))\n"
    )
    r = subprocess.run([python_exe, "-c", code], capture_output=True, env=python_env, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().strip() == "[]"


def test_bench_without_the_lab_installed_says_how_to_install_it(python_exe, python_env):
    """Without site-packages (`python -S`, the source tree's python/ on the path) amfkit
    is there and amfkit-bench is not: `amfkit bench` says in one line how to get it, and
    `amfkit --help` still lists the command."""
    for args in (["bench"], ["bench", "--list"], ["bench", "codec", "--quick"], ["bench", "--help"]):
        r = subprocess.run([python_exe, "-S", "-m", "amfkit", *args], capture_output=True, env=python_env, timeout=60)
        err = r.stderr.decode()
        assert r.returncode == 1, (args, r.stdout, err)
        assert err == "amfkit bench: the benchmark lab is not installed: pip install amfkit-bench (in a checkout of amfkit: make venv)\n"
    r = subprocess.run([python_exe, "-S", "-m", "amfkit", "--help"], capture_output=True, env=python_env, timeout=60)
    assert r.returncode == 0 and re.search(r"^\s+bench\s+run the benchmark experiments", r.stdout.decode(), re.M)


def test_bench_with_a_lab_that_cannot_import_names_why(monkeypatch, capsys):
    """amfkit-bench installed but one of its own imports failing is not "not installed"."""
    import amfkit_bench.runner  # noqa: F401  (the real lab: then make its runner fail)

    monkeypatch.delitem(sys.modules, "amfkit_bench.runner")
    monkeypatch.setitem(sys.modules, "amfkit_bench.model", None)
    assert main(["bench", "--list"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("amfkit bench: cannot load the benchmark lab: ") and "amfkit_bench.model" in err
    assert err.count("\n") == 1


def test_version(python_exe, python_env):
    r = run_cli(python_exe, python_env, "--version")
    assert r.returncode == 0
    assert r.stdout.decode().strip() == f"amfkit {amfkit.__version__}"


def test_console_script_and_module_entry_points(python_exe, python_env):
    r = subprocess.run(
        [python_exe, "-m", "amfkit.cli", "decode", "--help"], capture_output=True, env=python_env, timeout=60
    )
    assert r.returncode == 0 and b"--max-depth" in r.stdout
    script = shutil.which("amfkit", path=str(__import__("pathlib").Path(python_exe).parent))
    if script is None:
        pytest.skip("the amfkit console script is not installed next to this interpreter")
    r = subprocess.run([script, "--version"], capture_output=True, env=python_env, timeout=60)
    assert r.returncode == 0 and r.stdout.decode().startswith("amfkit ")


def test_decode_output_to_a_closed_pipe_is_quiet(python_exe, python_env, tmp_path):
    f = tmp_path / "big.amf"
    f.write_bytes(amfkit.amf3.encode(list(range(200_000))))
    p = subprocess.Popen(
        [python_exe, "-m", "amfkit", "decode", str(f)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=python_env,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(100)
    p.stdout.close()
    err = p.stderr.read()
    p.wait(timeout=60)
    p.stderr.close()
    assert b"Traceback" not in err


def test_the_old_module_names_still_import_the_same_objects():
    """The printers moved from amfkit.cli to the library (the capture tools print with
    them too); the old names are the same objects, for existing imports."""
    import amfkit.decodetext
    import amfkit.framing
    import amfkit.jsonio
    import amfkit.tree
    from amfkit.cli import detect, jsonio, packets, tree

    for old, new in ((tree, amfkit.tree), (jsonio, amfkit.jsonio), (packets, amfkit.decodetext), (detect, amfkit.framing)):
        assert old.__all__ and all(getattr(old, name) is getattr(new, name) for name in old.__all__), old.__name__


def test_tree_module_docstring_example():
    import amfkit.tree as tree

    result = doctest.testmod(tree, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_values_module_docstring_example():
    import amfkit._values as values

    result = doctest.testmod(values)
    assert result.failed == 0 and result.attempted > 0
