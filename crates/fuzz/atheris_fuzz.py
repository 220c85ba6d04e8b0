"""Coverage-guided fuzzing of the Python-layer targets (tests/support/fuzz_targets.py)
with atheris, for `make fuzz-python`:

    python crates/fuzz/atheris_fuzz.py TARGET [libFuzzer options]

TARGET is one of amf0, amf3, packet, gateway, sol, nested, forms. The seeds of that target are written
to crates/fuzz/corpus/python-TARGET (ignored by git) and the run continues from that
corpus, so a second run starts where the first stopped. A failed promise or any other
exception is a crash: libFuzzer writes the input to crash-* in the working directory
and exits non-zero. amfkit's Python modules are instrumented for coverage; the Rust
extension is not (the cargo-fuzz targets in crates/fuzz cover the core).
"""

from __future__ import annotations

import pathlib
import sys

import atheris

HERE = pathlib.Path(__file__).resolve().parent  # crates/fuzz
# The targets are the tests' helpers (tests/codec/test_fuzz_python.py runs them too).
sys.path.insert(0, str(HERE.parent.parent / "tests" / "support"))

with atheris.instrument_imports(include=["amfkit"]):
    import amfkit  # noqa: F401
    import amfkit.remoting.gateway  # noqa: F401
    import amfkit.remoting.jsonrpc  # noqa: F401
    import amfkit.remoting.xmlrpc  # noqa: F401
    import amfkit.sol  # noqa: F401

import fuzz_targets  # noqa: E402


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in fuzz_targets.TARGETS:
        print(f"usage: {sys.argv[0]} {{{','.join(fuzz_targets.TARGETS)}}} [libFuzzer options]", file=sys.stderr)
        return 2
    name = sys.argv[1]
    fuzz_targets.setup()
    corpus = HERE / "corpus" / f"python-{name}"
    corpus.mkdir(parents=True, exist_ok=True)
    seeds = fuzz_targets.seeds()["packet" if name == "gateway" else name]
    for i, data in enumerate(seeds):
        if name == "gateway":
            data = b"\x00" + data  # the first byte picks the content type: AMF
        (corpus / f"seed-{i:04d}").write_bytes(data)
    atheris.Setup([sys.argv[0], *sys.argv[2:], str(corpus)], fuzz_targets.TARGETS[name])
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
