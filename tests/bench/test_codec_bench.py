"""The codec benchmark runs once, small, as a correctness test (its timings are not judged)."""

from __future__ import annotations

import gc
import importlib.util
import json

import pytest

import amfkit
import amfkit_bench
from amfkit_bench import codec, graphs, timing
from amfkit.compare import first_difference


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def test_quick_run_passes_every_correctness_check(tmp_path, capsys):
    out = tmp_path / "codec.json"
    status = codec.main(["--quick", "--size", "200", "--quiet", "--json", str(out)])
    printed = capsys.readouterr().out
    report = json.loads(out.read_text(encoding="utf-8"))

    failed = [(row["graph"], row["peer"], row["check"]["detail"]) for row in report["results"] if not row["check"]["ok"]]
    assert failed == []
    assert status == 0
    assert report["ok"] is True

    peers = {row["peer"] for row in report["results"]}
    expected = {"amfkit AMF3", "amfkit AMF0", "amfkit AMF3 fn", "amfkit AMF0 fn", "pickle 5"}
    if _installed("pyamf"):
        expected |= {"py3amf AMF3", "py3amf AMF0"}
    if _installed("orjson"):
        expected.add("orjson")
    if _installed("msgpack"):
        expected.add("msgpack")
    assert expected <= peers
    assert {row["graph"] for row in report["results"]} == set(graphs.GRAPH_NAMES)

    for row in report["results"]:
        assert row["size"] == 200
        assert row["bytes"] > 0 and row["bytes_gzip"] > 0
        for key in ("encode", "decode"):
            wall = row[key]["wall_ms"]
            assert 0 <= wall["min"] <= wall["median"] <= wall["max"]
            assert row[key]["repeat"] == 1
    for key in ("platform", "python", "cpu_count", "load_average", "versions"):
        assert key in report["machine"]

    assert "complex (200 items)" in printed
    assert "baseline" in printed


def test_run_leaves_the_class_registry_as_it_found_it():
    before = amfkit.registered_classes()
    codec.run(codec.Options(size=5, graphs=("complex", "static"), repeat=1, py3amf=_installed("pyamf")))
    assert amfkit.registered_classes() == before
    assert not hasattr(graphs.Score, "__amf__")


def test_unknown_graph_is_a_usage_error():
    with pytest.raises(SystemExit) as excinfo:
        codec.parse_options(["--graphs", "complex,nonsense"])
    assert excinfo.value.code == 2


def test_quick_options():
    options = codec.parse_options(["--quick", "--graphs", "complex,simple", "--no-py3amf", "--quiet"])
    assert options.size == codec.QUICK_SIZE
    assert options.repeat == 1
    assert options.graphs == ("complex", "simple")
    assert options.py3amf is False


# --------------------------------------------------------------------------- graphs


def test_complex_nodes_share_their_sub_object_and_the_string():
    nodes, plain = graphs.build_complex(3)
    assert len(nodes) == 3
    for i, node in enumerate(nodes):
        assert type(node) is graphs.Node
        assert node.child is node.again
        assert node.child.number == i
        assert node.shared is graphs.SHARED_STRING
        assert node.nothing is None
        assert isinstance(node.tags, list) and isinstance(node.attrs, dict)
        assert isinstance(node.number, int) and isinstance(node.ratio, float)
        assert not node.text.isascii()
    assert nodes[0].shared is nodes[2].shared
    assert nodes[0].child is not nodes[1].child

    first = plain[0]
    assert type(first) is dict
    assert first["child"] == first["again"] == {"number": 0}
    assert first["child"] is not first["again"]


def test_json_twin_has_the_same_data_without_classes_or_sharing():
    for name in graphs.GRAPH_NAMES:
        amf_graph, plain = graphs.build(name, 20)
        assert len(amf_graph) == len(plain) == 20
        assert first_difference(plain, json.loads(json.dumps(plain)), refs=False, exact=False) is None
        seen: set[int] = set()

        def walk(value):
            if isinstance(value, (dict, list)):
                assert id(value) not in seen, f"{name}: shared container in the JSON twin"
                seen.add(id(value))
                for item in value.values() if isinstance(value, dict) else value:
                    walk(item)
            else:
                assert isinstance(value, (type(None), bool, int, float, str)), f"{name}: {value!r}"

        walk(plain)


def test_static_and_reference_graphs():
    scores, _ = graphs.build_static(4)
    assert all(type(s) is graphs.Score for s in scores)
    assert set(vars(scores[0])) == set(graphs.CLASSES[graphs.Score].static)

    items, plain = graphs.build_reference(1000)
    assert len({id(item) for item in items}) == 5
    assert any(type(item) is graphs.Node for item in items)
    assert any(type(item) is dict for item in items)
    assert len({id(item) for item in plain}) == 1000


