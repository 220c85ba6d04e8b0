"""`amfkit diff A B`: where two AMF payloads differ (`amfkit.diff`), each read in its own
form; exit status 0 when they are the same, 1 when they differ, 2 for trouble (an input
that cannot be read, a usage error), as GNU diff does (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .decode import FROM_CHOICES, lenient_flags, lenient_options
from .errors import CLIError, import_amfkit
from .files import input_name, read_input
from .options import positive_int, version_flags

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Register `diff` on the subcommands `sub`."""
    p = sub.add_parser(
        "diff",
        help="compare two AMF payloads (packets, values or streams, in any input form)",
        description=(
            "Print the paths where the AMF in A and in B differ, with what each holds there: "
            "types (an ECMA array vs a strict array), traits (sealed vs dynamic members), "
            "references vs inline copies, values. Each input is read in its own form (raw, hex, "
            "base64, a byte list, zlib/gzip/deflate, an HTTP message) as decode reads it. Exit "
            "status 0 when they are the same, 1 when they differ, 2 for trouble (an input that "
            "cannot be read)."
        ),
    )
    p.add_argument("a", metavar="A", help="the first input file, or - for standard input")
    p.add_argument("b", metavar="B", help="the second input file, or - for standard input")
    p.add_argument(
        "--from",
        dest="from_form",
        choices=FROM_CHOICES,
        default="auto",
        metavar="FORM",
        help="the form of both inputs (default auto: each detected)",
    )
    p.add_argument("--packet", action="store_true", help="read both as remoting packets")
    version_flags(p)
    p.add_argument("--all", action="store_true", help="read both as streams of values")
    p.add_argument("--json", action="store_true", help="print the differences as JSON")
    p.add_argument(
        "--max-differences",
        type=positive_int,
        default=None,
        metavar="N",
        help="list at most N differences (default 1000; the rest are counted)",
    )
    p.add_argument(
        "--max-depth",
        type=positive_int,
        metavar="N",
        help="the decoder's nesting limit (default: the library's, 128)",
    )
    lenient_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`amfkit diff A B ...`: 0 when the same, 1 when they differ; trouble is a
    `CLIError` with status 2 (1 would say "they differ")."""
    try:
        return _run(args)
    except CLIError as e:
        raise CLIError(str(e), status=2) from None


def _run(args: argparse.Namespace) -> int:
    if args.a == "-" and args.b == "-":
        raise CLIError("only one of A and B can be standard input")
    data_a, data_b = read_input(args.a), read_input(args.b)
    import_amfkit()
    from ..differences import MAX_DIFFERENCES, diff_documents, read_document
    from ..forms import FormError
    from ..payload import PayloadError

    if args.packet and (args.version is not None or args.all):
        raise CLIError("--packet reads packets: it goes with neither --amf0, --amf3 nor --all")
    options = {
        "form": args.from_form,
        "packet": True if args.packet else (False if args.version is not None or args.all else None),
        "version": args.version,
        "stream": True if args.all else None,
        **lenient_options(args),
    }
    docs = []
    for name, data in ((args.a, data_a), (args.b, data_b)):
        try:
            docs.append(read_document(data, **options))
        except (FormError, PayloadError) as e:
            raise CLIError(f"{input_name(name)}: {e}") from None
    (form_a, doc_a, what_a), (form_b, doc_b, what_b) = docs
    out = sys.stdout
    if form_a != form_b:
        from ..differences import Difference

        found = [Difference("$", "form", what_a, what_b)]
    else:
        found = diff_documents(doc_a, doc_b, form=form_a, max_differences=args.max_differences or MAX_DIFFERENCES)
    if args.json:
        import json

        report = {
            "same": not found,
            "a": {"file": input_name(args.a), "read": what_a},
            "b": {"file": input_name(args.b), "read": what_b},
            "differences": [d.as_dict() for d in found],
        }
        out.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(f"# A: {input_name(args.a)}: {what_a}\n# B: {input_name(args.b)}: {what_b}\n")
        for d in found:
            out.write(f"{d}\n")
        n = len(found)
        out.write("# the same\n" if not n else f"# {n} difference{'' if n == 1 else 's'}\n")
    out.flush()
    return 1 if found else 0
