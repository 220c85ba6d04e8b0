"""Input forms at size (the benchmark lab's packet, `amfkit_bench.forms.build_packet`;
`amfkit bench forms` times every form, tests/bench/test_forms_bench.py runs it): detection
looks at the start of a text form only (a hex text whose end is not hex is still called
hex; taking it off then says it is not)."""

from __future__ import annotations

import pytest

from amfkit import forms
from amfkit_bench.forms import build_packet


def test_detection_reads_the_start_of_a_text_form_only():
    body = build_packet(100_000)
    text = body.hex(" ").encode()
    spoiled = text + b" and then some prose"
    assert forms.detect(spoiled) == "hex"
    with pytest.raises(forms.FormError, match="not hex"):
        forms.unwrap(spoiled)
    assert forms.unwrap(text) == body