def test_the_codec_check_understands_typed_objects_and_references():
    """The codec experiment's check: `first_difference` by AMF meaning (`exact=False`)."""

    def same_graph(expected, actual, refs=True):
        return first_difference(expected, actual, refs=refs, exact=False)

    nodes, _ = graphs.build_complex(2)
    assert same_graph(nodes, nodes) is None

    copy = [graphs.Node(**{k: v for k, v in vars(n).items()}) for n in nodes]
    assert same_graph(nodes, copy) is None  # same children, shared the same way

    split = [graphs.Node(**vars(n)) for n in nodes]
    split[1].again = graphs.Node(number=1)
    assert "shared reference" in same_graph(nodes, split)
    assert same_graph(nodes, split, refs=False) is None

    merged = [graphs.Node(**vars(n)) for n in nodes]
    merged[1].child = merged[1].again = nodes[0].child
    assert same_graph(nodes, merged) is not None

    as_dicts = [dict(vars(n)) for n in nodes]
    assert "expected a Node instance" in same_graph(nodes, as_dicts)

    assert same_graph([1, 2.5], [1.0, 2.5]) is None  # AMF0 numbers are doubles
    assert same_graph([True], [1]) is not None
    assert same_graph({"a": "x"}, {"a": "y"}) == "$.a: expected 'x', got 'y'"


# --------------------------------------------------------------------------- method and registry


def test_measure_warms_up_repeats_and_restores_the_collector():
    calls = []
    assert gc.isenabled()
    result = timing.measure(lambda: calls.append(gc.isenabled()), repeat=3, warmup=2)
    assert len(calls) == 5
    assert calls[2:] == [False, False, False]  # the collector is off during timed calls
    assert gc.isenabled()
    assert result.repeat == 3 and result.warmup == 2
    assert 0 <= result.wall.min <= result.wall.median <= result.wall.max


def test_experiment_registry():
    assert "codec" in amfkit_bench.names()
    module = amfkit_bench.experiment("codec")
    for attr in ("NAME", "SUMMARY", "Options", "parse_options", "run", "format_report", "main"):
        assert hasattr(module, attr)
    with pytest.raises(KeyError):
        amfkit_bench.experiment("nonsense")


def test_amf0_sharing_past_its_reference_limit_is_checked_as_values():
    """AMF0 references are 16-bit: a graph with more than 65,536 objects has repeats past
    the limit written as copies. The check accepts exactly that, and only for AMF0."""
    from amfkit_bench import codec, graphs

    small, _ = graphs.build("complex", 100)
    big, _ = graphs.build("complex", 20_000)
    assert not codec._amf0_table_overflows(small) and codec._amf0_table_overflows(big)
    with codec._variants(codec.Options(size=100, graphs=("complex",), py3amf=False), {}, []) as variants:
        amf0 = next(v for v in variants if v.name == "amfkit AMF0")
        amf3 = next(v for v in variants if v.name == "amfkit AMF3")
        _, check = codec._check(amf0, big)
        assert check["ok"] and "65,535" in check["detail"]
        _, check = codec._check(amf3, big)
        assert check["ok"] and check["detail"] == ""


def test_cost_per_item_follows_each_peer_across_sizes():
    def row(graph, size, peer, enc_ms, dec_ms):
        timing = lambda ms: {"wall_ms": {"median": ms}}  # noqa: E731
        return {"graph": graph, "size": size, "peer": peer, "encode": timing(enc_ms), "decode": timing(dec_ms)}

    report = {
        "results": [
            row("complex", 1_000, "amfkit AMF3", 0.25, 0.8),
            row("complex", 1_000, "orjson", 0.3, 0.9),
            row("complex", 200_000, "amfkit AMF3", 50.0, 320.0),
            row("complex", 200_000, "orjson", 60.0, 180.0),
            row("complex", 200_000, "pickle 5", 1.0, 1.0),
        ]
    }
    table = codec.per_item_table(report)
    assert table.headers[-2:] == ["ns/item at 200,000", "200,000 vs 1,000"]
    assert table.rows == [
        ["complex", "amfkit AMF3", "encode", "250", "250", "1.00x"],
        ["complex", "amfkit AMF3", "decode", "800", "1,600", "2.00x"],
        ["complex", "orjson", "encode", "300", "300", "1.00x"],
        ["complex", "orjson", "decode", "900", "900", "1.00x"],
    ]
    assert codec.per_item_table({"results": report["results"][:2]}) is None
