"""`amfkit encode`: write AMF bytes from JSON (docs/cli.md): a value in the JSON of
`amfkit.jsonio`, or a remoting packet's exact document (`amfkit.wire`, what `amfkit
decode --json` prints for a packet), which is written back to the bytes it was read
from."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .errors import CLIError, import_amfkit
from .files import input_name, read_input, write_output
from .options import version_flags

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Register `encode` on the subcommands `sub`."""
    enc = sub.add_parser(
        "encode",
        help="write AMF bytes from JSON",
        description=(
            "Read JSON (in the form `decode --json` prints) and write AMF bytes. A packet's "
            "JSON (with \"__packet__\") is written back to the very bytes it was read from; a "
            "value is AMF0 unless --amf3 is given."
        ),
    )
    enc.add_argument("file", metavar="FILE", help="the JSON file, or - for standard input")
    version_flags(enc)
    enc.add_argument("--json", action="store_true", help="the input is JSON (the default and only form)")
    enc.add_argument(
        "--all",
        action="store_true",
        help="the JSON is a list: write its items as a stream sharing one reference table",
    )
    enc.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="OUT",
        help="where to write (default -: standard output, refused if it is a terminal)",
    )
    enc.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`amfkit encode FILE ...`."""
    from ..jsonio import JSONInputError, from_json

    raw = read_input(args.file)
    amfkit = import_amfkit()
    try:
        doc = json.loads(raw)
    except RecursionError:
        raise CLIError(f"{input_name(args.file)}: JSON nested too deeply") from None
    except ValueError as e:
        raise CLIError(f"{input_name(args.file)}: not valid JSON: {e}") from None
    from .. import wire

    if wire.is_packet(doc):
        if args.all or args.version is not None:
            raise CLIError(f"{input_name(args.file)}: a packet's JSON goes with neither --all, --amf0 nor --amf3")
        try:
            data = wire.write(doc)
        except wire.DocumentError as e:
            raise CLIError(f"{input_name(args.file)}: {e}") from None
        write_output(args.output, data)
        return 0
    try:
        value = from_json(doc)
    except JSONInputError as e:
        raise CLIError(f"{input_name(args.file)}: {e}") from None
    module = amfkit.amf3 if args.version == 3 else amfkit.amf0
    try:
        if args.all:
            if not isinstance(value, list):
                raise CLIError(f"{input_name(args.file)}: --all needs a JSON list of values")
            data = module.Encoder().encode_all(value)
        else:
            data = module.encode(value)
    except amfkit.EncodeError as e:
        raise CLIError(f"{input_name(args.file)}: {e}") from None
    write_output(args.output, data)
    return 0
