"""The input-forms benchmark (`amfkit bench forms`), run once in --quick mode through the
runner as a correctness test: a packet of 200 KB goes through every form `amfkit decode`
reads (detected as that form, taken off to the same bytes, read back whole), is timed,
and the largest body (2 MB here) is read through each in a child process of its own.
Its timings are not judged here."""

from __future__ import annotations

import contextlib
import io
import json

from amfkit.cli.main import main as cli_main
from amfkit_bench import forms, model


def test_quick_forms_benchmark(tmp_path):
    out = tmp_path / "results.json"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = cli_main(["bench", "forms", "--quick", "--json", str(out), "--quiet"])
    printed = stdout.getvalue()
    report = json.loads(out.read_text(encoding="utf-8"))["experiments"]["forms"]
    assert status == 0 and report["ok"], printed[-3000:]
    assert report["options"]["quick"] is True and report["options"]["repeat"] == 1
    assert report["packet"]["records"] > 2000 and abs(report["packet"]["bytes"] - forms.QUICK_SIZE) < forms.QUICK_SIZE // 10
    rows = {row["form"]: row for row in report["results"]}
    assert list(rows) == list(forms.FORMS)
    for name, row in rows.items():
        assert row["check"] is True, row
        assert row["read_as"].startswith(f"amf packet, version 3, 0 headers, 1 body, {report['packet']['bytes']} bytes")
        assert ("(from " in row["read_as"]) == (name != "raw"), row["read_as"]
        for step in ("detect", "read") + (("unwrap",) if name != "raw" else ()):
            wall = row[step]["wall_ms"]
            assert 0 < wall["min"] <= wall["median"] <= wall["max"], (name, step)
        big = row["largest"]
        assert big["check"] is True and big["same_bytes"] is True and big["records"] > 10_000, big
        assert abs(big["packet_bytes"] - forms.QUICK_LARGEST) < forms.QUICK_LARGEST // 10
        assert big["read_s"] > 0 and big["peak_reset"] is True and 0 <= big["peak_rss_growth_mb"] < big["peak_rss_mb"]
    assert rows["raw"]["unwrap"] is None
    assert rows["list"]["largest"]["input_bytes"] > 3 * rows["list"]["largest"]["packet_bytes"]
    assert "amfkit bench forms: A version-3 remoting packet of" in printed
    assert "summary: 1 experiment(s), every check passed" in printed

    [section] = forms.sections(report)
    assert [len(row) for row in section.tables[0].rows] == [len(section.tables[0].headers)] * len(forms.FORMS)
    assert [len(chart.bars) for chart in section.charts] == [len(forms.FORMS)] * 3
    assert section.findings[0].startswith("Detection costs at most ")
    json.dumps(model.to_dict(section))


def test_a_form_read_wrong_fails_its_check(monkeypatch):
    """A form whose text does not give the packet back is a failed check, not a figure."""
    monkeypatch.setitem(forms.FORMS, "hex", lambda d: d[:-1].hex(" ").encode())
    report = forms.run(forms.parse_options(["--quick", "--form", "hex", "--largest", "0"]))
    assert report["ok"] is False
    [row] = report["results"]
    assert row["check"] is False and "detect" not in row and "largest" not in row
    assert row["error"].startswith("PayloadError: (after taking off hex) cannot be read as an AMF packet")


def test_bad_options_are_refused(capsys):
    for argv, message in (
        (["--size", "lots"], "not a size: 'lots'"),
        (["--repeat", "0"], "--repeat must be at least 1"),
        (["--largest", "-1"], "--largest must be 0 or more"),
        (["--form", "rot13"], "invalid choice: 'rot13'"),
    ):
        try:
            forms.parse_options(argv)
        except SystemExit as exc:
            assert exc.code == 2
        else:
            raise AssertionError(f"{argv} was accepted")
        assert message in capsys.readouterr().err
