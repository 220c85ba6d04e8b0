"""`amfkit decode`: print the AMF in a file, in whatever form it came (docs/cli.md).

The input's form is taken off first (`amfkit.forms`: hex, base64, a byte list, zlib,
gzip, deflate, an HTTP message), then `amfkit.payload.read` tells a remoting packet
from one value or a stream of values. The text printed is `amfkit.decodetext`'s (a packet
part by part, a value as the tree of `amfkit.tree`); `--json` prints a packet's exact
document (`amfkit.wire`, which `amfkit encode` writes back to the same bytes) and a value
in the JSON of `amfkit.jsonio`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .errors import CLIError, import_amfkit
from .files import input_name, read_input
from .options import PROG, positive_int, tree_flags, version_flags

__all__ = ["FROM_CHOICES", "add_parser", "lenient_flags", "lenient_options", "run"]

#: What `--from` takes: `auto` (detect), or an input form of `amfkit.forms`.
FROM_CHOICES = ("auto", "raw", "hex", "base64", "list", "zlib", "gzip", "deflate", "http")


def add_parser(sub: Any) -> None:
    """Register `decode` on the subcommands `sub`."""
    dec = sub.add_parser(
        "decode",
        help="print an AMF file (a packet, a value or a stream; raw, hex, base64, zlib...) as a tree or JSON",
        description=(
            "Print the AMF in FILE as an indented tree naming the AMF types, or as JSON. "
            "The input may be raw, hex, base64, a decimal byte list, zlib/gzip/deflate or an "
            "HTTP message: its form is detected (--from names it). A remoting packet is "
            "recognised and printed header by header and body by body, Flex messages named; "
            "otherwise the readings are one AMF0 value, one AMF3 value, then a stream of AMF0 "
            "values, and the first that uses every byte wins. The first line names what was read."
        ),
    )
    dec.add_argument("file", metavar="FILE", help="the input file, or - for standard input")
    dec.add_argument(
        "--from",
        dest="from_form",
        choices=FROM_CHOICES,
        default="auto",
        metavar="FORM",
        help="the input's form: " + ", ".join(FROM_CHOICES) + " (default auto: detected; what it holds is detected in turn)",
    )
    dec.add_argument("--packet", action="store_true", help="read a remoting packet (and nothing else)")
    version_flags(dec)
    dec.add_argument(
        "--all",
        action="store_true",
        help="read a stream of values (several values back to back) and print them all",
    )
    tree_flags(dec)
    lenient_flags(dec)
    dec.set_defaults(func=run)


def lenient_flags(p: argparse.ArgumentParser) -> None:
    """The options for bytes others wrote (decode, diff)."""
    p.add_argument(
        "--max-inflate",
        type=positive_int,
        default=None,
        metavar="BYTES",
        help="the most bytes one layer of the input (inflated, or decoded from text) may make (default 64 MiB)",
    )
    p.add_argument(
        "--unknown-externalizable",
        choices=("error", "opaque"),
        default="error",
        help="an externalizable class amfkit cannot read: an error (the default), or its body kept "
        "opaque (the rest of its input: sound where the object ends it, docs/cli.md)",
    )
    p.add_argument(
        "--externalizable",
        action="append",
        default=[],
        metavar="CLASS=HOW",
        help="read CLASS's externalizable body as HOW: arraycollection (one Array), objectproxy "
        "(one object) or opaque (repeatable)",
    )


def lenient_options(args: argparse.Namespace) -> dict[str, Any]:
    """`amfkit.payload.read`'s options from the flags of `lenient_flags` and `tree_flags`."""
    from ..forms import DEFAULT_MAX_SIZE

    classes: dict[str, str] = {}
    for item in args.externalizable:
        name, sep, how = item.partition("=")
        if not sep or not name or how not in ("arraycollection", "objectproxy", "opaque"):
            raise CLIError(f"--externalizable {item!r}: give CLASS=arraycollection, CLASS=objectproxy or CLASS=opaque")
        classes[name] = how
    return {
        "max_inflate": args.max_inflate or DEFAULT_MAX_SIZE,
        "max_depth": getattr(args, "max_depth", None),
        "unknown_externalizable": args.unknown_externalizable,
        "externalizable": classes or None,
    }


def run(args: argparse.Namespace) -> int:
    """`amfkit decode FILE ...`."""
    data = read_input(args.file)
    amfkit = import_amfkit()
    from ..forms import FormError
    from ..payload import PayloadError, read

    if args.packet and (args.version is not None or args.all):
        raise CLIError("--packet reads a packet: it goes with neither --amf0, --amf3 nor --all")
    try:
        payload = read(
            data,
            form=args.from_form,
            packet=True if args.packet else (False if args.version is not None or args.all else None),
            version=args.version,
            stream=True if args.all else None,
            **lenient_options(args),
        )
    except (FormError, PayloadError) as e:
        raise CLIError(f"{input_name(args.file)}: {e}") from None
    for note in payload.notes:
        print(f"{PROG} decode: note: {note}", file=sys.stderr)
    out = sys.stdout
    if args.json:
        from ..jsonio import iter_json

        if payload.kind == "packet":
            try:
                value = payload.document()
            except amfkit.DecodeError as e:  # pragma: no cover - the two models read the same bytes
                raise CLIError(f"{input_name(args.file)}: {e}") from None
        else:
            value = payload.value
        for piece in iter_json(value, indent=None if args.compact else 2):
            out.write(piece)
        out.write("\n")
    else:
        from ..decodetext import iter_payload_lines

        for line in iter_payload_lines(payload, max_string=args.max_string):
            out.write(line + "\n")
    out.flush()
    return 0
