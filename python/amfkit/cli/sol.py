"""`amfkit sol`: print and edit a .sol file, list the saves of a player's folder, and move
saves between Flash Player, Ruffle desktop and Ruffle web (docs/cli.md, docs/sol.md).

    amfkit sol FILE [--json] [--get PATH | --set PATH=JSON ... --delete PATH ... -o OUT]
    amfkit sol ls SOURCE [--from FORMAT] [--json]
    amfkit sol export SOURCE --to FORMAT -o OUT [--from FORMAT] [--replace]
    amfkit sol import SOURCE --to FORMAT -o OUT [--from FORMAT] [--replace]

A PATH may step into a member's nested data with `|zlib`, `|deflate`, `|gzip`,
`|base64`, `|amf3` and `|amf0` (`SDAT|zlib|amf3.player.gold`). FORMAT is `flash`,
`ruffle-desktop` or `ruffle-web` (a JSON object of localStorage entries). `export` and
`import` are one conversion, named for its usual direction. A file named like an action
is given as `./ls`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from .._text import MAX_SHOWN, clip, shown
from .errors import CLIError, import_amfkit
from .files import input_name, read_input, write_output
from .options import PROG, tree_flags

__all__ = ["ACTIONS", "add_parser", "run"]

ACTIONS = ("ls", "export", "import")


def add_parser(sub: Any, func: Any) -> None:
    """Register `sol` on the top-level subparsers `sub` (for `amfkit --help`); `run`
    parses its own arguments."""
    p = sub.add_parser(
        "sol",
        help="print or edit a .sol file; list and convert the saves of Flash Player and Ruffle",
        description="amfkit sol FILE ... | amfkit sol ls|export|import ... (`amfkit sol --help` tells more)",
        add_help=False,
    )
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
    p.set_defaults(func=func)


def run(argv: Sequence[str]) -> int:
    """`amfkit sol ARGS`: the exit status (CLIError for a failure, as every command)."""
    argv = list(argv)
    if argv[:1] and argv[0] in ACTIONS:
        parser = _action_parser(argv[0])
        args = parser.parse_args(argv[1:])
        return int(args.func(args))
    args = _file_parser().parse_args(argv)
    return _cmd_file(args)


# -- the parsers -------------------------------------------------------------------------


def _file_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} sol",
        description=(
            "Print the .sol file's name and AMF version, then its members as the tree "
            "`amfkit decode` prints (one reference table spans the members, so a value "
            "stored under two names shows as #n and <ref #n>). With --json: an object "
            "holding name, amf_version and values. --get prints one value as JSON; "
            "--set and --delete edit the file and write it to -o OUT, everything not "
            "changed byte for byte as it was. PATH: member names joined by dots, list "
            "items as [n], other names quoted in brackets: player.gold, items[0].name, "
            'scores["high score"]; |zlib, |deflate, |gzip, |base64, |amf3 and |amf0 step '
            "into a member's nested data: 'SDAT|zlib|amf3.player.gold', each layer written "
            'back the way it was (docs/sol.md, "Editing saves").'
        ),
        epilog=(
            "Saves of a player: `amfkit sol ls SOURCE`, `amfkit sol export SOURCE --to FORMAT -o OUT`, "
            "`amfkit sol import SOURCE --to FORMAT -o OUT` (FORMAT: flash, ruffle-desktop, ruffle-web; "
            "`amfkit sol ls --help`). A file named like one of these actions is given as ./ls."
        ),
    )
    p.add_argument("file", metavar="FILE", help="the .sol file, or - for standard input")
    tree_flags(p)
    p.add_argument("--get", metavar="PATH", help="print the value at PATH as JSON")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=JSON",
        help="put the JSON value at PATH (repeatable; JSON as `amfkit decode --json` prints it)",
    )
    p.add_argument("--delete", action="append", default=[], metavar="PATH", help="remove the member at PATH (repeatable)")
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="with --set/--delete: where to write the edited file (- for standard output; may be FILE itself)",
    )
    return p


def _action_parser(action: str) -> argparse.ArgumentParser:
    from ..players import FORMATS

    if action == "ls":
        p = argparse.ArgumentParser(
            prog=f"{PROG} sol ls",
            description=(
                "List the saves at SOURCE by site and SWF, with their sizes, AMF versions and "
                "top-level member names. SOURCE: a Flash Player folder (its #SharedObjects, a "
                "folder holding it, or one of its profile folders), Ruffle desktop's folder "
                "(SharedObjects, or the ruffle folder holding it), or a JSON file of Ruffle web's "
                "localStorage entries."
            ),
        )
        p.add_argument("source", metavar="SOURCE")
        p.add_argument("--from", dest="from_format", choices=FORMATS, help="SOURCE's format (default: told from SOURCE)")
        p.add_argument("--json", action="store_true", help="print a JSON list instead")
        p.set_defaults(func=_cmd_ls)
        return p
    verb = "export" if action == "export" else "import"
    p = argparse.ArgumentParser(
        prog=f"{PROG} sol {verb}",
        description=(
            "Copy every save at SOURCE (as `amfkit sol ls` reads it) into the place FORMAT's player "
            "keeps it, under the names it expects, the .sol bytes unchanged: flash (OUT: "
            "#SharedObjects, the folder holding it, or a profile folder; a profile folder is made "
            "when there is none), ruffle-desktop (OUT: Ruffle's SharedObjects folder, or the folder "
            "holding it), ruffle-web (OUT: a JSON file of localStorage entries, - for standard "
            "output; docs/sol.md has the one-line console snippets that import it into a page and "
            "export it from one). A file there with other bytes is not written over without --replace."
        ),
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--to", required=True, choices=FORMATS, help="the player whose place is written")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the folder (flash, ruffle-desktop) or JSON file (ruffle-web)")
    p.add_argument("--from", dest="from_format", choices=FORMATS, help="SOURCE's format (default: told from SOURCE)")
    p.add_argument("--replace", action="store_true", help="write over a save that is there with other bytes")
    p.set_defaults(func=_cmd_convert)
    return p


# -- FILE: print and edit --------------------------------------------------------------


def _cmd_file(args: argparse.Namespace) -> int:
    editing = bool(args.set or args.delete)
    if editing and args.output is None:
        raise CLIError("--set and --delete write a new file: give -o OUT (- for standard output)")
    if args.output is not None and not editing:
        raise CLIError("-o is for --set and --delete")
    if args.get is not None and editing:
        raise CLIError("--get cannot be combined with --set or --delete")
    data = read_input(args.file)
    amfkit = import_amfkit()
    from ..soledit import SaveEditor

    options: dict[str, Any] = {} if args.max_depth is None else {"max_depth": args.max_depth}
    try:
        save = SaveEditor(data, **options)
    except amfkit.DecodeError as e:
        raise CLIError(f"{input_name(args.file)}: {e}") from None
    if args.get is not None:
        return _get(save, args)
    if editing:
        _edit(save, args)
        try:
            edited = save.dumps()
        except (amfkit.EncodeError, ValueError) as e:
            raise CLIError(f"cannot write the edited file: {e}") from None
        write_output(args.output, edited)
        return 0
    shared = save.sol
    out = sys.stdout
    if args.json:
        from ..jsonio import iter_json

        doc = {"name": shared.name, "amf_version": shared.amf_version, "values": dict(shared)}
        for piece in iter_json(doc, indent=None if args.compact else 2):
            out.write(piece)
        out.write("\n")
    else:
        from ..tree import _lines

        n = len(shared)
        out.write(
            f"# sol {shown(shared.name)}, amf{shared.amf_version}, {n} member{'' if n == 1 else 's'}, "
            f"{len(data)} byte{'' if len(data) == 1 else 's'}\n"
        )
        # The members are the roots of one tree walk, so that tags span them.
        for line in _lines(list(shared.items()), shared.amf_version, args.max_string, 32):
            out.write(line + "\n")
    out.flush()
    return 0


def _get(save: Any, args: argparse.Namespace) -> int:
    from .. import nested, valuepath
    from ..jsonio import iter_json

    try:
        value = save.get(args.get)
    except (valuepath.PathError, nested.LayerError) as e:
        raise CLIError(str(e)) from None
    for piece in iter_json(value, indent=None if args.compact else 2):
        sys.stdout.write(piece)
    sys.stdout.write("\n")
    sys.stdout.flush()
    return 0


def _edit(save: Any, args: argparse.Namespace) -> None:
    """Apply the --set and --delete edits, in the order given by kind (sets, then
    deletes); one clear line for the first that cannot be done."""
    from .. import nested, valuepath
    from ..jsonio import JSONInputError, loads as json_loads

    for assignment in args.set:
        try:
            steps, value_text = valuepath.parse_assignment(assignment)
            value = json_loads(value_text)
            save.set(steps, value)
        except (valuepath.PathError, nested.LayerError) as e:
            raise CLIError(f"--set: {e}") from None
        except JSONInputError as e:
            raise CLIError(f"--set {shown(assignment)}: the value is not JSON ({e}); a string is quoted: name='\"Ada\"'") from None
    for path in args.delete:
        try:
            save.delete(path)
        except (valuepath.PathError, nested.LayerError) as e:
            raise CLIError(f"--delete: {e}") from None


# -- the saves of a player ---------------------------------------------------------------


def _read(source: str, fmt: str | None) -> tuple[str, list[Any]]:
    from ..players import SaveError, detect, read_saves

    problems: list[str] = []
    try:
        fmt = fmt or detect(source)
        saves = read_saves(source, fmt, problems=problems)
    except SaveError as e:
        raise CLIError(str(e)) from None
    for line in problems:
        print(f"{PROG} sol: skipped {clip(line)}", file=sys.stderr)
    return fmt, saves


def _cmd_ls(args: argparse.Namespace) -> int:
    amfkit = import_amfkit()
    from ..sol import loads

    fmt, saves = _read(args.source, args.from_format)
    rows = []
    for save in saves:
        row: dict[str, Any] = {
            "site": save.key.host,
            "swf": save.key.path,
            "name": save.key.name,
            "size": len(save.data),
            "source": save.source,
        }
        try:
            shared = loads(save.data)
            row.update(sol_name=shared.name, amf_version=shared.amf_version, members=list(shared))
        except amfkit.DecodeError as e:
            row["error"] = str(e)
        rows.append(row)
    rows.sort(key=lambda r: (r["site"], r["swf"], r["name"]))
    out = sys.stdout
    if args.json:
        json.dump(rows, out, indent=2, ensure_ascii=False)
        out.write("\n")
        out.flush()
        return 0
    sites = len({r["site"] for r in rows})
    out.write(f"# {fmt}: {args.source}: {len(rows)} save{'' if len(rows) == 1 else 's'}, {sites} site{'' if sites == 1 else 's'}\n")
    site = swf = None
    for r in rows:
        if r["site"] != site:
            site, swf = r["site"], None
            out.write(f"{site}\n")
        if r["swf"] != swf:
            swf = r["swf"]
            out.write(f"  {swf or '/'}\n")
        if "error" in r:
            what = f"unreadable: {clip(r['error'], MAX_SHOWN * 2)}"
        else:
            names = ", ".join(r["members"])
            what = f"amf{r['amf_version']}, {len(r['members'])} member{'' if len(r['members']) == 1 else 's'}: {clip(names, MAX_SHOWN * 2)}"
        out.write(f"    {r['name']}  {r['size']} bytes  {what}\n")
    out.flush()
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    from ..players import SaveError, ruffle_web_entries, write_saves

    fmt, saves = _read(args.source, args.from_format)
    if not saves:
        raise CLIError(f"no saves in {args.source} (read as {fmt})")
    try:
        if args.to == "ruffle-web":
            entries = ruffle_web_entries(saves)
            text = json.dumps(entries, indent=2) + "\n"
            if args.output == "-":
                sys.stdout.write(text)
                sys.stdout.flush()
            else:
                write_output(args.output, text.encode("ascii"))
            done = f"{len(entries)} localStorage entr{'y' if len(entries) == 1 else 'ies'} to {input_name(args.output)}"
        else:
            written = write_saves(saves, args.output, args.to, replace=args.replace)
            same = sum(1 for _, state in written if state == "same")
            done = f"{len(written) - same} save{'' if len(written) - same == 1 else 's'} written"
            if same:
                done += f", {same} already there"
            roots = {p for p, _ in written}
            if roots:
                done += f" ({args.to}: {_common(sorted(roots))})"
    except SaveError as e:
        raise CLIError(str(e)) from None
    except OSError as e:
        raise CLIError(f"{args.output}: {e.strerror or e}") from None
    print(f"{PROG} sol: {len(saves)} save{'' if len(saves) == 1 else 's'} read from {args.source} ({fmt}); {done}", file=sys.stderr)
    return 0


def _common(paths: list[str]) -> str:
    import os

    return os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
