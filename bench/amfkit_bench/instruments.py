"""`amfkit bench instruments`: the Protocol Buffers article's InstrumentPrice messages,
amfkit against Protocol Buffers and the other peers, one message per call and many in one
packet (docs/benchmarks.md, "The instruments experiment").
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, Optional

from . import peers as peer_libs
from amfkit.compare import first_difference
from .model import Bar, Chart, Section, Table, add_ratios, experiment_main, options_dict, round_trip, timing_bar
from .text import fmt_factor, fmt_figure, machine_lines, ratio_cell, text_table, than, timing_cell
from .timing import machine_facts, measure

__all__ = [
    "COMPARE_KEYS",
    "NAME",
    "ARTICLE_FIGURES",
    "SUMMARY",
    "Options",
    "format_report",
    "main",
    "parse_options",
    "proto_module",
    "run",
    "sections",
]

NAME = "instruments"
#: The article this experiment reproduces (docs/benchmarks.md).
ARTICLE = "the Protocol Buffers article"
SUMMARY = (
    f"InstrumentPrice messages ({ARTICLE}): size, 10,000 serializations/deserializations, "
    "many per packet; amfkit AMF3 vs Protocol Buffers, Py3AMF"
)

MESSAGES = ("small", "medium", "large")
BASELINE = "amfkit AMF3"
DEFAULT_ITERATIONS = 10_000
QUICK_ITERATIONS = 1_000
QUICK_SLOW_ITERATIONS = 200
DEFAULT_PACKETS = (100, 10_000)
QUICK_PACKETS = (100, 1_000)
DEFAULT_REPEAT = 5
SLOW_REPEAT_CAP = 3
GZIP_LEVEL = 6

#: The row fields that identify a case for `amfkit bench compare` (runs with other
#: iteration counts are other cases: their series totals differ).
COMPARE_KEYS = ("case", "message", "count", "iterations", "peer")

#: Peer keys for `--peers`, in report order (`protobuf-python` runs in a child process).
PEER_KEYS = ("amf3", "amf0", "protobuf", "protobuf-classes", "protobuf-python", "py3amf", "orjson")

PROTO_FILE = "instruments.proto"
_PROTO_PATH = "amfkit_bench/" + PROTO_FILE  # its name in protobuf's descriptor pool
_PB_ENV = "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"

#: The Protocol Buffers article's figures: Flash Player 10 (native AMF3) against protoc-gen-as3
#: (Protocol Buffers in ActionScript), April 2010; 50 runs per class, each run 10,000
#: serializations then 10,000 deserializations of one object; times are the run's total
#: in ms, as (average, standard deviation).
ARTICLE_FIGURES: dict[str, Any] = {
    "source": f"{ARTICLE}: Protocol Buffers vs AMF3 in Flex (Flash Player 10, protoc-gen-as3), April 2010",
    "iterations": 10_000,
    "runs": 50,
    "bytes": {"AMF3": (198, 290, 371), "Protocol Buffers": (31, 80, 123)},
    "serialize_ms": {
        "AMF3": ((165.30, 22.22), (235.08, 17.15), (320.66, 16.57)),
        "Protocol Buffers": ((835.82, 17.89), (2385.44, 63.02), (3619.78, 81.80)),
    },
    "deserialize_ms": {
        "AMF3": ((444.92, 18.19), (955.06, 20.88), (1348.38, 16.32)),
        "Protocol Buffers": ((332.46, 3.10), (977.12, 6.77), (1457.12, 7.42)),
    },
}


@dataclass
class Options:
    """What to run. Slow peers (pure Python) get `slow_iterations` calls per series and
    `slow_repeat` repetitions; `packets` are the message counts of the packet case."""

    messages: tuple[str, ...] = MESSAGES
    iterations: int = DEFAULT_ITERATIONS
    slow_iterations: int = DEFAULT_ITERATIONS
    packets: tuple[int, ...] = DEFAULT_PACKETS
    repeat: int = DEFAULT_REPEAT
    slow_repeat: int = SLOW_REPEAT_CAP
    peers: tuple[str, ...] = PEER_KEYS
    quick: bool = False
    json_path: Optional[str] = None
    #: progress(message, done=None, total=None), called before each step
    progress: Optional[Callable[..., None]] = field(default=None, repr=False, compare=False)


# --------------------------------------------------------------------------- protobuf


_PROTO_CACHE: dict[str, Any] = {}


def proto_module() -> ModuleType:
    """The generated protobuf module of `instruments.proto`, compiled on first use.

    protoc (grpcio-tools, run as ``python -m grpc_tools.protoc``) writes it into a
    temporary directory, it is imported from there and the directory is removed; the
    module is kept for the rest of the process (protobuf's descriptor pool accepts a
    file once). Raises ImportError when protobuf or grpcio-tools is missing and
    RuntimeError when protoc fails. Warnings raised while importing it (such as a
    protobuf runtime newer than protoc's) are kept in `proto_module.warnings`.
    """
    module = _PROTO_CACHE.get("module")
    if module is not None:
        return module
    for needed in ("google.protobuf", "grpc_tools"):
        if importlib.util.find_spec(needed) is None:
            raise ImportError(f"{needed} is not installed (pip install amfkit-bench)")
    source = Path(__file__).with_name(PROTO_FILE).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="amfkit-proto-") as tmp:
        src, out = Path(tmp, "src"), Path(tmp, "out")
        (src / _PROTO_PATH).parent.mkdir(parents=True)
        out.mkdir()
        (src / _PROTO_PATH).write_text(source, encoding="utf-8")
        command = [sys.executable, "-m", "grpc_tools.protoc", f"-I{src}", f"--python_out={out}", _PROTO_PATH]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        generated = out / _PROTO_PATH.replace(".proto", "_pb2.py")
        if done.returncode != 0 or not generated.is_file():
            raise RuntimeError(f"protoc failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
        spec = importlib.util.spec_from_file_location("amfkit_bench._instruments_pb2", generated)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            spec.loader.exec_module(module)
    _PROTO_CACHE["module"] = module
    _PROTO_CACHE["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return module


def _protobuf_facts() -> dict[str, Any]:
    api_implementation = importlib.import_module("google.protobuf.internal.api_implementation")
    return {
        "protobuf": peer_libs.package_version("protobuf"),
        "backend": api_implementation.Type(),
        "grpcio_tools": peer_libs.package_version("grpcio-tools"),
        "import_warnings": list(_PROTO_CACHE.get("warnings", [])),
    }


# --------------------------------------------------------------------------- the data


def _price_classes() -> dict[str, Any]:
    from amfkit.demo import services as demo_services

    return {
        "small": demo_services.InstrumentPriceSmall,
        "medium": demo_services.InstrumentPriceMedium,
        "large": demo_services.InstrumentPriceLarge,
    }


def _split(fields: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(scalar fields, ValueDate fields) of an InstrumentPrice class."""
    dates = tuple(name for name in fields if name.startswith("date"))
    return tuple(name for name in fields if name not in dates), dates


# --------------------------------------------------------------------------- peers


@dataclass
class Peer:
    """One format under test for one message class.

    `feed` turns an InstrumentPrice into what the peer encodes (untimed: the object
    itself, a protobuf message, a dict), `back` turns what it decodes into an
    InstrumentPrice again for the check (untimed). `encode`/`decode` handle one message;
    `pack` builds a packet's input from fed messages (untimed), `encode_many` writes it
    in one call, `decode_many` reads it and `unpack` lists the decoded messages.
    """

    name: str
    library: str
    format: str
    feed: Callable[[Any], Any]
    back: Callable[[Any], Any]
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    pack: Callable[[list[Any]], Any]
    encode_many: Callable[[Any], bytes]
    decode_many: Callable[[bytes], Any]
    unpack: Callable[[Any], list[Any]]
    slow: bool = False
    noisy: bool = False  # emits warnings on its first calls (lazy imports): run quietly


def _same(value: Any) -> Any:
    return value


def _demo_classes() -> dict[str, tuple[type, tuple[str, ...]]]:
    """alias -> (class, sealed members) of the demo's ValueDate and InstrumentPrice classes."""
    from amfkit.demo import services as demo_services

    classes = (demo_services.ValueDate, *_price_classes().values())
    return {f"org.amfkit.demo.{cls.__name__}": (cls, tuple(getattr(cls, "FIELDS", None) or cls.__slots__)) for cls in classes}


def _amfkit_peers(message: str, stack: contextlib.ExitStack, keys: tuple[str, ...], versions: dict[str, Any]) -> list[Peer]:
    import amfkit

    versions["amfkit"] = peer_libs.package_version("amfkit")
    # The demo module registers its classes on import; if something removed them,
    # register them for the run only.
    for alias, (cls, static) in _demo_classes().items():
        peer_libs.register_amfkit(stack, cls, alias, static=static, dynamic=False)
    peers = []
    for key, fmt, module in (("amf3", "AMF3", amfkit.amf3), ("amf0", "AMF0", amfkit.amf0)):
        if key not in keys:
            continue
        encoder, decoder = module.Encoder(), module.Decoder()
        peers.append(
            Peer(
                f"amfkit {fmt}", "amfkit", fmt, _same, _same, encoder.encode, decoder.decode,
                list, encoder.encode, decoder.decode, _same,
            )
        )
    return peers


def _protobuf_peers(message: str, keys: tuple[str, ...], versions: dict[str, Any]) -> list[Peer]:
    pb = proto_module()
    facts = _protobuf_facts()
    versions["protobuf"] = f"{facts['protobuf']} ({facts['backend']})"
    versions["grpcio-tools"] = facts["grpcio_tools"]
    from amfkit.demo.services import ValueDate

    cls = _price_classes()[message]
    msg_cls = getattr(pb, cls.__name__)
    list_cls = getattr(pb, f"{cls.__name__}List")
    pb_date = pb.ValueDate
    scalars, dates = _split(cls.FIELDS)

    def to_pb(obj: Any) -> Any:
        members = {name: getattr(obj, name) for name in scalars}
        for name in dates:
            d = getattr(obj, name)
            members[name] = pb_date(year=d.year, month=d.month, day=d.day)
        return msg_cls(**members)

    def from_pb(msg: Any) -> Any:
        obj = cls.__new__(cls)
        for name in scalars:
            setattr(obj, name, getattr(msg, name))
        for name in dates:
            d = getattr(msg, name)
            setattr(obj, name, ValueDate(d.year, d.month, d.day))
        return obj

    def serialize(msg: Any) -> bytes:
        return msg.SerializeToString()

    def pack(msgs: list[Any]) -> Any:
        return list_cls(items=msgs)

    def unpack(packet: Any) -> list[Any]:
        return list(packet.items)

    backend = facts["backend"]
    peers = []
    if "protobuf" in keys:
        peers.append(
            Peer(
                f"protobuf ({backend})", "protobuf", "Protocol Buffers", to_pb, from_pb, serialize, msg_cls.FromString,
                pack, serialize, list_cls.FromString, unpack, slow=backend == "python",
            )
        )
    if "protobuf-classes" in keys:

        def encode(obj: Any) -> bytes:
            return to_pb(obj).SerializeToString()

        def decode(data: bytes) -> Any:
            return from_pb(msg_cls.FromString(data))

        def encode_many(objs: list[Any]) -> bytes:
            return list_cls(items=[to_pb(obj) for obj in objs]).SerializeToString()

        def decode_many(data: bytes) -> list[Any]:
            return [from_pb(msg) for msg in list_cls.FromString(data).items]

        peers.append(
            Peer(
                f"protobuf ({backend}) +classes", "protobuf", "Protocol Buffers", _same, _same, encode, decode,
                list, encode_many, decode_many, _same, slow=backend == "python",
            )
        )
    return peers


def _py3amf_setup(stack: contextlib.ExitStack, versions: dict[str, Any]) -> ModuleType:
    pyamf = peer_libs.import_py3amf()
    versions["py3amf"] = peer_libs.package_version("py3amf")
    for alias, (cls, static) in _demo_classes().items():
        peer_libs.register_py3amf(stack, pyamf, cls, alias, static=static, dynamic=False)
    return pyamf


def _py3amf_peers(pyamf: ModuleType, use_ext: bool) -> list[Peer]:
    encode, decode = peer_libs.py3amf_codec(pyamf, 3, use_ext=use_ext)
    if use_ext:
        return [Peer("py3amf-ext AMF3", "py3amf (Cython)", "AMF3", _same, _same, encode, decode, list, encode, decode, list, noisy=True)]
    return [Peer("py3amf AMF3", "py3amf (pure)", "AMF3", _same, _same, encode, decode, list, encode, decode, list, slow=True, noisy=True)]


def _orjson_peers(message: str, versions: dict[str, Any]) -> list[Peer]:
    import orjson

    from amfkit.demo.services import ValueDate

    versions["orjson"] = peer_libs.package_version("orjson")
    cls = _price_classes()[message]
    scalars, dates = _split(cls.FIELDS)

    def to_dict(obj: Any) -> dict[str, Any]:
        members = {name: getattr(obj, name) for name in scalars}
        for name in dates:
            d = getattr(obj, name)
            members[name] = {"year": d.year, "month": d.month, "day": d.day}
        return members

    def from_dict(members: Any) -> Any:
        if not isinstance(members, dict):
            return members
        obj = cls.__new__(cls)
        for name in scalars:
            setattr(obj, name, members.get(name))
        for name in dates:
            d: Any = members.get(name) or {}
            setattr(obj, name, ValueDate(d.get("year"), d.get("month"), d.get("day")))
        return obj

    return [Peer("orjson", "orjson", "JSON", to_dict, from_dict, orjson.dumps, orjson.loads, list, orjson.dumps, orjson.loads, _same)]


@contextlib.contextmanager
def _peer_factory(
    options: Options, versions: dict[str, Any], skipped: list[dict[str, str]]
) -> Iterator[Callable[[str], list[Peer]]]:
    """Set up the libraries (registrations undone on exit); yield `peers(message)`."""
    keys = options.peers
    with contextlib.ExitStack() as stack:
        pyamf: Optional[ModuleType] = None
        if "py3amf" in keys:
            try:
                pyamf = _py3amf_setup(stack, versions)
            except ImportError as exc:
                skipped.append({"peer": "py3amf", "reason": f"not installed ({exc})"})
        py3amf_ext = pyamf is not None and peer_libs.py3amf_ext_built()
        if pyamf is not None and not py3amf_ext:
            skipped.append({"peer": "py3amf-ext AMF3", "reason": "Py3AMF's Cython extension (cpyamf) is not built here"})
        protobuf_ok = bool({"protobuf", "protobuf-classes"} & set(keys))
        if protobuf_ok:
            try:
                proto_module()
            except (ImportError, RuntimeError) as exc:
                skipped.append({"peer": "protobuf", "reason": str(exc)})
                protobuf_ok = False
        orjson_ok = "orjson" in keys and importlib.util.find_spec("orjson") is not None
        if "orjson" in keys and not orjson_ok:
            skipped.append({"peer": "orjson", "reason": "not installed"})

        def peers(message: str) -> list[Peer]:
            out = _amfkit_peers(message, stack, keys, versions)
            if protobuf_ok:
                out += _protobuf_peers(message, keys, versions)
            if pyamf is not None:
                out += _py3amf_peers(pyamf, use_ext=False)
                if py3amf_ext:
                    out += _py3amf_peers(pyamf, use_ext=True)
            if orjson_ok:
                out += _orjson_peers(message, versions)
            return out

        yield peers


# --------------------------------------------------------------------------- the run


def _series(fn: Callable[[Any], Any], arg: Any, count: int) -> Callable[[], None]:
    """A callable making `count` calls `fn(arg)`: one timed series of single-message calls."""

    def series() -> None:
        for _ in itertools.repeat(None, count):
            fn(arg)

    return series


def _check_one(peer: Peer, obj: Any) -> tuple[Optional[bytes], dict[str, Any]]:
    data, decoded, failure = round_trip(lambda o: peer.encode(peer.feed(o)), lambda d: peer.back(peer.decode(d)), obj)
    problem = failure or first_difference(obj, decoded, refs=False)
    return data, {"ok": problem is None, "detail": problem or ""}


def _check_many(peer: Peer, objs: list[Any]) -> tuple[Optional[bytes], Any, dict[str, Any]]:
    packet = peer.pack([peer.feed(obj) for obj in objs])
    data, decoded, failure = round_trip(peer.encode_many, lambda d: [peer.back(item) for item in peer.unpack(peer.decode_many(d))], packet)
    problem = failure or first_difference(objs, decoded, refs=False)
    return data, packet, {"ok": problem is None, "detail": problem or ""}


def _base_row(peer: Peer, case: str, message: str, count: int, iterations: int) -> dict[str, Any]:
    return {
        "case": case,
        "message": message,
        "count": count,
        "iterations": iterations,
        "peer": peer.name,
        "library": peer.library,
        "format": peer.format,
        "slow": peer.slow,
        "check": {"ok": False, "detail": "not run"},
        "bytes": None,
        "bytes_per_message": None,
        "encode": None,
        "decode": None,
        "encode_us": None,
        "decode_us": None,
    }


def _run_single(peer: Peer, message: str, obj: Any, options: Options) -> dict[str, Any]:
    iterations = options.slow_iterations if peer.slow else options.iterations
    repeat = min(options.repeat, options.slow_repeat) if peer.slow else options.repeat
    row = _base_row(peer, "single", message, 1, iterations)
    with peer_libs.quietly(peer.noisy):
        data, row["check"] = _check_one(peer, obj)
        if data is None or not row["check"]["ok"]:
            row["bytes"] = None if data is None else len(data)
            return row
        row["bytes"] = row["bytes_per_message"] = len(data)
        native = peer.feed(obj)
        # A series is thousands of calls; the slow peers were warmed up by the check.
        warmup = 0 if peer.slow else 1
        encode = measure(_series(peer.encode, native, iterations), repeat=repeat, warmup=warmup)
        decode = measure(_series(peer.decode, data, iterations), repeat=repeat, warmup=warmup)
    row["encode"], row["decode"] = encode.to_dict(), decode.to_dict()
    row["encode_us"] = encode.wall.median * 1e6 / iterations
    row["decode_us"] = decode.wall.median * 1e6 / iterations
    return row


def _run_packet(peer: Peer, message: str, objs: list[Any], options: Options) -> dict[str, Any]:
    count = len(objs)
    repeat = min(options.repeat, options.slow_repeat) if peer.slow else options.repeat
    row = _base_row(peer, "packet", message, count, 1)
    row["bytes_gzip"] = None
    with peer_libs.quietly(peer.noisy):
        data, packet, row["check"] = _check_many(peer, objs)
        if data is None or not row["check"]["ok"]:
            row["bytes"] = None if data is None else len(data)
            return row
        # The check warmed the slow peers up; the others get one untimed call.
        warmup = 0 if peer.slow else 1
        encode = measure(peer.encode_many, packet, repeat=repeat, warmup=warmup)
        decode = measure(peer.decode_many, data, repeat=repeat, warmup=warmup)
    row["bytes"] = len(data)
    row["bytes_per_message"] = len(data) / count
    row["bytes_gzip"] = len(gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0))
    row["encode"], row["decode"] = encode.to_dict(), decode.to_dict()
    row["encode_us"] = encode.wall.median * 1e6 / count
    row["decode_us"] = decode.wall.median * 1e6 / count
    return row


