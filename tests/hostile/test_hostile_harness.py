"""The harness itself: the child runs under its memory cap with amfkit imported, and a
case that aborts, hangs, exhausts memory or raises something other than DecodeError is
reported as such (so every other test in this package can fail), naming the input in hex,
while the cases after it still run in a fresh child."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from .harness import MEMORY_CAP, Case, expect_decode_error, run

CAP = """
import resource, sys
result = {"cap": resource.getrlimit(resource.RLIMIT_AS)[0], "amfkit": "amfkit._amfkit" in sys.modules}
"""


@functools.cache
def results() -> dict[str, Any]:
    cases = [
        Case("cap", "python", b"", {"snippet": CAP}),
        Case("abort", "python", b"\xde\xad", {"snippet": "import os\nos.abort()"}),
        Case("after-abort", "amf3", b"\x04\x01"),
        Case("memory", "python", b"", {"snippet": "x = bytearray(2 << 30)"}),
        Case("not-a-decode-error", "python", b"\xbe\xef", {"snippet": "raise KeyError('k')"}),
        Case("hang", "python", b"\xca\xfe", {"snippet": "import time\ntime.sleep(60)"}),
        Case("after-hang", "amf0", b"\x05"),
    ]
    return run(cases, timeout=3.0)


def test_the_child_runs_under_the_memory_cap_with_amfkit_imported() -> None:
    o = results()["cap"]
    assert o.status == "ok" and o.value == {"cap": MEMORY_CAP, "amfkit": True}, o.describe()


def test_a_crash_is_reported_and_the_next_case_runs() -> None:
    o = results()["abort"]
    assert o.status == "crash" and "hex dead" in o.describe(), o.describe()
    assert results()["after-abort"].status == "ok"


def test_exhausting_the_cap_is_an_error_not_a_dead_run() -> None:
    o = results()["memory"]
    assert o.status == "error" and o.type == "MemoryError", o.describe()


def test_a_hang_is_reported_and_the_next_case_runs() -> None:
    o = results()["hang"]
    assert o.status == "hang" and "hex cafe" in o.describe(), o.describe()
    assert results()["after-hang"].status == "ok"


def test_only_a_decode_error_passes_as_one() -> None:
    with pytest.raises(AssertionError, match="status error"):
        expect_decode_error(results()["not-a-decode-error"])
    with pytest.raises(AssertionError, match="status crash"):
        expect_decode_error(results()["abort"])
