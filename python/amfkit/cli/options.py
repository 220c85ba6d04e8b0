"""What several commands share on their command lines: the program's name, the output
flags of the commands that print decoded values, and argument types."""

from __future__ import annotations

import argparse

__all__ = ["PROG", "positive_float", "positive_int", "tree_flags", "version_flags"]

PROG = "amfkit"


def tree_flags(p: argparse.ArgumentParser) -> None:
    """The output flags of the commands that print decoded values (decode, sol)."""
    p.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    p.add_argument("--compact", action="store_true", help="with --json: one line, no indent")
    p.add_argument(
        "--max-depth",
        type=positive_int,
        metavar="N",
        help="the decoder's nesting limit (default: the library's, 128)",
    )
    p.add_argument(
        "--max-string",
        type=positive_int,
        default=120,
        metavar="N",
        help="in the tree, cut strings after N characters (default 120; --json never cuts)",
    )


def version_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--amf0", dest="version", action="store_const", const=0, help="AMF0")
    g.add_argument("--amf3", dest="version", action="store_const", const=3, help="AMF3")


def positive_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not x > 0 or x == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return x


def positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n
