"""Run hostile inputs in a child process with a memory cap and a deadline.

The parent side (`run`, `Case`, `Outcome`, the `expect_*` helpers) is imported by the
tests; the child side is this same file run as a script (`python harness.py`), which
reads a batch of cases as JSON on stdin, caps its address space, imports amfkit, and
runs each case, writing one JSON line per case:

    S <index>            before the case (so a crash or a hang names the input)
    R {...}              its outcome: "ok" with the op's JSON result, "DecodeError" /
                         "EncodeError" with offset, path and reason, or "error" with the
                         exception type (any other exception is a failure of the case)
    D {...}              the batch is done

Each result carries the case's wall time, the peak RSS during the case (Linux: VmHWM,
reset through /proc/self/clear_refs before each case) and its growth over the RSS at the
case's start, and the child's ru_maxrss. A child that dies (signal, abort, a Rust
allocation failure under the cap) or outlives its deadline fails the case it was running;
the remaining cases go to a fresh child.

Bounds (the tests assert them; `CASE_SECONDS` and `RSS_GROWTH_KB` are the defaults):
    memory cap     RLIMIT_AS = 1 GiB for the child (amfkit and the gateway import in ~30 MiB)
    time           every single input decodes or fails in under CASE_SECONDS (1 s) of CPU
                   time, even the 100,000-deep ones and the gzip bombs (CPU time, not wall
                   time: a loaded machine that preempts the child does not fail a case;
                   a hang is caught by the child's deadline, CHILD_TIMEOUT, 60 s)
    memory         the child's peak RSS grows by less than RSS_GROWTH_KB (32 MiB) while
                   one hostile input is decoded, unless a test states another bound
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIXTURES = ROOT / "fixtures"
#: tests/support: the shared helpers (the child imports gateway_util and wire from it).
SUPPORT = ROOT / "tests" / "support"

MEMORY_CAP = 1 << 30
CASE_SECONDS = 1.0
CHILD_TIMEOUT = 60.0
RSS_GROWTH_KB = 32 * 1024
#: The longest text of an amfkit error, whatever the input (SECURITY.md): a reason of at
#: most 1,024 characters, a path of at most 16 segments of at most 64 characters each.
MAX_ERROR_TEXT = 3 * 1024


# --- the parent side -----------------------------------------------------------------


@dataclass
class Case:
    """One input: `op` names a child function (`op_<name>` below) called as
    `op(data, **kw)`."""

    id: str
    op: str
    data: bytes = b""
    kw: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    case: Case
    status: str  # ok, DecodeError, EncodeError, error, crash, hang
    value: Any = None
    offset: int | None = None
    path: str | None = None
    reason: str | None = None
    type: str | None = None
    message: str | None = None
    elapsed: float = 0.0
    cpu: float = 0.0
    rss_kb: int = 0
    rss_growth_kb: int = 0
    maxrss_kb: int = 0
    detail: str = ""
    text_len: int = 0  # characters of str(error) for a DecodeError or EncodeError

    def describe(self) -> str:
        """Everything needed to reproduce and judge a failure, with the input in hex."""
        parts = [
            f"case {self.case.id!r}: op {self.case.op}({show(self.case.data)}, **{self.case.kw!r})",
            f"status {self.status}",
        ]
        if self.status in ("DecodeError", "EncodeError"):
            parts.append(f"reason {self.reason!r} at offset {self.offset} path {self.path!r}")
        if self.type:
            parts.append(f"{self.type}: {self.message}")
        if self.value is not None:
            parts.append(f"value {str(self.value)[:600]}")
        parts.append(
            f"{self.elapsed * 1000:.1f} ms ({self.cpu * 1000:.1f} ms CPU), peak RSS during the case {self.rss_kb} KiB (+{self.rss_growth_kb} KiB), "
            f"child's ru_maxrss {self.maxrss_kb} KiB"
        )
        if self.detail:
            parts.append(self.detail)
        return "\n  ".join(parts)


def show(data: bytes, head: int = 96, tail: int = 24) -> str:
    """Hex of an input, shortened in the middle when long."""
    if len(data) <= head + tail:
        return f"hex {data.hex()} ({len(data)} bytes)"
    return f"hex {data[:head].hex()}...{data[-tail:].hex()} ({len(data)} bytes)"


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(ROOT / "python"), str(SUPPORT)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONWARNINGS"] = "error"
    env["PYTHONFAULTHANDLER"] = "1"
    env.setdefault("PYTHONIOENCODING", "utf-8")
    return env


def run(
    cases: Iterable[Case],
    *,
    mem: int = MEMORY_CAP,
    timeout: float = CHILD_TIMEOUT,
    env: dict[str, str] | None = None,
) -> dict[str, Outcome]:
    """Run every case in child processes; a case that kills or hangs its child is
    recorded as "crash" or "hang" and the rest go on in a new child. `env` adds to the
    children's environment (PYTHONMALLOC=debug, say: freed memory is overwritten, so a
    read after free shows)."""
    pending = list(cases)
    ids = [c.id for c in pending]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    results: dict[str, Outcome] = {}
    while pending:
        payload = json.dumps(
            {
                "mem": mem,
                "cases": [
                    {"id": c.id, "op": c.op, "data": base64.b64encode(c.data).decode(), "kw": c.kw} for c in pending
                ],
            }
        ).encode()
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "harness.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env() | (env or {}),
            cwd=str(ROOT),
        )
        hung = False
        try:
            out, err = proc.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            hung = True
            proc.kill()
            out, err = proc.communicate()
        started: int | None = None
        done = False
        for line in out.decode("utf-8", "replace").splitlines():
            tag, _, rest = line.partition(" ")
            if tag == "S":
                started = int(rest)
            elif tag == "R":
                r = json.loads(rest)
                case = pending[r.pop("index")]
                results[case.id] = Outcome(case, **r)
                started = None
            elif tag == "D":
                done = True
        if done and not hung and proc.returncode == 0:
            break
        tail = err.decode("utf-8", "replace")[-3000:]
        if started is None:
            # died before or between cases: nothing to blame, so the run itself fails
            raise RuntimeError(f"hostile-input child failed outside any case (exit {proc.returncode}):\n{tail}")
        culprit = pending[started]
        status = "hang" if hung else "crash"
        results[culprit.id] = Outcome(
            culprit, status, detail=f"child exit {proc.returncode} after {timeout if hung else '?'} s; stderr:\n{tail}"
        )
        pending = pending[started + 1 :]
    return results


def expect_decode_error(o: Outcome, *, match: str | None = None, seconds: float = CASE_SECONDS, rss_kb: int = RSS_GROWTH_KB) -> None:
    """A clean DecodeError (with an offset inside the input), within the time and memory
    bounds."""
    assert o.status == "DecodeError", o.describe()
    assert o.offset is not None and 0 <= o.offset <= len(o.case.data), o.describe()
    assert o.text_len <= MAX_ERROR_TEXT, f"an error text of {o.text_len} characters\n  " + o.describe()
    if match is not None:
        assert match in (o.reason or ""), f"expected {match!r} in the reason\n  " + o.describe()
    expect_bounds(o, seconds=seconds, rss_kb=rss_kb)


def expect_ok(o: Outcome, *, seconds: float = CASE_SECONDS, rss_kb: int = RSS_GROWTH_KB) -> Any:
    assert o.status == "ok", o.describe()
    expect_bounds(o, seconds=seconds, rss_kb=rss_kb)
    return o.value


def expect_bounds(o: Outcome, *, seconds: float = CASE_SECONDS, rss_kb: int = RSS_GROWTH_KB) -> None:
    assert o.cpu < seconds, f"more than {seconds} s of CPU\n  " + o.describe()
    assert o.rss_growth_kb < rss_kb, f"peak RSS grew by {o.rss_growth_kb} KiB, bound {rss_kb} KiB\n  " + o.describe()


# --- the child side ------------------------------------------------------------------
# Everything below runs only in the child (python harness.py).

WATCHING = False
EVENTS: list[str] = []
CALLS: list[str] = []

#: Audit events that would mean an input reached outside the decoder.
WATCHED_EVENTS = (
    "import",
    "open",
    "os.",
    "subprocess.",
    "socket.",
    "urllib.",
    "exec",
    "compile",
    "ctypes.",
    "pickle.",
    "marshal.",
    "builtins.input",
    "shutil.",
)


def _audit(event: str, args: tuple) -> None:
    if WATCHING and event.startswith(WATCHED_EVENTS):
        EVENTS.append(f"{event} {str(args)[:120]}")


class Recorder:
    """A registered class that records every way it could be built or changed."""

    def __new__(cls, *args: Any, **kwargs: Any) -> "Recorder":
        CALLS.append(f"__new__{args!r}{kwargs!r}")
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        CALLS.append("__init__")

    def __setattr__(self, name: str, value: Any) -> None:
        CALLS.append(f"__setattr__ {name}")
        object.__setattr__(self, name, value)

    def __setstate__(self, state: Any) -> None:
        CALLS.append("__setstate__")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        CALLS.append("__init_subclass__")

    def __reduce__(self) -> Any:
        CALLS.append("__reduce__")
        return (Recorder, ())


class StaticRecorder(Recorder):
    """Registered with static=("a",), dynamic=False: unknown members are dropped."""


class Slotted:
    """A registered __slots__ class: it cannot hold members it does not declare."""

    __slots__ = ("a",)


class ReadOnly:
    """A registered class with a read-only property named like a member."""

    @property
    def a(self) -> int:
        return 1


class External:
    """A registered externalizable class whose body is one AMF3 value."""

    def __readamf__(self, input: Any) -> None:
        self.inner = input.read_object()

    def __writeamf__(self, output: Any) -> None:
        output.write_object(self.inner)


def _setup_child() -> dict[str, Any]:
    import amfkit

    amfkit.register_class(Recorder, "hostile.Recorder")
    amfkit.register_class(StaticRecorder, "hostile.StaticRecorder", static=("a",), dynamic=False)
    amfkit.register_class(Slotted, "hostile.Slotted")
    amfkit.register_class(ReadOnly, "hostile.ReadOnly")
    amfkit.register_class(External, "hostile.External", externalizable=True)
    return {}


def summary(value: Any) -> dict[str, Any]:
    """The value's type and repr, the repr only when the value is small (a repr of a
    large decoded value would cost more time and memory than decoding it)."""
    if _small(value, [200]):
        try:
            text = repr(value)[:300]
        except RecursionError:
            text = f"<{type(value).__name__} nested too deep to show>"
    else:
        size = len(value) if hasattr(value, "__len__") else "?"
        text = f"<{type(value).__name__} too large to show ({size} items at the top)>"
    return {"type": type(value).__name__, "repr": text}


def _small(value: Any, budget: list[int]) -> bool:
    """Whether a value holds at most `budget` nodes, none a long string, and no cycle
    deeper than that (a bounded walk)."""
    budget[0] -= 1
    if budget[0] < 0:
        return False
    if isinstance(value, (str, bytes, bytearray)):
        return len(value) <= 1000
    if isinstance(value, dict):
        return all(_small(k, budget) and _small(v, budget) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_small(v, budget) for v in value)
    slots = getattr(type(value), "__slots__", ())
    if slots and not isinstance(value, (dict, list)):  # amfkit.ObjectKey, __slots__ classes
        return all(_small(getattr(value, n, None), budget) for n in ([slots] if isinstance(slots, str) else slots))
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return all(_small(v, budget) for v in vars(value).values())
    return True


def _codec(name: str) -> Any:
    import amfkit

    return {"amf0": amfkit.amf0, "amf3": amfkit.amf3}[name]


def _decode(codec: str, data: bytes, **kw: Any) -> Any:
    """One decode through a named entry point."""
    if codec in ("amf0", "amf3"):
        return _codec(codec).decode(data, **kw)
    if codec in ("amf0_all", "amf3_all"):
        return _codec(codec[:4]).Decoder(**kw).decode_all(data)
    if codec == "packet":
        from amfkit.remoting import packet

        return packet.decode(data, **kw)
    if codec == "sol":
        from amfkit import sol

        return sol.loads(data, **kw)
    if codec == "gateway":
        status, out = _gateway_call(data, **kw)
        return {"status": status, "body": out[:300].decode("latin-1")}
    raise ValueError(f"unknown codec {codec}")


def op_amf0(data: bytes, **kw: Any) -> Any:
    return summary(_decode("amf0", data, **kw))


def op_amf3(data: bytes, **kw: Any) -> Any:
    return summary(_decode("amf3", data, **kw))


def op_amf0_all(data: bytes, **kw: Any) -> Any:
    return summary(_decode("amf0_all", data, **kw))


def op_amf3_all(data: bytes, **kw: Any) -> Any:
    return summary(_decode("amf3_all", data, **kw))


def op_packet(data: bytes, **kw: Any) -> Any:
    env = _decode("packet", data, **kw)
    return {
        "version": env.version,
        "headers": [[h.name, summary(h.value)["repr"]] for h in env.headers],
        "bodies": [[b.target, b.response, summary(b.value)["repr"]] for b in env.bodies],
    }


def op_sol(data: bytes, **kw: Any) -> Any:
    return summary(_decode("sol", data, **kw))


_GATEWAYS: dict[str, Any] = {}
_LOOP: Any = None


def _gateway_call(data: bytes, headers: dict[str, str] | None = None, options: dict[str, Any] | None = None) -> tuple[int, bytes]:
    import asyncio

    from gateway_util import AMF, gateway

    global _LOOP
    key = json.dumps(options or {}, sort_keys=True)
    gw = _GATEWAYS.get(key)
    if gw is None:
        gw = _GATEWAYS[key] = gateway(**(options or {}))
    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()
    status, _, out = _LOOP.run_until_complete(gw.respond("POST", "/gateway", dict(AMF if headers is None else headers), data))
    return status, out


def op_gateway(data: bytes, headers: dict[str, str] | None = None, options: dict[str, Any] | None = None) -> Any:
    """POST to an in-process Gateway (EchoService of tests/support/gateway_util.py); the status,
    the start of the answer, and whether the gateway still answers a good call."""
    from gateway_util import request

    status, out = _gateway_call(data, headers, options)
    good = request(3, [("EchoService.echo", "/1", ["hi"])])
    still, _ = _gateway_call(good, None, options)
    return {"status": status, "body": out[:300].decode("latin-1"), "still_serving": still == 200}


def _problem(n: int, e: BaseException | None, note: str) -> str:
    return f"prefix [:{n}]: {note}" + (f" {type(e).__name__}: {str(e)[:200]}" if e else "")


def op_prefixes(data: bytes, codec: str, boundaries: list[int] | None = None, **kw: Any) -> Any:
    """Decode every strict prefix of `data`: each must raise DecodeError with an offset
    inside the prefix, except the complete ones:
    - a stream (`boundaries`: where each value ends) cut on a value boundary, the empty
      prefix included, must decode to the stream's first values;
    - a .sol file runs to the end of its input (its length field is not trusted and the
      last padding byte may be missing), so a prefix that ends after the header or after
      a member must decode to the same name, version and first members.
    Returns the problems (none expected), the count and the slowest prefix."""
    import amfkit

    problems: list[str] = []
    slowest = 0.0
    ends = [0] + list(boundaries) if boundaries else []
    full: Any = _decode(codec, data, **kw) if boundaries or codec == "sol" else None
    for n in range(len(data)):
        prefix = data[:n]
        t = time.process_time()
        try:
            value = _decode(codec, prefix, **kw)
        except amfkit.DecodeError as e:
            if not (e.offset is not None and 0 <= e.offset <= n):
                problems.append(_problem(n, e, f"offset {e.offset} outside the prefix"))
            if n in ends:
                problems.append(_problem(n, e, "a stream prefix on a value boundary did not decode"))
        except BaseException as e:  # noqa: BLE001 - anything else is the failure being looked for
            problems.append(_problem(n, e, "not a DecodeError:"))
        else:
            if n in ends:
                k = ends.index(n)
                if repr(value) != repr(full[:k]):
                    problems.append(_problem(n, None, f"decoded to {value!r}, not the first {k} values {full[:k]!r}"))
            elif codec == "sol":
                items = list(value.items())
                same = (value.name, value.amf_version) == (full.name, full.amf_version)
                if not same or repr(items) != repr(list(full.items())[: len(items)]):
                    problems.append(_problem(n, None, f"decoded to {value!r}, not the start of {full!r}"))
            else:
                problems.append(_problem(n, None, f"decoded to {repr(value)[:200]}"))
        slowest = max(slowest, time.process_time() - t)
        if len(problems) >= 10:
            break
    return {"count": len(data), "problems": problems, "slowest": slowest}


def op_gateway_prefixes(data: bytes, options: dict[str, Any] | None = None) -> Any:
    """Every strict prefix of a request packet POSTed to the gateway: each a 400."""
    problems: list[str] = []
    slowest = 0.0
    for n in range(len(data)):
        t = time.process_time()
        try:
            status, out = _gateway_call(data[:n], None, options)
        except BaseException as e:  # noqa: BLE001
            problems.append(_problem(n, e, "the gateway raised"))
        else:
            if status != 400 or b"Traceback" in out:
                problems.append(_problem(n, None, f"status {status}: {out[:200]!r}"))
        slowest = max(slowest, time.process_time() - t)
        if len(problems) >= 10:
            break
    status, out = _gateway_call(data, None, options)
    return {"count": len(data), "problems": problems, "slowest": slowest, "whole": status}


def op_watch(data: bytes, codec: str, probe: tuple[str, ...] = (), **kw: Any) -> Any:
    """Decode while watching: audit events (imports, opens, sockets, processes, exec),
    modules that appear in sys.modules, and calls on the registered Recorder classes.
    `probe`: module names reported as present or not, before and after."""
    import amfkit

    global WATCHING
    before = set(sys.modules)
    probed_before = sorted(m for m in probe if m in sys.modules)
    EVENTS.clear()
    CALLS.clear()
    raised = None
    value: Any = None
    WATCHING = True
    try:
        value = _decode(codec, data, **kw)
    except amfkit.DecodeError as e:
        raised = {"type": "DecodeError", "reason": e.reason, "offset": e.offset}
    except BaseException as e:  # noqa: BLE001
        raised = {"type": type(e).__name__, "reason": str(e)[:300]}
    finally:
        WATCHING = False
    new_modules = sorted(set(sys.modules) - before)
    out: dict[str, Any] = {
        "raised": raised,
        "events": list(EVENTS),
        "new_modules": new_modules,
        "calls": list(CALLS),
        "type": type(value).__name__,
        "probed": [probed_before, sorted(m for m in probe if m in sys.modules)],
    }
    if isinstance(value, amfkit.TypedObject):
        out["alias"] = value.alias
        out["members"] = sorted(map(str, value))
    elif value is not None and hasattr(value, "__dict__"):
        out["attrs"] = sorted(vars(value))
    elif isinstance(value, Slotted):
        out["attrs"] = [n for n in Slotted.__slots__ if hasattr(value, n)]
    elif isinstance(value, amfkit.ObjectVector):
        out["type_name"] = value.type_name
    elif isinstance(value, dict) and "status" in value:
        out["status"] = value["status"]
        out["body"] = value["body"]
    return out


def op_xml(data: bytes, template: str, version: int, marker: int) -> Any:
    """Decode an XML value whose text may reference http://127.0.0.1:PORT/ (a socket this
    child listens on): the value must be the text, unparsed; no connection, no file
    opened, no audit event."""
    import socket
    import struct

    import amfkit
    from wire import u29

    global WATCHING
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    text = template.replace("PORT", str(listener.getsockname()[1]))
    raw = text.encode("utf-8")
    if version == 0:
        blob = bytes([marker]) + struct.pack(">I", len(raw)) + raw
    else:
        blob = bytes([marker]) + u29((len(raw) << 1) | 1) + raw
    EVENTS.clear()
    WATCHING = True
    try:
        value = _codec(f"amf{version}").decode(blob)
    finally:
        WATCHING = False
    connections = 0
    try:
        while True:
            conn, _ = listener.accept()
            conn.close()
            connections += 1
    except BlockingIOError:
        pass
    listener.close()
    reencoded = _codec(f"amf{version}").encode(value)
    return {
        "type": type(value).__name__,
        "equal": str(value) == text and isinstance(value, (amfkit.XML, amfkit.XMLDocument)),
        "connections": connections,
        "events": list(EVENTS),
        "same_bytes": reencoded == blob,
    }


def op_dag(data: bytes, codec: str, levels: int) -> Any:
    """A decoded reference DAG (each level holds the level below twice): every level's two
    items are one object, the distinct containers are `levels + 1`, and re-encoding
    keeps the references (the output is no longer than the input)."""
    value = _decode(codec, data)
    shared = True
    distinct = set()
    node = value
    for _ in range(levels):
        distinct.add(id(node))
        if not (isinstance(node, list) and len(node) == 2 and node[0] is node[1]):
            shared = False
            break
        node = node[0]
    distinct.add(id(node))
    reencoded = _codec(codec).encode(value)
    return {"shared": shared, "distinct": len(distinct), "reencoded": len(reencoded)}


def op_in_thread(data: bytes, codec: str, **kw: Any) -> Any:
    """Decode in a new thread (whose stack may be smaller than the main thread's); the
    outcome as {"value": ...} or {"raised": [type, reason]}."""
    import threading

    import amfkit

    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = summary(_decode(codec, data, **kw))
        except amfkit.DecodeError as e:
            box["raised"] = ["DecodeError", e.reason]
        except BaseException as e:  # noqa: BLE001
            box["raised"] = [type(e).__name__, str(e)[:300]]

    t = threading.Thread(target=work)
    t.start()
    t.join()
    return box


def op_python(data: bytes, snippet: str) -> Any:
    """Run a snippet of Python with `data` bound; it leaves its JSON result in `result`.
    For encode-side cases, whose input is a Python object rather than bytes."""
    import amfkit

    ns: dict[str, Any] = {
        "data": data,
        "amfkit": amfkit,
        "amf0": amfkit.amf0,
        "amf3": amfkit.amf3,
        "Recorder": Recorder,
        "CALLS": CALLS,
        "result": None,
    }
    exec(snippet, ns)  # the snippets are the tests' own code, never input
    return ns["result"]


def _reset_peak() -> bool:
    """Reset the process's peak RSS (Linux: VmHWM, through /proc/self/clear_refs), so
    that the peak after a case is that case's own; False where that is not possible
    (then ru_maxrss, the peak of the whole child, is used and a growth can hide behind
    an earlier case's peak)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status("VmHWM") > 0
    except OSError:
        return False


def _status(field: str) -> int:
    """A kB figure from /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _child_main() -> None:
    import resource

    request = json.loads(sys.stdin.buffer.read())
    cap = int(request["mem"])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    sys.addaudithook(_audit)
    sys.path.insert(0, str(SUPPORT))
    import amfkit  # noqa: F401 - imported under the cap, before any case
    import amfkit.remoting.gateway  # noqa: F401
    import amfkit.remoting.packet  # noqa: F401
    import gateway_util  # noqa: F401

    try:
        import amfkit.sol  # noqa: F401
    except ImportError:
        pass
    _setup_child()
    ops = {name[3:]: fn for name, fn in globals().items() if name.startswith("op_")}
    out = sys.stdout
    for index, c in enumerate(request["cases"]):
        data = base64.b64decode(c["data"])
        out.write(f"S {index}\n")
        out.flush()
        exact = _reset_peak()
        rss_before = _status("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        r: dict[str, Any] = {"index": index}
        t, cpu = time.perf_counter(), time.process_time()
        try:
            r["value"] = ops[c["op"]](data, **c["kw"])
            r["status"] = "ok"
        except amfkit.DecodeError as e:
            r.update(status="DecodeError", offset=e.offset, path=e.path[:MAX_ERROR_TEXT], reason=e.reason[:MAX_ERROR_TEXT], text_len=len(str(e)))
        except amfkit.EncodeError as e:
            r.update(status="EncodeError", path=e.path[:MAX_ERROR_TEXT], reason=e.reason[:MAX_ERROR_TEXT], text_len=len(str(e)))
        except BaseException as e:  # noqa: BLE001 - reported, and fails the case
            import traceback

            r.update(status="error", type=type(e).__name__, message=str(e)[:500], detail=traceback.format_exc()[-1500:])
        r["elapsed"] = time.perf_counter() - t
        r["cpu"] = time.process_time() - cpu
        rss = _status("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        r["rss_kb"] = rss
        r["rss_growth_kb"] = max(0, rss - rss_before)
        r["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out.write("R " + json.dumps(r, default=repr) + "\n")
        out.flush()
    out.write("D {}\n")
    out.flush()


if __name__ == "__main__":
    _child_main()
