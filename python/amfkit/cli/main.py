"""`amfkit`: the command line. `amfkit --help` lists the commands; docs/cli.md has them all.

    amfkit decode | encode | sol | call | bench | serve | assets ...   (amfkit COMMAND --help)

`main(argv)` runs it and returns the exit status: 0 on success, 1 when the input cannot be
read, decoded or encoded (one line on standard error, no traceback), 2 for a usage error.
amfkit itself is imported only by the commands that need it, so `--help` works even when
the compiled extension is missing.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, BinaryIO, Sequence

__all__ = ["main", "build_parser"]

PROG = "amfkit"
# The experiments registered in amfkit.benchlab (importing it imports no peer library).
from ..benchlab import EXPERIMENTS as _EXPERIMENTS  # noqa: E402
from .._text import MAX_MESSAGE, clip, shown  # noqa: E402
from ..serving import DEFAULT_SERVER, SERVERS  # noqa: E402

BENCH_SUITES = tuple(_EXPERIMENTS)


class CLIError(Exception):
    """A failure reported as one line on standard error, with exit status 1."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default: `sys.argv[1:]`); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        # The benchlab runner parses its own command line (experiment names, options for
        # them, --list, --help, `compare`): argparse would take their options for its own.
        args = argparse.Namespace(command="bench", args=argv[1:], func=cmd_bench)
    else:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "func", None) is None:
            parser.print_help(sys.stderr)
            return 2
    try:
        return int(args.func(args) or 0)
    except CLIError as e:
        print(f"{PROG} {args.command}: {clip(str(e))}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`amfkit decode big.amf | head`): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="amfkit: a fast and safe AMF0/AMF3 toolkit.",
        epilog="Run `amfkit COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    dec = sub.add_parser(
        "decode",
        help="print an AMF file as a tree (or JSON)",
        description=(
            "Print the AMF value(s) in FILE as an indented tree naming the AMF types, or as "
            "JSON. Without --amf0/--amf3 the format is detected: one AMF0 value, one AMF3 "
            "value, then a stream of AMF0 values; the first reading that uses every byte "
            "wins and the tree's first line names it."
        ),
    )
    dec.add_argument("file", metavar="FILE", help="the AMF file, or - for standard input")
    _version_flags(dec)
    dec.add_argument(
        "--all",
        action="store_true",
        help="read a stream of values (several values back to back) and print them all",
    )
    _tree_flags(dec)
    dec.set_defaults(func=cmd_decode)

    enc = sub.add_parser(
        "encode",
        help="write AMF bytes from JSON",
        description=(
            "Read JSON (in the form `decode --json` prints) and write AMF bytes. "
            "AMF0 unless --amf3 is given."
        ),
    )
    enc.add_argument("file", metavar="FILE", help="the JSON file, or - for standard input")
    _version_flags(enc)
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
    enc.set_defaults(func=cmd_encode)

    sol = sub.add_parser(
        "sol",
        help="print or edit a local shared object (.sol) file",
        description=(
            "Print the .sol file's name and AMF version, then its members as the tree "
            "`amfkit decode` prints (one reference table spans the members, so a value "
            "stored under two names shows as #n and <ref #n>). With --json: an object "
            "holding name, amf_version and values. --get prints one value as JSON; "
            "--set and --delete edit the file and write it to -o OUT, everything not "
            "changed byte for byte as it was. PATH: member names joined by dots, list "
            "items as [n], other names quoted in brackets: player.gold, items[0].name, "
            'scores["high score"] (docs/sol.md, "Editing saves").'
        ),
    )
    sol.add_argument("file", metavar="FILE", help="the .sol file, or - for standard input")
    _tree_flags(sol)
    sol.add_argument("--get", metavar="PATH", help="print the value at PATH as JSON")
    sol.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=JSON",
        help="put the JSON value at PATH (repeatable; JSON as `amfkit decode --json` prints it)",
    )
    sol.add_argument("--delete", action="append", default=[], metavar="PATH", help="remove the member at PATH (repeatable)")
    sol.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="with --set/--delete: where to write the edited file (- for standard output; may be FILE itself)",
    )
    sol.set_defaults(func=cmd_sol)

    call = sub.add_parser(
        "call",
        help="call a remote method on an AMF gateway and print the result",
        description=(
            "Call SERVICE.METHOD on the gateway at URL with ARGS (each a JSON literal: 1, 2.5, "
            '\'"text"\', \'[1, 2]\', \'{"a": 1}\'; anything that is not JSON is taken as a string) and '
            "print the result as a tree (or --json). A fault prints its code and message and exits 1."
        ),
    )
    call.add_argument("url", help="the gateway's URL, e.g. http://127.0.0.1:8000/gateway")
    call.add_argument("target", metavar="SERVICE.METHOD")
    call.add_argument("args", nargs="*", metavar="ARGS")
    cversion = call.add_mutually_exclusive_group()
    cversion.add_argument("--amf3", dest="amf3", action="store_true", default=True, help="AMF3 values (the default)")
    cversion.add_argument("--amf0", dest="amf3", action="store_false", help="AMF0 values (an AS2 client)")
    call.add_argument("--flex", action="store_true", help="call as Flex RemoteObject (RemotingMessage) instead of NetConnection")
    call.add_argument("--user", help="credentials: user name (with --password)")
    call.add_argument("--password", default="", help="credentials: password")
    call.add_argument("--json", action="store_true", help="print the result as JSON")
    call.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    call.set_defaults(func=cmd_call)

    bench = sub.add_parser(
        "bench",
        help="run the benchmark experiments (amfkit.benchlab), or compare two runs",
        description=(
            "amfkit bench [EXPERIMENT ...] [--quick] [--json PATH] [--report PATH]: run the "
            "experiments (all of them by default; " + ", ".join(BENCH_SUITES) + "); "
            "amfkit bench --list; amfkit bench compare A.json B.json. "
            "`amfkit bench --help` tells more."
        ),
        add_help=False,
    )
    bench.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="experiments and options")
    bench.set_defaults(func=cmd_bench)

    serve = sub.add_parser(
        "serve",
        help="serve a gateway (an ASGI app) with uvicorn or granian",
        description=(
            "Serve the ASGI application MODULE:ATTR (such as an amfkit.remoting.Gateway) "
            "with uvicorn (with amfkit's HTTP protocol: plain AMF calls and small assets are "
            "answered without an ASGI task) or granian, or the demo gateway with --demo "
            "(http://HOST:PORT/gateway). MODULE is imported with the current directory on the "
            "path. uvicorn uses uvloop and httptools when they are installed "
            "(pip install 'amfkit[server]')."
        ),
    )
    serve.add_argument("app", nargs="?", metavar="MODULE:ATTR", help="the ASGI app to serve (omit with --demo)")
    serve.add_argument("--demo", action="store_true", help="serve the demo gateway (amfkit.demo.app:app)")
    serve.add_argument(
        "--server",
        choices=SERVERS,
        default=None,
        help=f"the HTTP server (default {DEFAULT_SERVER}, the faster for the gateway: docs/benchmarks.md): uvicorn, "
        "with amfkit's HTTP protocol, or granian, a Rust HTTP server, through RSGI (pip install 'amfkit[granian]'); "
        "docs/limits.md says what each enforces",
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="the TCP port (default 8000)")
    serve.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="worker processes (default 1; sessions in the default in-memory store are per worker)",
    )
    serve.add_argument(
        "--access-log",
        action="store_true",
        help="log every request (off by default, to keep the request path short)",
    )
    limits = serve.add_argument_group("limits (docs/limits.md tells what happens past each)")
    limits.add_argument(
        "--limit-concurrency",
        type=_positive_int,
        default=DEFAULT_LIMIT_CONCURRENCY,
        metavar="N",
        help=f"per worker: with N connections open or N requests running, answer 503 at once (default {DEFAULT_LIMIT_CONCURRENCY})",
    )
    limits.add_argument(
        "--timeout-keep-alive",
        type=_positive_int,
        default=5,
        metavar="S",
        help="close an idle kept-alive connection after S seconds (default 5)",
    )
    limits.add_argument(
        "--backlog",
        type=_positive_int,
        default=2048,
        metavar="N",
        help="connections the kernel queues before they are accepted (default 2048; capped by net.core.somaxconn)",
    )
    limits.add_argument(
        "--header-timeout",
        type=_positive_float,
        default=None,
        metavar="S",
        help="close a connection whose request line and headers are not all in S seconds after it opened "
        "(or after the next request's first byte), with 408 when part came (default 10; uvicorn: httptools only; "
        "granian: at most 60, one timer with --timeout-keep-alive, no 408)",
    )
    limits.add_argument(
        "--max-header-size",
        type=_positive_int,
        default=None,
        metavar="BYTES",
        help="answer 431 and close when a request line and headers pass BYTES (default 65536; granian: at least 8192)",
    )
    limits.add_argument(
        "--body-timeout",
        type=_positive_float,
        default=None,
        metavar="S",
        help="with --demo: answer 408 and close when a request body is not all in S seconds after "
        "its headers (default 30; for MODULE:ATTR it is the Gateway's body_timeout option)",
    )
    serve.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"), help="the server's log level (default info)")
    serve.set_defaults(func=cmd_serve)

    from .assets import add_parser as add_assets_parser

    add_assets_parser(sub)
    return parser


