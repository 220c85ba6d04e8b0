"""The work `amfkit bench forms` runs for the largest body of each input form, in a child
process of its own: the input (a packet in one form) is read from its file, the peak
resident memory reset (`saves_work.reset_peak`: Linux), then `amfkit.payload.read` finds
and decodes the packet, timed; the figures printed as one line of JSON.

`forms.py` runs it as `python -m amfkit_bench.forms_work INPUT PACKET`: PACKET holds the
raw packet, read after the clock stopped to check that the same bytes were found.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .saves_work import timed


def measure(source: str, packet_path: str) -> dict[str, Any]:
    import amfkit.compression  # noqa: F401 - what payload.read imports on first use, before the clock
    import amfkit.framing  # noqa: F401
    import amfkit.remoting.packet  # noqa: F401
    from amfkit import forms, payload

    with open(source, "rb") as f:
        data = f.read()
    cap = max(forms.DEFAULT_MAX_SIZE, 2 * os.path.getsize(packet_path))  # a layer may make the whole packet
    found, figures = timed(lambda: payload.read(data, max_inflate=cap))
    with open(packet_path, "rb") as f:
        same = found.data == f.read()
    return {
        "input_bytes": len(data),
        "read": found.describe(),
        "same_bytes": same,
        "records": len(found.value.bodies[0].value) if found.kind == "packet" else None,
        **figures,
    }


def main(argv: list[str]) -> int:
    source, packet_path = argv
    print(json.dumps(measure(source, packet_path)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