def _loop_floor_us(iterations: int) -> float:
    """Microseconds per iteration of the timing loop around a no-op builtin call: the
    part of each per-message figure that is the loop, not the codec."""
    m = measure(_series(id, None, iterations), repeat=5, warmup=1)
    return m.wall.min * 1e6 / iterations


def _run_child_protobuf_python(options: Options, progress: Callable[[str], None]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The `protobuf` peer under protobuf's pure-Python backend, in a child process (the
    backend is fixed when protobuf is first imported). Returns its rows and facts."""
    import amfkit

    root = str(Path(amfkit.__file__).resolve().parents[1])
    env = dict(os.environ)
    env[_PB_ENV] = "python"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="amfkit-instruments-") as tmp:
        out = os.path.join(tmp, "child.json")
        command = [
            sys.executable, "-m", "amfkit_bench.instruments",
            "--peers", "protobuf",
            "--messages", ",".join(options.messages),
            "--iterations", str(options.slow_iterations),
            "--slow-iterations", str(options.slow_iterations),
            "--packets", ",".join(map(str, options.packets)),
            "--repeat", str(min(options.repeat, options.slow_repeat)),
            "--quiet", "--json", out,
        ]  # fmt: skip
        progress("protobuf (python): child process")
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if not os.path.exists(out):
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise RuntimeError(f"child exited with {done.returncode}: {' | '.join(tail)}")
        with open(out, encoding="utf-8") as f:
            child = json.load(f)
    return child["results"], child.get("protobuf") or {}


def run(options: Options) -> dict[str, Any]:
    """Run the experiment; return the report (JSON-ready: plain dicts, lists, numbers, strings)."""
    unknown = [m for m in options.messages if m not in MESSAGES] + [p for p in options.peers if p not in PEER_KEYS]
    if unknown:
        raise ValueError(f"unknown message or peer name(s): {', '.join(unknown)}")
    from amfkit.demo.services import instrument_price

    report_progress = options.progress or (lambda message, done=None, total=None: None)
    versions: dict[str, Any] = {"python": sys.version.split()[0]}
    skipped: list[dict[str, str]] = []
    errors: list[str] = []
    machine = machine_facts()  # load average before the run loads the machine
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    floor_us = _loop_floor_us(options.iterations)
    with _peer_factory(options, versions, skipped) as peers_for:
        peers = {message: peers_for(message) for message in options.messages}
        child = "protobuf-python" in options.peers
        total = sum(len(p) for p in peers.values()) * (1 + len(options.packets)) + int(child)
        done = itertools.count()

        def progress(message: str) -> None:
            report_progress(message, next(done), total)

        for message in options.messages:
            obj = instrument_price(message, 0)
            for peer in peers[message]:
                progress(f"{message}, one message x{options.slow_iterations if peer.slow else options.iterations:,}: {peer.name}")
                rows.append(_run_single(peer, message, obj, options))
        for message in options.messages:
            for count in options.packets:
                objs = [instrument_price(message, i) for i in range(count)]
                for peer in peers[message]:
                    progress(f"{message}, packet of {count:,}: {peer.name}")
                    rows.append(_run_packet(peer, message, objs, options))
    protobuf = _protobuf_facts() if "module" in _PROTO_CACHE else None
    if "protobuf-python" in options.peers:
        if protobuf is None and importlib.util.find_spec("google.protobuf") is None:
            skipped.append({"peer": "protobuf (python)", "reason": "protobuf is not installed"})
        elif protobuf is not None and protobuf["backend"] == "python":
            skipped.append({"peer": "protobuf (python)", "reason": "this process already runs the pure-Python backend"})
        else:
            try:
                child_rows, child_facts = _run_child_protobuf_python(options, progress)
            except (OSError, RuntimeError, ValueError, KeyError) as exc:
                errors.append(f"protobuf (python): {exc}")
            else:
                rows += child_rows
                if child_facts:
                    versions["protobuf (child)"] = f"{child_facts.get('protobuf')} ({child_facts.get('backend')})"
    machine["versions"] = versions
    messages = {}
    for message in options.messages:
        obj = instrument_price(message, 0)
        scalars, dates = _split(type(obj).FIELDS)
        texts = [getattr(obj, name) for name in scalars if isinstance(getattr(obj, name), str)]
        messages[message] = {
            "class": type(obj).__name__,
            "fields": len(type(obj).FIELDS),
            "value_dates": len(dates),
            "text_bytes": sum(len(text.encode("utf-8")) for text in texts),
        }
    rows = _ordered(rows, options)
    add_ratios(
        rows, BASELINE, lambda row: (row["case"], row["message"], row["count"]),
        {"encode": lambda row: row["encode_us"], "decode": lambda row: row["decode_us"], "bytes": lambda row: row["bytes"]},
    )
    return {
        "experiment": NAME,
        "summary": SUMMARY,
        "options": options_dict(options),
        "machine": machine,
        "baseline": BASELINE,
        "protobuf": protobuf,
        "messages": messages,
        "loop_floor_us": floor_us,
        "article_figures": ARTICLE_FIGURES,
        "elapsed_s": round(time.perf_counter() - started, 3),
        "results": rows,
        "skipped": skipped,
        "errors": errors,
        "ok": not errors and all(row["check"]["ok"] for row in rows),
    }


def _ordered(rows: list[dict[str, Any]], options: Options) -> list[dict[str, Any]]:
    """Rows grouped by case, message and count (the child's rows join their groups)."""
    messages = {m: i for i, m in enumerate(options.messages)}
    counts = {c: i for i, c in enumerate(options.packets)}

    def key(item: tuple[int, dict[str, Any]]) -> tuple[int, int, int, int]:
        index, row = item
        case = 0 if row["case"] == "single" else 1
        return (case, messages.get(row["message"], 99), -1 if case == 0 else counts.get(row["count"], 99), index)

    return [row for _, row in sorted(enumerate(rows), key=key)]


# --------------------------------------------------------------------------- figures


def _find(report: dict[str, Any], case: str, message: str, peer: str, count: int = 1) -> Optional[dict[str, Any]]:
    for row in report["results"]:
        if row["case"] == case and row["message"] == message and row["peer"] == peer and row["count"] == count:
            return row if row["check"]["ok"] else None
    return None


def _peers(report: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(row["peer"] for row in report["results"]))


def _protobuf_peer(report: dict[str, Any]) -> Optional[str]:
    """The in-process protobuf peer's name (fed generated messages)."""
    for name in _peers(report):
        if name.startswith("protobuf (") and not name.endswith("+classes") and name != "protobuf (python)":
            return name
    for name in _peers(report):
        if name == "protobuf (python)":
            return name
    return None


def _span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return fmt_factor(lo) if abs(hi - lo) < 0.05 * lo else f"{fmt_factor(lo)}-{fmt_factor(hi)}"


def _article_us(kind: str, fmt: str, index: int) -> tuple[float, float, float]:
    """The article's time per message in µs: (mean, mean - sd, mean + sd)."""
    mean, sd = ARTICLE_FIGURES[kind][fmt][index]
    scale = 1e3 / ARTICLE_FIGURES["iterations"]
    return mean * scale, (mean - sd) * scale, (mean + sd) * scale


def _title(message: str) -> str:
    return message.capitalize()


def _single_table(report: dict[str, Any]) -> Table:
    headers = ["message", "peer", "n", "bytes", "serialize ms (min-max) = per message", "deserialize ms (min-max) = per message", "ser. vs AMF3", "deser. vs AMF3", "check"]
    rows = []
    for row in report["results"]:
        if row["case"] != "single":
            continue
        ratios = row.get("vs_baseline") or {}
        rows.append(
            [
                _title(row["message"]),
                row["peer"],
                f"{row['iterations']:,} x{(row['encode'] or {}).get('repeat', '-')}",
                row["bytes"] if row["bytes"] is not None else "-",
                timing_cell(row["encode"], per=row["iterations"]),
                timing_cell(row["decode"], per=row["iterations"]),
                ratio_cell(ratios.get("encode"), baseline=row["peer"] == BASELINE),
                ratio_cell(ratios.get("decode"), baseline=row["peer"] == BASELINE),
                "ok" if row["check"]["ok"] else "FAILED",
            ]
        )
    return Table(headers, rows)


def _packet_table(report: dict[str, Any]) -> Table:
    headers = ["message", "N", "peer", "bytes", "per message", "alone", "gzip -6", "encode ms = per message", "decode ms = per message", "check"]
    rows = []
    for row in report["results"]:
        if row["case"] != "packet":
            continue
        alone = _find(report, "single", row["message"], row["peer"])
        rows.append(
            [
                _title(row["message"]),
                f"{row['count']:,}",
                row["peer"],
                f"{row['bytes']:,}" if row["bytes"] is not None else "-",
                f"{row['bytes_per_message']:.1f}" if row["bytes_per_message"] is not None else "-",
                alone["bytes"] if alone else "-",
                f"{row['bytes_gzip']:,}" if row.get("bytes_gzip") is not None else "-",
                timing_cell(row["encode"], per=row["count"]),
                timing_cell(row["decode"], per=row["count"]),
                "ok" if row["check"]["ok"] else "FAILED",
            ]
        )
    return Table(headers, rows)


def _bars(report: dict[str, Any], case: str, key: str, count: int = 1) -> list[Bar]:
    bars = []
    for row in report["results"]:
        if row["case"] != case or row["count"] != count or not row["check"]["ok"]:
            continue
        per = row["iterations"] if case == "single" else row["count"]
        label = f"{_title(row['message'])} · {row['peer']}"
        if key == "bytes":
            if row["bytes_per_message"] is not None:
                bars.append(Bar(label, float(row["bytes_per_message"]), group=row["peer"]))
        elif row[key]:
            bars.append(timing_bar(label, row[key], row["peer"], scale=1e3 / per))
    return bars


def _article_bars(report: dict[str, Any], kind: str) -> list[Bar]:
    bars = []
    for fmt, short in (("AMF3", "AMF3"), ("Protocol Buffers", "protobuf")):
        for index, message in enumerate(MESSAGES):
            if message not in report["options"]["messages"]:
                continue
            label = f"{_title(message)} · article {short} (Flash 10)"
            if kind == "bytes":
                bars.append(Bar(label, float(ARTICLE_FIGURES["bytes"][fmt][index]), group=f"article {short}"))
            else:
                mean, low, high = _article_us(kind, fmt, index)
                bars.append(Bar(label, mean, low, high, group=f"article {short}"))
    return bars


def _article_lines() -> list[str]:
    names = "Small / Medium / Large"
    lines = [ARTICLE_FIGURES["source"] + f"; {ARTICLE_FIGURES['runs']} runs per class, each {ARTICLE_FIGURES['iterations']:,} calls on one object"]
    for fmt in ("AMF3", "Protocol Buffers"):
        lines.append(f"{fmt} size, {names}: " + " / ".join(str(b) for b in ARTICLE_FIGURES["bytes"][fmt]) + " bytes")
    for kind, what in (("serialize_ms", "serialization"), ("deserialize_ms", "deserialization")):
        for fmt in ("AMF3", "Protocol Buffers"):
            figures = " / ".join(f"{mean:,.2f} ± {sd:.2f}" for mean, sd in ARTICLE_FIGURES[kind][fmt])
            lines.append(f"{fmt} {what} of {ARTICLE_FIGURES['iterations']:,}, {names}: {figures} ms (mean ± sd)")
    return lines


def _rows_by_message(report: dict[str, Any], case: str, peer: Optional[str], count: int = 1) -> dict[str, dict[str, Any]]:
    """message -> the passing row of `peer` in `case` (messages in run order)."""
    out: dict[str, dict[str, Any]] = {}
    if peer is None:
        return out
    for message in MESSAGES:
        row = _find(report, case, message, peer, count)
        if row is not None:
            out[message] = row
    return out


def _single_findings(report: dict[str, Any]) -> list[str]:
    out: list[str] = []
    pb_name = _protobuf_peer(report)
    amf = _rows_by_message(report, "single", BASELINE)
    pb = _rows_by_message(report, "single", pb_name)
    pairs = [m for m in amf if m in pb]
    index = MESSAGES.index
    if pairs:
        ours = [amf[m]["bytes"] / pb[m]["bytes"] for m in pairs]
        theirs = [ARTICLE_FIGURES["bytes"]["AMF3"][index(m)] / ARTICLE_FIGURES["bytes"]["Protocol Buffers"][index(m)] for m in pairs]
        sizes = ", ".join(f"{_title(m)} {pb[m]['bytes']} vs {amf[m]['bytes']}" for m in pairs)
        out.append(
            f"One message: protobuf is {_span(ours)} smaller than amfkit AMF3 ({sizes} bytes); the article "
            f"measured {_span(theirs)}. Alone, an AMF3 message carries its class alias and every member name."
        )
        amf_vs_article = [amf[m]["bytes"] / ARTICLE_FIGURES["bytes"]["AMF3"][index(m)] for m in pairs]
        pb_vs_article = [pb[m]["bytes"] / ARTICLE_FIGURES["bytes"]["Protocol Buffers"][index(m)] for m in pairs]
        texts = report.get("messages", {})
        text_bytes = " / ".join(str(texts[m]["text_bytes"]) for m in pairs if m in texts)
        out.append(
            f"Our AMF3 messages are {_span(amf_vs_article)} the size of the article's and our protobuf ones "
            f"{_span(pb_vs_article)}: the member names are the article's, but its string values must have been very "
            f"short (a {ARTICLE_FIGURES['bytes']['Protocol Buffers'][0]}-byte protobuf Small holds two ints, two strings and "
            f"two dates), ours are quote texts ({text_bytes} bytes of UTF-8 per message), which weigh more in "
            "protobuf's smaller messages."
        )
        for key, kind, what in (("encode", "serialize_ms", "serializes"), ("decode", "deserialize_ms", "deserializes")):
            ok = [m for m in pairs if amf[m][f"{key}_us"] and pb[m][f"{key}_us"]]
            if not ok:
                continue
            ratios = [pb[m][f"{key}_us"] / amf[m][f"{key}_us"] for m in ok]
            article_ratios = [ARTICLE_FIGURES[kind]["Protocol Buffers"][index(m)][0] / ARTICLE_FIGURES[kind]["AMF3"][index(m)][0] for m in ok]
            ours_us = " / ".join(fmt_figure(amf[m][f"{key}_us"]) for m in ok)
            theirs_us = " / ".join(fmt_figure(pb[m][f"{key}_us"]) for m in ok)
            out.append(
                f"amfkit AMF3 {what} one {'/'.join(_title(m) for m in ok)} message in {ours_us} µs, {pb_name} in "
                f"{theirs_us} µs: protobuf is {_verdict(ratios)}; in the article protobuf was "
                f"{_verdict(article_ratios)} (interpreted ActionScript against Flash Player's native AMF3)."
            )
    classes = _rows_by_message(report, "single", f"{pb_name} +classes" if pb_name else None)
    for key, what in (("encode", "serialization"), ("decode", "deserialization")):
        ok = [m for m in pb if m in classes and pb[m][f"{key}_us"] and classes[m][f"{key}_us"]]
        if ok:
            plain = [pb[m][f"{key}_us"] for m in ok]
            conv = [classes[m][f"{key}_us"] for m in ok]
            out.append(
                f"Converting between the Python classes and protobuf messages turns protobuf's {what} from "
                f"{' / '.join(fmt_figure(v) for v in plain)} µs into {' / '.join(fmt_figure(v) for v in conv)} µs per message "
                f"({_span([c / p for c, p in zip(conv, plain)])}): the conversion, in Python, dominates."
            )
    for peer, intro in (
        ("protobuf (python)", "protobuf's pure-Python backend (the closest to the article's interpreted protobuf)"),
        ("py3amf AMF3", "Py3AMF (pure Python)"),
        ("py3amf-ext AMF3", "Py3AMF with its Cython extension"),
    ):
        rows = _rows_by_message(report, "single", peer) if peer != pb_name else {}
        ok = [m for m in amf if m in rows and rows[m]["encode_us"] and rows[m]["decode_us"]]
        if ok:
            enc = [rows[m]["encode_us"] / amf[m]["encode_us"] for m in ok]
            dec = [rows[m]["decode_us"] / amf[m]["decode_us"] for m in ok]
            out.append(f"{intro} serializes one message {_verdict(enc)} and deserializes it {_verdict(dec)} than amfkit AMF3.")
    floor = report.get("loop_floor_us")
    fastest = [row["encode_us"] for row in amf.values() if row["encode_us"]]
    if floor and fastest:
        out.append(
            f"Per-message times include the Python call and loop around each call ({floor:.3f} µs for a no-op "
            f"builtin), {100 * floor / min(fastest):.0f}% of amfkit AMF3's fastest figure."
        )
    return out


def _verdict(ratios: list[float]) -> str:
    """Peer time / baseline time ratios as "2.1x-3.4x slower", "1.2x faster", or mixed."""
    if all(r >= 1 for r in ratios):
        return f"{_span(ratios)} slower"
    if all(r < 1 for r in ratios):
        return f"{_span([1 / r for r in ratios])} faster"
    return "between " + " and ".join(than(r, "slower", "faster") for r in (min(ratios), max(ratios)))


def _packet_findings(report: dict[str, Any]) -> list[str]:
    out: list[str] = []
    counts = report["options"]["packets"]
    if not counts:
        return out
    big = max(counts)
    pb_name = _protobuf_peer(report)
    for message in [m for m in MESSAGES if m in report["options"]["messages"]]:
        amf_alone = _find(report, "single", message, BASELINE)
        amf_pack = _find(report, "packet", message, BASELINE, big)
        if not amf_alone or not amf_pack:
            continue
        line = (
            f"{_title(message)}, {big:,} in one packet: AMF3 needs {amf_pack['bytes_per_message']:.1f} bytes per "
            f"message against {amf_alone['bytes']} alone ({fmt_factor(amf_alone['bytes'] / amf_pack['bytes_per_message'])} "
            "less: traits and repeated strings are written once)"
        )
        pb_pack = _find(report, "packet", message, pb_name, big) if pb_name else None
        if pb_pack:
            ratio = amf_pack["bytes_per_message"] / pb_pack["bytes_per_message"]
            line += (
                f"; protobuf's repeated field {pb_pack['bytes_per_message']:.1f} bytes per message, so AMF3 is "
                f"{than(ratio, 'larger', 'smaller')}"
            )
            if amf_pack.get("bytes_gzip") and pb_pack.get("bytes_gzip"):
                g = amf_pack["bytes_gzip"] / pb_pack["bytes_gzip"]
                same = abs(g - 1) < 0.03
                line += " (about the same gzipped)" if same else f" ({than(g, 'larger', 'smaller')} gzipped)"
        out.append(line + ".")
    amf_times = []
    for message in [m for m in MESSAGES if m in report["options"]["messages"]]:
        alone = _find(report, "single", message, BASELINE)
        pack = _find(report, "packet", message, BASELINE, big)
        if alone and pack and pack["encode_us"] and pack["decode_us"]:
            amf_times.append((alone["encode_us"] / pack["encode_us"], alone["decode_us"] / pack["decode_us"]))
    if amf_times:
        enc = [e for e, _ in amf_times]
        dec = [d for _, d in amf_times]
        out.append(
            f"In a packet of {big:,}, amfkit AMF3 spends {_than_span(enc)} per message encoding and "
            f"{_than_span(dec)} decoding than for a message alone (one call instead of {big:,}, shared traits)."
        )
    if pb_name:
        pairs = []
        for message in MESSAGES:
            a = _find(report, "packet", message, BASELINE, big)
            p = _find(report, "packet", message, pb_name, big)
            if a and p:
                pairs.append((a, p))
        if pairs:
            enc = [p["encode_us"] / a["encode_us"] for a, p in pairs]
            dec = [p["decode_us"] / a["decode_us"] for a, p in pairs]
            out.append(f"Packets of {big:,}: {pb_name} encodes {_verdict(enc)} and decodes {_verdict(dec)} than amfkit AMF3.")
    return out


def _than_span(ratios: list[float]) -> str:
    """alone/packet time ratios as "3.1x-4.0x less" or "1.2x more"."""
    if all(r >= 1 for r in ratios):
        return f"{_span(ratios)} less time"
    if all(r < 1 for r in ratios):
        return f"{_span([1 / r for r in ratios])} more time"
    return "about as much time"


def sections(report: dict[str, Any]) -> list[Section]:
    """The report's sections: one message at a time (with the article's figures), then packets."""
    options = report["options"]
    pb = report.get("protobuf") or {}
    backend = f"protobuf {pb.get('protobuf')} with its {pb.get('backend')} backend" if pb else "protobuf (not run)"
    single = Section(
        title=f"instruments: one InstrumentPrice message at a time ({ARTICLE})",
        intro=(
            f"Small, Medium and Large InstrumentPrice objects (2, 4, 6 each of ints, strings and nested ValueDate "
            f"objects). Each series makes {options['iterations']:,} serializations of one message, or "
            f"{options['iterations']:,} deserializations of its bytes, one message per call (slow pure-Python "
            f"peers: {options['slow_iterations']:,}); figures are the median series with min-max over the "
            f"repetitions, per message in µs. Every peer's round trip was checked field by field first. "
            f"Protocol Buffers: {backend}; '+classes' includes the conversion from and to the Python classes. "
            "The article's bars are Flash Player 10 and protoc-gen-as3 in 2010 (mean ± sd), another machine "
            "and runtime: compare ratios, not absolute times."
        ),
        tables=[_single_table(report)],
        charts=[
            Chart("Size of one message", "bytes", _bars(report, "single", "bytes"), reference=_article_bars(report, "bytes")),
            Chart("Serialization, one message per call", "µs per message", _bars(report, "single", "encode"), log=True, reference=_article_bars(report, "serialize_ms")),
            Chart("Deserialization, one message per call", "µs per message", _bars(report, "single", "decode"), log=True, reference=_article_bars(report, "deserialize_ms")),
        ],
        article=_article_lines(),
        findings=_single_findings(report),
    )
    big = max(options["packets"]) if options["packets"] else None
    packet = Section(
        title="instruments: many messages in one packet",
        intro=(
            "N InstrumentPrice objects with varied values in one AMF array (one encode call) against N protobuf "
            "messages in a wrapper message's repeated field. AMF3 writes each class's traits and each distinct "
            "string once per packet and refers back to them; protobuf repeats its field tags in every message. "
            "The article did not measure this case."
        ),
        tables=[_packet_table(report)],
        charts=(
            [
                Chart(f"Bytes per message, {big:,} in one packet", "bytes", _bars(report, "packet", "bytes", big)),
                Chart(f"Encoding, {big:,} in one packet", "µs per message", _bars(report, "packet", "encode", big), log=True),
                Chart(f"Decoding, {big:,} in one packet", "µs per message", _bars(report, "packet", "decode", big), log=True),
            ]
            if big
            else []
        ),
        findings=_packet_findings(report),
    )
    return [single, packet]


# --------------------------------------------------------------------------- text report


def format_report(report: dict[str, Any]) -> str:
    """The report as plain text: both tables, the article's figures, findings, machine."""
    single, packet = sections(report)
    out = [
        f"amfkit bench instruments: {SUMMARY}",
        "times: wall-clock ms for the whole series, median (min-max) of the repetitions, = µs per message;",
        f"'n' is calls per series x repetitions; ratios compare per-message medians with {BASELINE}.",
        "",
        single.title,
        *text_table(single.tables[0].headers, single.tables[0].rows, {2, 3, 4, 5, 6, 7}),
        "",
        "the article's figures:",
        *(f"  {line}" for line in single.article),
        "",
        packet.title,
        *text_table(packet.tables[0].headers, packet.tables[0].rows, {1, 3, 4, 5, 6, 7, 8}),
        "",
        "findings:",
        *(f"- {line}" for line in single.findings + packet.findings),
    ]
    failures = [
        f"  {row['case']} {row['message']} x{row['count']} / {row['peer']}: {row['check']['detail']}"
        for row in report["results"]
        if not row["check"]["ok"]
    ]
    if failures:
        out += ["", "correctness checks FAILED:", *failures]
    for error in report.get("errors", []):
        out.append(f"ERROR {error}")
    for skip in report["skipped"]:
        out.append(f"skipped {skip['peer']}: {skip['reason']}")
    out += machine_lines(report)
    pb = report.get("protobuf") or {}
    for warning in pb.get("import_warnings", []):
        out.append(f"protobuf import warning: {warning}")
    return "\n".join(out)


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="amfkit bench instruments", description=SUMMARY)
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_ITERATIONS:,} calls per series ({QUICK_SLOW_ITERATIONS} for pure-Python peers), "
        f"packets of {','.join(map(str, QUICK_PACKETS))}, 1 repetition",
    )
    parser.add_argument("--messages", default=",".join(MESSAGES), help=f"comma-separated message classes (default {','.join(MESSAGES)})")
    parser.add_argument("--iterations", type=int, help=f"calls per series (default {DEFAULT_ITERATIONS:,}; --quick: {QUICK_ITERATIONS:,})")
    parser.add_argument("--slow-iterations", type=int, help=f"calls per series for pure-Python peers (default: --iterations; --quick: {QUICK_SLOW_ITERATIONS})")
    parser.add_argument("--packets", help=f"comma-separated messages per packet (default {','.join(map(str, DEFAULT_PACKETS))}; 'none' to skip)")
    parser.add_argument("--repeat", type=int, help=f"timed repetitions (default {DEFAULT_REPEAT}; --quick: 1; pure-Python peers at most {SLOW_REPEAT_CAP})")
    parser.add_argument("--peers", default=",".join(PEER_KEYS), help=f"comma-separated peers (default: {','.join(PEER_KEYS)})")
    parser.add_argument("--no-py3amf", action="store_true", help="leave out Py3AMF (the slowest peer)")
    parser.add_argument("--json", metavar="PATH", help="also write the results and machine facts as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def _names(text: str, choices: tuple[str, ...], what: str, parser: argparse.ArgumentParser) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(name.strip().lower() for name in text.split(",") if name.strip()))
    if not chosen or any(name not in choices for name in chosen):
        parser.error(f"--{what}: choose from {','.join(choices)}")
    return chosen


def parse_options(argv: Optional[list[str]] = None) -> Options:
    """Command-line arguments -> `Options` (exits with status 2 on bad arguments, as argparse does)."""
    parser = _parser()
    args = parser.parse_args(argv)
    iterations = args.iterations if args.iterations is not None else (QUICK_ITERATIONS if args.quick else DEFAULT_ITERATIONS)
    slow = args.slow_iterations if args.slow_iterations is not None else (min(QUICK_SLOW_ITERATIONS, iterations) if args.quick else iterations)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else DEFAULT_REPEAT)
    for name, value in (("--iterations", iterations), ("--slow-iterations", slow), ("--repeat", repeat)):
        if value < 1:
            parser.error(f"{name} must be at least 1")
    packets: tuple[int, ...]
    if args.packets is None:
        packets = QUICK_PACKETS if args.quick else DEFAULT_PACKETS
    elif args.packets.strip().lower() in ("", "none", "0"):
        packets = ()
    else:
        try:
            packets = tuple(dict.fromkeys(int(p) for p in args.packets.split(",") if p.strip()))
        except ValueError:
            parser.error("--packets: comma-separated counts, e.g. 100,10000")
        if any(p < 1 or p > 1_000_000 for p in packets):
            parser.error("--packets: each count from 1 to 1,000,000")
    peers = _names(args.peers, PEER_KEYS, "peers", parser)
    if args.no_py3amf:
        peers = tuple(p for p in peers if p != "py3amf")
    progress = None if args.quiet else (lambda message, done=None, total=None: print(f"instruments: {message}", file=sys.stderr, flush=True))
    return Options(
        messages=_names(args.messages, MESSAGES, "messages", parser),
        iterations=iterations,
        slow_iterations=slow,
        packets=packets,
        repeat=repeat,
        slow_repeat=min(repeat, SLOW_REPEAT_CAP),
        peers=peers,
        quick=args.quick,
        json_path=args.json,
        progress=progress,
    )


def main(argv: Optional[list[str]] = None) -> int:
    """`amfkit bench instruments [options]`: print the report; 0 if every check passed, else 1."""
    return experiment_main(argv, parse_options, run, format_report)


if __name__ == "__main__":
    sys.exit(main())
