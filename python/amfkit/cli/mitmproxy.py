"""`amfkit mitmproxy-addon`: the path of amfkit's mitmproxy addon script, for
`mitmproxy -s "$(amfkit mitmproxy-addon)"` (docs/capture.md, "mitmproxy")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "addon_path"]


def addon_path() -> Path:
    """The addon script inside the installed package."""
    return Path(__file__).resolve().parent.parent / "capture" / "mitmproxy_addon.py"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "mitmproxy-addon",
        help="print the path of the mitmproxy addon (AMF content views and editing)",
        description=(
            'Print the path of amfkit\'s mitmproxy addon script: mitmproxy -s "$(amfkit mitmproxy-addon)". '
            "It shows application/x-amf bodies as amfkit decode does, and edits them (docs/capture.md)."
        ),
    )
    p.set_defaults(func=cmd_mitmproxy_addon)


def cmd_mitmproxy_addon(args: argparse.Namespace) -> int:
    print(addon_path())
    sys.stdout.flush()
    return 0
