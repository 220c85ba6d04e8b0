"""A short tour of amfkit (`make demo`, or `python -m amfkit.demo [FIXTURES_DIR]`).

1. Round-trips a sample graph (a cycle, a shared typed object, a date, bytes, `Undefined`)
   through AMF0 and AMF3: prints the sizes, whether each decoded graph equals the original
   (shared references and cycles included), and the decoded AMF3 graph as a tree.
2. Decodes every `*.amf` file under `fixtures/` (recursively) and prints a line each, in
   the version and framing `fixtures/vectors.json` gives (a file it marks invalid must be
   rejected), else the way `amfkit decode` reads it (`amfkit.framing`).

Exit status 0; 1 if a round trip differs or a fixture does not behave as its manifest says.
"""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import amfkit
from amfkit import TypedObject, Undefined
from amfkit.compare import first_difference
from amfkit.framing import Decoded, DetectError, decode_auto
from amfkit.tree import render, summary

__all__ = ["main", "sample_graph"]


def sample_graph() -> dict[str, Any]:
    """A small graph that exercises references: a cycle and a shared typed object."""
    ada = {"name": "Ada Lovelace", "roles": ["admin", "ops"], "active": True}
    team = TypedObject("com.example.Team", {"name": "Engines", "lead": ada, "size": 3})
    ada["team"] = team  # a cycle: ada -> team -> ada
    return {
        "teams": [team, team],  # the same object twice: written once, then referenced
        "lead": ada,
        "created": datetime.datetime(2024, 5, 17, 12, 30, 0),
        "ratio": 2.5,
        "count": 42,
        "big": 2**40,  # beyond AMF3's 29-bit integers: written as a double
        "greeting": "héllo, wörld",
        "blob": b"\x00\x01\x02AMF",
        "nothing": None,
        "missing": Undefined,
    }


def round_trip(out=sys.stdout) -> bool:
    graph = sample_graph()
    ok = True
    decoded3 = None
    print("sample graph: a cycle, a typed object shared twice, a date, bytes, Undefined", file=out)
    for name, module in (("AMF0", amfkit.amf0), ("AMF3", amfkit.amf3)):
        data = module.encode(graph)
        back = module.decode(data)
        problem = first_difference(graph, back, exact=False)  # AMF0 numbers are doubles
        ok = ok and problem is None
        verdict = "yes" if problem is None else f"NO ({problem})"
        print(f"  {name}: {len(data):4d} bytes, round trip equal: {verdict}", file=out)
        if module is amfkit.amf3:
            decoded3 = back
    print("decoded from AMF3:", file=out)
    for line in render(decoded3, version=3).splitlines():
        print("  " + line, file=out)
    return ok


def _manifest(root: Path) -> dict[str, dict[str, Any]]:
    path = root / "vectors.json"
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out = {}
    for e in entries if isinstance(entries, list) else ():
        if isinstance(e, dict) and isinstance(e.get("file"), str):
            out[e["file"]] = e
    return out


def decode_fixtures(root: Path, out=sys.stdout) -> bool:
    files = sorted(p for p in root.rglob("*.amf") if p.is_file()) if root.is_dir() else []
    if not files:
        print(f"no .amf files under {root}", file=out)
        return True
    manifest = _manifest(root)
    print(f"{len(files)} .amf files under {_shown(root)}:", file=out)
    width = min(max(len(p.relative_to(root).as_posix()) for p in files), 48)
    counts = {"decoded": 0, "rejected": 0, "unexpected": 0}
    for path in files:
        rel = path.relative_to(root).as_posix()
        entry = manifest.get(rel, {})
        version = entry.get("version") if entry.get("version") in (0, 3) else None
        stream = True if entry.get("stream") else (False if version is not None else None)
        expect_error = "error" in entry
        data = path.read_bytes()
        try:
            decoded: Decoded = decode_auto(data, version=version, stream=stream)
        except DetectError as e:
            if expect_error:
                counts["rejected"] += 1
                verdict = "rejected as expected:"
            else:
                counts["unexpected"] += 1 if entry else 0
                counts["rejected"] += 0 if entry else 1
                verdict = "UNEXPECTED error:" if entry else "does not decode:"
            print(f"  {rel:<{width}}  {verdict} {_cut(str(e), 90)}", file=out)
            continue
        if expect_error:
            counts["unexpected"] += 1
            print(f"  {rel:<{width}}  UNEXPECTED: decoded, but should fail ({entry['error']})", file=out)
            continue
        counts["decoded"] += 1
        what = decoded.describe()
        value = decoded.value
        shown = summary(value, version=decoded.version, width=60)
        print(f"  {rel:<{width}}  {what:<26}  {shown}", file=out)
    print(
        f"{counts['decoded']} decoded, {counts['rejected']} rejected"
        + (f", {counts['unexpected']} UNEXPECTED" if counts["unexpected"] else ""),
        file=out,
    )
    return counts["unexpected"] == 0


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve())) + "/"
    except ValueError:
        return str(path)


def _default_fixtures() -> Path:
    here = Path.cwd() / "fixtures"
    if here.is_dir():
        return here
    # A source checkout: python/amfkit/demo/tour.py -> fixtures/ at the repository root.
    return Path(__file__).resolve().parents[3] / "fixtures"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    root = Path(args[0]) if args else _default_fixtures()
    print(f"amfkit {amfkit.__version__} demo\n")
    ok = round_trip()
    print()
    ok = decode_fixtures(root) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
