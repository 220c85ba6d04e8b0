"""Big saves, the quick form of `amfkit bench saves` (the full one is 10 MB and 200,000
values; docs/sol.md, "Big saves"): a 1 MB save of 20,000 values loads, takes one edit
and is written back byte for byte but for the edited value, faster than Py3AMF's
`pyamf.sol` in the same run and in bounded memory."""

from __future__ import annotations

from amfkit import sol
from amfkit_bench import saves

VALUES, SIZE = 20_000, 1_000_000


def test_a_big_save_round_trips_byte_for_byte():
    data = saves.build_save(VALUES, SIZE)
    assert abs(len(data) - SIZE) < SIZE // 20
    assert sol.dumps(sol.loads(data)) == data
    assert sol.dumps(sol.loads(data, lossless=True)) == data
    index, path = saves.edit_path(VALUES)
    save = sol.edit(data)
    old = save[path]
    save[path] = 100
    edited = save.dumps()
    assert len(edited) == len(data)
    assert [(a, b) for a, b in zip(data, edited) if a != b] == [(old, 100)]
    assert sol.loads(edited)["world"][index]["hp"] == 100


def test_the_quick_benchmark_runs_against_py3amf():
    # The median of three: one slow start is noise.
    options = saves.parse_options(["--values", str(VALUES), "--size", str(SIZE), "--repeat", "3", "--peers", "edit,load-dump,py3amf"])
    report = saves.run(options)
    assert report["ok"], report["results"]
    assert report["save"]["values"] == VALUES and report["save"]["edit"] == "world[1000].hp"
    rows = {row["peer"]: row for row in report["results"]}
    ours, plain, py3amf = rows["amfkit sol.edit (lossless)"], rows["amfkit sol.load/dump"], rows["Py3AMF pyamf.sol (pure Python)"]
    assert py3amf["codec"] == "pyamf.amf3"
    for r in (ours, plain):
        assert r["bytes_differing"] == 1 and r["bytes_written"] == report["save"]["bytes"]
        # Both run in the same conditions, one after the other: the ratio holds under
        # load where the times do not (the full size's goal is 20x; docs/sol.md).
        assert r["vs_py3amf"]["pure"] > 5, report
        # Memory: the input or the output beside the values read (about twice the
        # save in Python objects), 2.7x the save here; the writer copying its output
        # and every string it wrote took twice as much.
        assert r["peak_rss_growth_mb"] < 4 * report["save"]["bytes"] / 2**20 + 1, report
    assert py3amf["time"]["wall_ms"]["median"] > ours["time"]["wall_ms"]["median"]
