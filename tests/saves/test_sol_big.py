"""Big saves, the quick form of tools/sol_big_bench.py (the full one is 10 MB and 200,000
values; docs/sol.md, "Big saves"): a 1 MB save of 20,000 values loads, takes one edit
and is written back byte for byte but for the edited value, faster than Py3AMF's
`pyamf.sol` in the same run and in bounded memory."""

from __future__ import annotations

import sys

from amfkit import sol

from repo import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import sol_big_bench  # noqa: E402

VALUES, SIZE = 20_000, 1_000_000


def test_a_big_save_round_trips_byte_for_byte():
    data = sol_big_bench.build_save(VALUES, SIZE)
    assert abs(len(data) - SIZE) < SIZE // 20
    assert sol.dumps(sol.loads(data)) == data
    assert sol.dumps(sol.loads(data, lossless=True)) == data
    index, path = sol_big_bench.edit_path(VALUES)
    save = sol.edit(data)
    old = save[path]
    save[path] = 100
    edited = save.dumps()
    assert len(edited) == len(data)
    assert [(a, b) for a, b in zip(data, edited) if a != b] == [(old, 100)]
    assert sol.loads(edited)["world"][index]["hp"] == 100


def test_the_quick_benchmark_runs_against_py3amf():
    result = sol_big_bench.run(VALUES, SIZE, repeat=3)  # the best of three: one slow start is noise
    assert result["values"] == VALUES and result["edit"] == "world[1000].hp"
    ours = result["results"]["amfkit sol.edit (lossless)"]
    plain = result["results"]["amfkit sol.load/dump"]
    py3amf = result["results"]["Py3AMF pyamf.sol"]
    for r in (ours, plain):
        assert r["bytes_differing"] == 1 and r["bytes_written"] == result["bytes"]
        # Both run in the same conditions, one after the other: the ratio holds under
        # load where the times do not (the full size's goal is 20x; docs/sol.md).
        assert r["x_faster_than_py3amf"] > 5, result
        # Memory: the input, its values and the output, not a multiple of them.
        assert r["peak_rss_growth_mb"] < 8 * result["bytes"] / 2**20 + 16, result
    assert py3amf["seconds"] > ours["seconds"]