# -- commands --------------------------------------------------------------------------


def cmd_decode(args: argparse.Namespace) -> int:
    from .detect import DetectError, decode_auto

    data = _read_input(args.file)
    _import_amfkit()
    try:
        decoded = decode_auto(
            data,
            version=args.version,
            stream=True if args.all else None,
            max_depth=args.max_depth,
        )
    except DetectError as e:
        raise CLIError(f"{_name(args.file)}: {e}") from None
    out = sys.stdout
    if args.json:
        from .jsonio import iter_json

        for piece in iter_json(decoded.value, indent=None if args.compact else 2):
            out.write(piece)
        out.write("\n")
    else:
        from .tree import iter_lines, iter_stream_lines

        out.write(f"# {decoded.describe()}\n")
        if decoded.stream:
            lines = iter_stream_lines(decoded.values, version=decoded.version, max_string=args.max_string)
        else:
            lines = iter_lines(decoded.value, version=decoded.version, max_string=args.max_string)
        for line in lines:
            out.write(line + "\n")
    out.flush()
    return 0


def cmd_encode(args: argparse.Namespace) -> int:
    from .jsonio import JSONInputError, loads

    raw = _read_input(args.file)
    amfkit = _import_amfkit()
    try:
        value = loads(raw)
    except JSONInputError as e:
        raise CLIError(f"{_name(args.file)}: {e}") from None
    module = amfkit.amf3 if args.version == 3 else amfkit.amf0
    try:
        if args.all:
            if not isinstance(value, list):
                raise CLIError(f"{_name(args.file)}: --all needs a JSON list of values")
            data = module.Encoder().encode_all(value)
        else:
            data = module.encode(value)
    except amfkit.EncodeError as e:
        raise CLIError(f"{_name(args.file)}: {e}") from None
    _write_output(args.output, data)
    return 0


