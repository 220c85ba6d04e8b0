"""The smoke suite an installed amfkit runs (tests/install/check_wheels.py runs it in a
fresh virtual environment with no cargo or rustc on PATH, from outside the source tree):
the codec, a gateway call over HTTP (`amfkit serve --demo`, then `amfkit call` and the
Python client), the CLI's decode and encode, the PyAMF door, and the encoder's cost.
Only the standard library and amfkit (with its `server` and `client` extras) are used.

    python smoke.py FIXTURE_DIR
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time


def check(what: str, ok: bool, detail: object = "") -> None:
    if not ok:
        raise SystemExit(f"smoke: {what} failed {detail}")
    print(f"smoke: {what}: ok")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(fixtures: pathlib.Path) -> int:
    import amfkit
    from amfkit import amf0, amf3

    here = pathlib.Path(amfkit.__file__).resolve()
    check("amfkit is the installed one", "site-packages" in here.parts, here)
    value = {"name": "Ada", "scores": [1, 2.5], "self": None}
    value["self"] = value
    back = amf3.decode(amf3.encode(value))
    check("codec amf3 round trip with a cycle", back["self"] is back and back["scores"] == [1, 2.5])
    check("codec amf0 round trip", amf0.decode(amf0.encode([1, "two", None])) == [1, "two", None])
    try:
        amf3.decode(b"\x0a\x0b")
    except amfkit.DecodeError as e:
        check("a truncated value is a DecodeError", e.offset is not None)

    # The CLI on a fixture file.
    amfkit_exe = pathlib.Path(sys.executable).with_name("amfkit")
    fixture = fixtures / "amf3" / "object-anonymous.amf"
    if not fixture.exists():
        fixture = sorted(fixtures.glob("amf3/*.amf"))[0]
    out = subprocess.run([str(amfkit_exe), "decode", str(fixture), "--json"], capture_output=True, text=True, timeout=120)
    check("amfkit decode --json", out.returncode == 0 and out.stdout.strip() != "", out.stderr)
    enc = subprocess.run(
        [str(amfkit_exe), "encode", "-", "--amf3"], input=json.dumps({"a": [1, 2]}).encode(), capture_output=True, timeout=120
    )
    check("amfkit encode", enc.returncode == 0 and amf3.decode(enc.stdout) == {"a": [1, 2]}, enc.stderr)

    # A gateway: amfkit serve --demo, called with amfkit call and with the Python client.
    port = free_port()
    url = f"http://127.0.0.1:{port}/gateway"
    server = subprocess.Popen(
        [str(amfkit_exe), "serve", "--demo", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "AMFKIT_DEMO_DB": str(pathlib.Path.cwd() / "demo.sqlite")},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"smoke: the demo gateway did not start: {server.stderr.read().decode()[-2000:]}")
                time.sleep(0.1)
        call = subprocess.run(
            [str(amfkit_exe), "call", url, "EchoService.echo", "[1, \"two\"]", "--amf3", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        check("amfkit call EchoService.echo", call.returncode == 0 and json.loads(call.stdout) == [1, "two"], call.stdout + call.stderr)
        from amfkit.remoting import Client

        with Client(url) as client:
            check("the Python client", client.EchoService.echo({"x": [1, 2]}) == {"x": [1, 2]})
    finally:
        server.terminate()
        server.wait(30)

    # The PyAMF door.
    import amfkit.compat.pyamf as pyamf

    got = next(pyamf.decode(pyamf.encode({"a": 1}, encoding=pyamf.AMF0).getvalue(), encoding=pyamf.AMF0))
    check("the PyAMF door", got.a == 1)

    # The encoder's cost on this interpreter (the complex graph, 10,000 nodes).
    from amfkit import _amfkit

    class Node:
        def __init__(self, **members: object) -> None:
            self.__dict__.update(members)

    amfkit.register_class(Node, "org.amfkit.bench.Node")
    nodes = []
    for i in range(10_000):
        child = Node(number=i)
        nodes.append(Node(nothing=None, tags=["alpha", "beta"], attrs={"kind": "leaf"}, shared="s", number=i,
                          ratio=i + 0.5, text="ünïcødé ✓", child=child, again=child))
    encoder = amf3.Encoder()
    best = float("inf")
    for _ in range(20):
        t0 = time.perf_counter()
        encoder.encode(nodes)
        best = min(best, time.perf_counter() - t0)
    print(f"smoke: CPython {sys.version.split()[0]}, dict walk {_amfkit.DICT_WALK!r}: AMF3 encode of the complex graph, best of 20: {best * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))
