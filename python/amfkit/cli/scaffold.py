"""`amfkit scaffold CAPTURE... -o module.py`: a services module that answers the calls a
capture recorded, to edit by hand (docs/capture.md, "Scaffold")."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["add_parser", "cmd_scaffold"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "scaffold",
        help="write a services module answering the calls of captures (HAR, mitmproxy flows, pcap)",
        description=(
            "Write a Python module with one class per recorded service and one method per recorded "
            "target, returning the recorded results, a class registered for every typed object's alias, "
            "and a gateway at the bottom: amfkit serve MODULE:gateway serves it."
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="HAR, mitmproxy flow or pcap/pcapng files")
    p.add_argument("-o", "--output", metavar="MODULE.py", default="-", help="the module to write (default: standard output)")
    p.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
    p.set_defaults(func=cmd_scaffold)


def cmd_scaffold(args: argparse.Namespace) -> int:
    from .errors import CLIError, import_amfkit

    import_amfkit()
    from .. import capture
    from ..capture.scaffold import scaffold

    calls: list[Any] = []
    for path in args.files:
        try:
            found = capture.calls_of(capture.read(path))
        except capture.CaptureError as e:
            raise CLIError(str(e)) from None
        for problem in found.problems:
            print(f"amfkit scaffold: {problem}", file=sys.stderr)
        calls += found.calls
    if not any(c.answered and c.kind != "command" for c in calls):
        raise CLIError(f"no answered AMF call in {', '.join(args.files)}: nothing to scaffold")
    text = scaffold(calls, sources=[os.path.basename(f) for f in args.files])
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    if os.path.exists(args.output) and not args.force:
        raise CLIError(f"{args.output} exists (--force overwrites it)")
    try:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise CLIError(f"{args.output}: {e.strerror or e}") from None
    return 0