def cmd_sol(args: argparse.Namespace) -> int:
    editing = bool(args.set or args.delete)
    if editing and args.output is None:
        raise CLIError("--set and --delete write a new file: give -o OUT (- for standard output)")
    if args.output is not None and not editing:
        raise CLIError("-o is for --set and --delete")
    if args.get is not None and editing:
        raise CLIError("--get cannot be combined with --set or --delete")
    data = _read_input(args.file)
    amfkit = _import_amfkit()
    from ..sol import dumps, loads

    options: dict[str, Any] = {} if args.max_depth is None else {"max_depth": args.max_depth}
    try:
        shared = loads(data, lossless=True, **options)
    except amfkit.DecodeError as e:
        raise CLIError(f"{_name(args.file)}: {e}") from None
    if args.get is not None:
        return _sol_get(shared, args)
    if editing:
        _sol_edit(shared, args)
        try:
            edited = dumps(shared)
        except amfkit.EncodeError as e:
            raise CLIError(f"cannot write the edited file: {e}") from None
        _write_output(args.output, edited)
        return 0
    out = sys.stdout
    if args.json:
        from .jsonio import iter_json

        doc = {"name": shared.name, "amf_version": shared.amf_version, "values": dict(shared)}
        for piece in iter_json(doc, indent=None if args.compact else 2):
            out.write(piece)
        out.write("\n")
    else:
        from .tree import _lines

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


def _sol_get(shared: Any, args: argparse.Namespace) -> int:
    from . import valuepath
    from .jsonio import iter_json

    try:
        value = valuepath.get(shared, valuepath.parse(args.get))
    except valuepath.PathError as e:
        raise CLIError(str(e)) from None
    for piece in iter_json(value, indent=None if args.compact else 2):
        sys.stdout.write(piece)
    sys.stdout.write("\n")
    sys.stdout.flush()
    return 0


