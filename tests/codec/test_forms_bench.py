"""Input forms at size, the quick form of tools/forms_bench.py (the full run measures a
1 MB packet and the largest bodies; figures in docs/cli.md, "Input forms"): a packet of
200 KB goes through every form and reads back whole, and detection looks at the start of
a text form only (a hex text whose end is not hex is still called hex; taking it off
then says it is not)."""

from __future__ import annotations

import sys

import pytest

from amfkit import forms
from repo import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import forms_bench  # noqa: E402


def test_a_packet_reads_back_whole_through_every_form():
    result = forms_bench.run(200_000, repeat=1)
    assert set(result["forms"]) == set(forms_bench.FORMS)
    records = {f["records"] for f in result["forms"].values()}
    assert len(records) == 1 and records.pop() > 2000
    for name, f in result["forms"].items():
        assert f["same_bytes"], name
        assert f["detected"] == name, name


def test_detection_reads_the_start_of_a_text_form_only():
    body = forms_bench.build_packet(100_000)
    text = body.hex(" ").encode()
    spoiled = text + b" and then some prose"
    assert forms.detect(spoiled) == "hex"
    with pytest.raises(forms.FormError, match="not hex"):
        forms.unwrap(spoiled)
    assert forms.unwrap(text) == body
