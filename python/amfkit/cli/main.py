"""`amfkit`: the command line. `amfkit --help` lists the commands; docs/cli.md has them all.

    amfkit decode | encode | diff | sol | call | bench | serve | assets | inspect | scaffold
           | mitmproxy-addon ...   (amfkit COMMAND --help)

`main(argv)` runs it and returns the exit status: 0 on success, 1 when the input cannot be
read, decoded or encoded (one line on standard error, no traceback; `diff` says 2 for
that, its 1 meaning that the inputs differ), 2 for a usage error.
amfkit itself is imported only by the commands that need it, so `--help` works even when
the compiled extension is missing.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from typing import Any, Sequence

from .._text import MAX_MESSAGE, clip, shown
from ..serving import DEFAULT_SERVER, SERVERS
from .errors import CLIError, import_amfkit
from .options import PROG, positive_float, positive_int

__all__ = ["main", "build_parser"]

#: How to get the benchmark lab, a distribution of its own (bench/ in amfkit's repository).
BENCH_INSTALL = "pip install amfkit-bench (in a checkout of amfkit: make venv)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default: `sys.argv[1:]`); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sol"]:
        # `amfkit sol FILE ...` and `amfkit sol ls|export|import ...`: cli/sol.py parses them.
        args = argparse.Namespace(command="sol", args=argv[1:], func=cmd_sol)
    elif argv[:1] == ["bench"]:
        # The lab's runner parses its own command line (experiment names, options for
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
        return e.status
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

    from .decode import add_parser as add_decode_parser
    from .diff import add_parser as add_diff_parser
    from .encode import add_parser as add_encode_parser

    add_decode_parser(sub)
    add_encode_parser(sub)
    add_diff_parser(sub)

    from .sol import add_parser as add_sol_parser

    add_sol_parser(sub, cmd_sol)

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
        help="run the benchmark experiments (the amfkit-bench lab), or compare two runs",
        description=(
            "amfkit bench [EXPERIMENT ...] [--quick] [--json PATH] [--report PATH]: run the "
            "experiments (all of them by default); amfkit bench --list; "
            "amfkit bench compare A.json B.json. `amfkit bench --help` tells more. "
            "The lab is a distribution of its own: " + BENCH_INSTALL + "."
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
        "--replay",
        nargs="+",
        metavar="FILE",
        help="serve the calls recorded in these captures (HAR, mitmproxy flows, pcap): docs/capture.md",
    )
    serve.add_argument(
        "--match",
        choices=("arguments", "target", "order"),
        default="arguments",
        help="with --replay: answer by target and arguments (default), by target only, or in recorded order",
    )
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
        type=positive_int,
        default=1,
        metavar="N",
        help="worker processes (default 1; sessions in the default in-memory store are per worker)",
    )
    serve.add_argument(
        "--access-log",
        action="store_true",
        help="log every request (off by default, to keep the request path short)",
    )
    origins = serve.add_argument_group("other origins (docs/gateway.md, \"Clients on other origins\"; they replace the app's own)")
    origins.add_argument(
        "--cors",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="let pages of ORIGIN (such as https://game.example; repeatable) call the gateway and read its answers "
        "(CORS, for Ruffle and JavaScript clients), or '*' for every origin",
    )
    origins.add_argument(
        "--cors-credentials",
        action="store_true",
        help="with --cors: requests made with credentials (cookies, HTTP authentication) too (listed origins only)",
    )
    origins.add_argument(
        "--crossdomain",
        action="append",
        default=None,
        metavar="DOMAIN",
        help="serve /crossdomain.xml letting SWFs from DOMAIN (game.example, *.cdn.example or '*'; repeatable) call the "
        "gateway in Flash Player and AIR (default with --demo: the --host; else none)",
    )
    limits = serve.add_argument_group("limits (docs/limits.md tells what happens past each)")
    limits.add_argument(
        "--limit-concurrency",
        type=positive_int,
        default=DEFAULT_LIMIT_CONCURRENCY,
        metavar="N",
        help=f"per worker: with N connections open or N requests running, answer 503 at once (default {DEFAULT_LIMIT_CONCURRENCY})",
    )
    limits.add_argument(
        "--timeout-keep-alive",
        type=positive_int,
        default=5,
        metavar="S",
        help="close an idle kept-alive connection after S seconds (default 5)",
    )
    limits.add_argument(
        "--backlog",
        type=positive_int,
        default=2048,
        metavar="N",
        help="connections the kernel queues before they are accepted (default 2048; capped by net.core.somaxconn)",
    )
    limits.add_argument(
        "--header-timeout",
        type=positive_float,
        default=None,
        metavar="S",
        help="close a connection whose request line and headers are not all in S seconds after it opened "
        "(or after the next request's first byte), with 408 when part came (default 10; uvicorn: httptools only; "
        "granian: at most 60, one timer with --timeout-keep-alive, no 408)",
    )
    limits.add_argument(
        "--max-header-size",
        type=positive_int,
        default=None,
        metavar="BYTES",
        help="answer 431 and close when a request line and headers pass BYTES (default 65536; granian: at least 8192)",
    )
    limits.add_argument(
        "--body-timeout",
        type=positive_float,
        default=None,
        metavar="S",
        help="with --demo: answer 408 and close when a request body is not all in S seconds after "
        "its headers (default 30; for MODULE:ATTR it is the Gateway's body_timeout option)",
    )
    serve.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"), help="the server's log level (default info)")
    serve.set_defaults(func=cmd_serve)

    from .assets import add_parser as add_assets_parser
    from .inspect import add_parser as add_inspect_parser
    from .mitmproxy import add_parser as add_mitmproxy_parser
    from .scaffold import add_parser as add_scaffold_parser

    add_assets_parser(sub)
    add_inspect_parser(sub)
    add_scaffold_parser(sub)
    add_mitmproxy_parser(sub)
    return parser


# -- commands --------------------------------------------------------------------------


def cmd_sol(args: argparse.Namespace) -> int:
    """`amfkit sol ...`: cli/sol.py (print and edit a .sol file; list and convert saves)."""
    from .sol import run

    return run(args.args)


def _call_arg(text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def cmd_call(args: argparse.Namespace) -> int:
    import_amfkit()
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
        from ..jsonio import iter_json

        for piece in iter_json(result, indent=2):
            out.write(piece)
        out.write("\n")
    else:
        from ..tree import iter_lines

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
    from ..jsonio import iter_json

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
    """`amfkit bench ...`: handed whole to the lab's runner (its own options and --help);
    one line saying how to install the lab when it is not."""
    try:
        from amfkit_bench.runner import main as bench_main
    except ImportError as e:
        if e.name == "amfkit_bench":
            raise CLIError(f"the benchmark lab is not installed: {BENCH_INSTALL}") from None
        raise CLIError(f"cannot load the benchmark lab: {e}") from None
    return bench_main(argv)


DEMO_APP = "amfkit.demo.app:app"
# Per worker. Past it uvicorn answers 503 at once, which is cheaper than queueing work
# the event loop cannot get to: at ~10,000 calls a second a worker takes 100 ms to work
# through 1,000 requests. An idle connection costs the server about 4 KiB and a file
# descriptor. See docs/limits.md.
DEFAULT_LIMIT_CONCURRENCY = 1000


def cmd_serve(args: argparse.Namespace) -> int:
    if sum((bool(args.demo), bool(args.app), bool(args.replay))) > 1:
        raise CLIError("give one of MODULE:ATTR, --demo and --replay FILE...")
    if not args.demo and not args.app and not args.replay:
        raise CLIError("give the app to serve as MODULE:ATTR (or --demo for the demo gateway, --replay FILE... for a capture)")
    if args.replay:
        from .replay import prepare

        args.app = prepare(args.replay, args.match)
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
    origins = _origin_options(args)
    if server == "granian":
        return _serve_granian(args, target, base, workers, origins)
    http, http_options = _http_protocol(args)
    app = _check_app(target, demo=args.demo)
    served = _served(target, origins, None if args.demo else app)  # the demo is a Gateway
    print(f"{PROG} serve: {target} on {base} ({workers}, uvicorn)", file=sys.stderr)
    _announce_demo(args, base)
    _exit_on_sigterm()
    # uvicorn imports the app itself (in every worker when there are several).
    uvicorn.run(
        served,
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


def _exit_on_sigterm() -> None:
    """Make a SIGTERM end this process as an exit, not a death by signal. uvicorn catches
    it, shuts down gracefully, then raises it again under the handler it found: the
    default one would kill the process with no `atexit`, and a `shm://` segment it holds
    would stay in /dev/shm (its last process out removes it at exit). The workers of
    `--workers N` do die so; this process, which loaded the app too, outlives them, purges
    them from the segment and removes it."""

    def exit_(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, exit_)


def _announce_demo(args: argparse.Namespace, base: str) -> None:
    if args.demo:
        print(f"{PROG} serve: the demo gateway answers at {base}gateway (GET: its services as JSON)", file=sys.stderr)
        print(f"{PROG} serve: the service browser is at {base}", file=sys.stderr)


def _origin_options(args: argparse.Namespace) -> tuple[list[str] | None, bool, list[str] | None] | None:
    """The checked --cors, --cors-credentials and --crossdomain (with --demo, whose policy
    file names its own host unless told otherwise), or None when none applies."""
    crossdomain = args.crossdomain
    if crossdomain is None and args.demo and args.host not in ("0.0.0.0", "::", ""):
        crossdomain = [args.host]  # the demo lets SWFs of its own host in, no others
    if args.cors_credentials and not args.cors:
        raise CLIError("--cors-credentials needs --cors (the origins allowed)")
    cors = args.cors
    if cors is None and crossdomain is None:
        return None
    if cors is not None and "*" in cors and len(cors) > 1:
        raise CLIError("--cors '*' allows every origin: give it alone")
    from ..remoting import cors as _cors, crossdomain as _crossdomain

    try:  # refused here, once, rather than in every worker
        if cors is not None:
            _cors.CORSPolicy("*" if cors == ["*"] else cors, credentials=args.cors_credentials)
        if crossdomain is not None:
            _crossdomain.CrossDomainPolicy(crossdomain)
    except (TypeError, ValueError) as e:
        raise CLIError(str(e)) from None
    return cors, args.cors_credentials, crossdomain


def _served(target: str, origins: tuple[list[str] | None, bool, list[str] | None] | None, app: Any) -> str:
    """What uvicorn or granian import: `target` itself, or, with origin options,
    amfkit.serving.origins, which sets them on `target`'s gateway in each worker (`app`:
    the gateway loaded here, None when it was not loaded)."""
    if origins is None:
        return target
    if app is not None and (not hasattr(app, "cors") or not hasattr(app, "crossdomain")):
        raise CLIError(f"--cors and --crossdomain need an amfkit Gateway; {target} is a {type(app).__name__}")
    from ..serving import origins as serving_origins

    os.environ[serving_origins.APP_ENV] = target
    os.environ[serving_origins.ORIGINS_ENV] = serving_origins.settings_text(*origins)
    return "amfkit.serving.origins:app"


def _serve_granian(
    args: argparse.Namespace, target: str, base: str, workers: str, origins: tuple[list[str] | None, bool, list[str] | None] | None
) -> int:
    """`amfkit serve --server granian`: RSGI for an app that has it (a Gateway), else
    ASGI; the limits as amfkit.serving.granian maps them."""
    from .. import serving
    from ..serving import granian as serving_granian

    # The demo is built in the workers only (each builds its own, as under uvicorn).
    app = _check_app(target, demo=args.demo, load=not args.demo)
    interface = "rsgi" if args.demo or hasattr(app, "__rsgi__") else "asgi"
    served = _served(target, origins, app)
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
    serving_granian.serve(served, args.host, args.port, options)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