def _sol_edit(shared: Any, args: argparse.Namespace) -> None:
    """Apply the --set and --delete edits, in the order given by kind (sets, then
    deletes); one clear line for the first that cannot be done."""
    from . import valuepath
    from .jsonio import JSONInputError, loads as json_loads

    for assignment in args.set:
        try:
            steps, value_text = valuepath.parse_assignment(assignment)
            value = json_loads(value_text)
            valuepath.set_value(shared, steps, value)
        except valuepath.PathError as e:
            raise CLIError(f"--set: {e}") from None
        except JSONInputError as e:
            raise CLIError(f"--set {shown(assignment)}: the value is not JSON ({e}); a string is quoted: name='\"Ada\"'") from None
    for path in args.delete:
        try:
            valuepath.delete(shared, valuepath.parse(path))
        except valuepath.PathError as e:
            raise CLIError(f"--delete: {e}") from None


def _call_arg(text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def cmd_call(args: argparse.Namespace) -> int:
    _import_amfkit()
    try:
        from ..remoting.client import Client, TransportError
    except ImportError as e:
        raise CLIError(f"amfkit call needs httpx (pip install 'amfkit[client]'): {e}") from None
    from ..remoting import Fault

    credentials = (args.user, args.password) if args.user is not None else None
    try:
        with Client(args.url, amf3=args.amf3, flex=args.flex, credentials=credentials, timeout=args.timeout) as client:
            result = client.call(args.target, *[_call_arg(a) for a in args.args])
    except Fault as e:
        print(f"amfkit call: fault {e.code}: {e.message}", file=sys.stderr)
        if e.details:
            print(_details_text(e.details), file=sys.stderr)
        return 1
    except TransportError as e:
        raise CLIError(str(e)) from None
    out = sys.stdout
    if args.json:
        from .jsonio import iter_json

        for piece in iter_json(result, indent=2):
            out.write(piece)
        out.write("\n")
    else:
        from .tree import iter_lines

        for line in iter_lines(result, version=3 if args.amf3 else 0):
            out.write(line + "\n")
    out.flush()
    return 0


def _details_text(details: Any) -> str:
    """A fault's details from the server, in at most about `amfkit._text.MAX_MESSAGE`
    characters: a string clipped, any other value as its JSON when that is short, else
    by its type (the JSON is written piece by piece and given up past the bound, so a
    large value is never written whole)."""
    if isinstance(details, str):
        return clip(details)
    from .jsonio import iter_json

    pieces: list[str] = []
    size = 0
    try:
        for piece in iter_json(details, indent=None):
            pieces.append(piece)
            size += len(piece)
            if size > MAX_MESSAGE:
                return f"{shown(details)} (its JSON is longer than {MAX_MESSAGE} characters)"
    except Exception:
        return shown(details)
    return "".join(pieces)


def cmd_bench(args: argparse.Namespace) -> int:
    return _bench(list(args.args))


def _bench(argv: list[str]) -> int:
    """`amfkit bench ...`: handed whole to the benchlab runner (its own options and --help)."""
    from ..benchlab.runner import main as bench_main

    return bench_main(argv)


DEMO_APP = "amfkit.demo.app:app"
# Per worker. Past it uvicorn answers 503 at once, which is cheaper than queueing work
# the event loop cannot get to: at ~10,000 calls a second a worker takes 100 ms to work
# through 1,000 requests. An idle connection costs the server about 4 KiB and a file
# descriptor. See docs/limits.md.
DEFAULT_LIMIT_CONCURRENCY = 1000


def cmd_serve(args: argparse.Namespace) -> int:
    if args.demo and args.app:
        raise CLIError("give either MODULE:ATTR or --demo, not both")
    if not args.demo and not args.app:
        raise CLIError("give the app to serve as MODULE:ATTR (or --demo for the demo gateway)")
    target = DEMO_APP if args.demo else args.app
    server = args.server or DEFAULT_SERVER
    try:
        if server == "granian":
            import granian  # noqa: F401
        else:
            import uvicorn
    except ImportError:
        extra = "granian" if server == "granian" else "server"
        raise CLIError(f"serving with {server} needs it installed: pip install 'amfkit[{extra}]'") from None
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if args.demo and args.workers > 1 and not os.environ.get("AMFKIT_DEMO_DB"):
        # Create the demo database once, here, and point every worker at it.
        from amfkit.demo.data import ensure_database

        try:
            os.environ["AMFKIT_DEMO_DB"] = str(ensure_database())
        except OSError as e:
            raise CLIError(f"cannot create the demo database: {e}") from None
    if args.demo:
        # The demo's asset folder, one per port: every worker seeds and serves the same.
        try:
            from amfkit.demo.assets import ENV as ASSETS_ENV, default_path as demo_assets_path
        except ImportError as e:
            raise CLIError(f"cannot import the demo gateway (amfkit.demo.assets): {e}") from None
        os.environ.setdefault(ASSETS_ENV, str(demo_assets_path(args.port)))
    if args.demo and args.workers > 1:
        # One shared-memory segment for the workers' messaging and sessions, named after
        # the port (two demo servers on one host keep apart).
        os.environ.setdefault("AMFKIT_DEMO_SHARED", f"shm://amfkit-demo-{args.port}")
    if args.body_timeout is not None:
        if not args.demo:
            raise CLIError("--body-timeout applies to --demo only (give your Gateway body_timeout=...)")
        os.environ["AMFKIT_DEMO_BODY_TIMEOUT"] = str(args.body_timeout)
    base = f"http://{_url_host(args.host)}:{args.port}/"
    workers = f"{args.workers} worker{'s' if args.workers > 1 else ''}"
    if server == "granian":
        return _serve_granian(args, target, base, workers)
    http, http_options = _http_protocol(args)
    _check_app(target, demo=args.demo)
    print(f"{PROG} serve: {target} on {base} ({workers}, uvicorn)", file=sys.stderr)
    _announce_demo(args, base)
    # uvicorn imports the app itself (in every worker when there are several).
    uvicorn.run(
        target,
        host=args.host,
        port=args.port,
        workers=args.workers if args.workers > 1 else None,
        access_log=args.access_log,
        log_level=args.log_level,
        limit_concurrency=args.limit_concurrency,
        timeout_keep_alive=args.timeout_keep_alive,
        backlog=args.backlog,
        http=http,
        **http_options,
    )
    return 0


def _announce_demo(args: argparse.Namespace, base: str) -> None:
    if args.demo:
        print(f"{PROG} serve: the demo gateway answers at {base}gateway (GET: its services as JSON)", file=sys.stderr)
        print(f"{PROG} serve: the service browser is at {base}", file=sys.stderr)


def _serve_granian(args: argparse.Namespace, target: str, base: str, workers: str) -> int:
    """`amfkit serve --server granian`: RSGI for an app that has it (a Gateway), else
    ASGI; the limits as amfkit.serving.granian maps them."""
    from .. import serving
    from ..serving import granian as serving_granian

    # The demo is built in the workers only (each builds its own, as under uvicorn).
    app = _check_app(target, demo=args.demo, load=not args.demo)
    interface = "rsgi" if args.demo or hasattr(app, "__rsgi__") else "asgi"
    try:
        options = serving_granian.settings(
            workers=args.workers,
            limit_concurrency=args.limit_concurrency,
            timeout_keep_alive=args.timeout_keep_alive,
            backlog=args.backlog,
            header_timeout=args.header_timeout if args.header_timeout is not None else serving.DEFAULT_HEADER_TIMEOUT,
            max_header_size=args.max_header_size if args.max_header_size is not None else serving.DEFAULT_MAX_HEADER_SIZE,
            access_log=args.access_log,
            log_level=args.log_level,
            interface=interface,
        )
    except ValueError as e:
        raise CLIError(str(e)) from None
    print(f"{PROG} serve: {target} on {base} ({workers}, granian {interface.upper()})", file=sys.stderr)
    _announce_demo(args, base)
    serving_granian.serve(target, args.host, args.port, options)
    return 0


def _http_protocol(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """uvicorn's `http` setting: amfkit's httptools protocol (deadline and size limit on
    request heads, passed to every worker through the environment), else h11 with its
    own size limit and no deadline."""
    from importlib.util import find_spec

    if find_spec("httptools") is not None:
        from .. import serving

        # This process (one worker) reads the class; started workers, the environment.
        if args.header_timeout is not None:
            os.environ[serving.HEADER_TIMEOUT_ENV] = repr(args.header_timeout)
            serving.HttpToolsProtocol.header_timeout = args.header_timeout
        if args.max_header_size is not None:
            if args.max_header_size < 1024:
                raise CLIError("--max-header-size must be at least 1024 bytes")
            os.environ[serving.MAX_HEADER_SIZE_ENV] = str(args.max_header_size)
            serving.HttpToolsProtocol.max_header_size = args.max_header_size
        return "amfkit.serving:HttpToolsProtocol", {}
    if args.header_timeout is not None:
        raise CLIError("--header-timeout needs httptools (pip install 'amfkit[server]')")
    size = args.max_header_size if args.max_header_size is not None else 64 * 1024
    return "h11", {"h11_max_incomplete_event_size": size}


def _check_app(target: str, *, demo: bool, load: bool = True) -> Any:
    """Import MODULE:ATTR once here so that a mistake is one clear line, not a traceback;
    the app (None with `load` False: the module only)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise CLIError(f"{target!r} is not MODULE:ATTR (for example myapp:gateway)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        if demo:
            raise CLIError(f"cannot import the demo gateway ({module_name}): {e}") from None
        if getattr(e, "name", None) == module_name:
            raise CLIError(f"cannot import {module_name!r}: no such module (run from the directory holding it)") from None
        raise CLIError(f"cannot import {module_name!r}: {e}") from None
    except Exception as e:
        raise CLIError(f"importing {module_name!r} failed: {type(e).__name__}: {e}") from None
    if not load:
        return None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CLIError(f"module {module_name!r} has no attribute {attr!r}") from None
        except Exception as e:
            raise CLIError(f"loading {target} failed: {type(e).__name__}: {e}") from None
    if not callable(obj):
        raise CLIError(f"{target} is a {type(obj).__name__}, not an ASGI app (an amfkit.remoting.Gateway, say)")
    return obj


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _port(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {n}")
    return n


# -- helpers ---------------------------------------------------------------------------


class _VersionAction(argparse.Action):
    """`--version`, importing amfkit only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        print(version_text())
        parser.exit(0)


def version_text() -> str:
    """`amfkit 0.1.0`, or the installed version and why the extension failed to load."""
    try:
        import amfkit

        return f"{PROG} {amfkit.__version__}"
    except ImportError as e:
        try:
            from importlib.metadata import version

            v = version("amfkit")
        except Exception:
            v = "unknown"
        return f"{PROG} {v} (the compiled extension does not load: {e})"


def _tree_flags(p: argparse.ArgumentParser) -> None:
    """The output flags of the commands that print decoded values (decode, sol)."""
    p.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    p.add_argument("--compact", action="store_true", help="with --json: one line, no indent")
    p.add_argument(
        "--max-depth",
        type=_positive_int,
        metavar="N",
        help="the decoder's nesting limit (default: the library's, 128)",
    )
    p.add_argument(
        "--max-string",
        type=_positive_int,
        default=120,
        metavar="N",
        help="in the tree, cut strings after N characters (default 120; --json never cuts)",
    )


def _version_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--amf0", dest="version", action="store_const", const=0, help="AMF0")
    g.add_argument("--amf3", dest="version", action="store_const", const=3, help="AMF3")


def _positive_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not x > 0 or x == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return x


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def _name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _read_input(path: str) -> bytes:
    if path == "-":
        stream: BinaryIO | None = getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise CLIError("standard input is not available")
        return stream.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise CLIError(f"{path}: {e.strerror or e}") from None


def _write_output(path: str, data: bytes) -> None:
    if path == "-":
        if sys.stdout.isatty():
            raise CLIError("refusing to write AMF bytes to a terminal; use -o FILE or a pipe")
        sys.stdout.flush()
        stream: BinaryIO | None = getattr(sys.stdout, "buffer", None)
        if stream is None:
            raise CLIError("standard output takes no bytes here; use -o FILE")
        stream.write(data)
        stream.flush()
        return
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise CLIError(f"{path}: {e.strerror or e}") from None


def _import_amfkit() -> Any:
    try:
        import amfkit
    except ImportError as e:
        raise CLIError(f"amfkit does not load ({e}); build it with `make build`") from None
    return amfkit


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
