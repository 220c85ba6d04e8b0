#!/usr/bin/env python3
"""Seed the fuzz corpora (crates/fuzz/corpus/<target>/, ignored by git) from fixtures/.

- amf0_value, amf3_value: every vector of fixtures/vectors.json (its file), by version,
  must-fail vectors included;
- packet: remoting packets built around those vectors (an AMF0 vector as a body value,
  an AMF3 vector behind the AVM+ switch, one packet with a header as well);
- sol: every fixtures/sol/*.sol, plus a .sol file per valid vector (AMF0 vectors in a
  version-0 file, AMF3 vectors in a version-3 file);
- roundtrip: all of the AMF0, AMF3 and .sol seeds.

Seeds are named after their vector, so rerunning only rewrites them; inputs the fuzzer
added (named by hash) are kept. Standard library only.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = HERE / "corpus"


def utf(s: bytes) -> bytes:
    return struct.pack(">H", len(s)) + s


def packet(version: int, headers: list[tuple[bytes, bytes]], bodies: list[tuple[bytes, bytes, bytes]]) -> bytes:
    out = struct.pack(">HH", version, len(headers))
    for name, value in headers:
        out += utf(name) + b"\x01" + struct.pack(">I", len(value)) + value
    out += struct.pack(">H", len(bodies))
    for target, response, value in bodies:
        out += utf(target) + utf(response) + struct.pack(">I", len(value)) + value
    return out


def sol(name: bytes, version: int, entries: list[tuple[bytes, bytes]]) -> bytes:
    """A .sol file: header, "TCSO", the name, the AMF version, then name/value/0x00."""
    body = b"TCSO" + b"\x00\x04\x00\x00\x00\x00" + utf(name) + struct.pack(">I", version)
    for key, value in entries:
        if version == 3:
            body += bytes([len(key) << 1 | 1]) + key + value + b"\x00"
        else:
            body += utf(key) + value + b"\x00"
    return b"\x00\xbf" + struct.pack(">I", len(body)) + body


def main() -> int:
    vectors = json.loads((FIXTURES / "vectors.json").read_text())
    seeds: dict[str, dict[str, bytes]] = {
        t: {} for t in ("amf0_value", "amf3_value", "packet", "sol", "roundtrip")
    }
    for vec in vectors:
        data = (FIXTURES / vec["file"]).read_bytes()
        version, valid = vec["version"], "error" not in vec
        name = f"amf{version}-{vec['name']}"
        single = valid and not vec.get("stream")
        if version == 0:
            seeds["amf0_value"][name] = data
            seeds["packet"][name] = packet(0, [], [(b"Echo.echo", b"/1", data)])
            if single:
                seeds["sol"][name] = sol(b"fuzz", 0, [(b"v", data)])
        else:
            seeds["amf3_value"][name] = data
            seeds["packet"][name] = packet(3, [], [(b"null", b"/1", b"\x11" + data)])
            if single:
                seeds["sol"][name] = sol(b"fuzz", 3, [(b"v", data)])
    seeds["packet"]["with-header"] = packet(
        3,
        [(b"Credentials", b"\x03\x00\x06userid\x02\x00\x01a\x00\x00\x09")],
        [(b"Echo.echo", b"/1", b"\x0a\x00\x00\x00\x01\x02\x00\x02hi"), (b"null", b"/2", b"\x11\x04\x05")],
    )
    seeds["packet"]["empty"] = packet(0, [], [])
    sol_dir = FIXTURES / "sol"
    for path in sorted(sol_dir.glob("*.sol")) if sol_dir.is_dir() else []:
        seeds["sol"]["file-" + path.stem] = path.read_bytes()
    for target in ("amf0_value", "amf3_value", "sol"):
        for name, data in seeds[target].items():
            seeds["roundtrip"][f"{target}-{name}"] = data

    for target, files in seeds.items():
        d = CORPUS / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (d / f"seed-{name}").write_bytes(data)
        print(f"corpus/{target}: {len(files)} seeds, {sum(1 for _ in d.iterdir())} inputs in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
