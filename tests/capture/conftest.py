"""The capture tests' recording: one session of the Py3AMF client (tests/support/
capture_client.py) against `amfkit serve --demo`, through mitmdump in reverse-proxy mode
(a HAR file and a flow file) while tcpdump records the loopback traffic between mitmdump
and the server (a pcap). Made once per test run (module-scoped fixtures are too many
recordings for `make test`)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import capture_client
from servers import HOST, serve_cli


@dataclasses.dataclass
class Recording:
    har: Path
    flows: Path
    pcap: Path
    seen: dict[str, Any]
    server_port: int


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{what} did not start: {proc.communicate(timeout=5)}") from None
            time.sleep(0.05)


def _wait_for_line(proc: subprocess.Popen[bytes], text: bytes, what: str) -> None:
    """Read the process's standard error until a line holds `text`."""
    assert proc.stderr is not None
    seen = b""
    while True:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"{what} ended before saying {text!r}: {seen!r}")
        seen += line
        if text in line:
            return


#: The AMF exchanges of one client session (capture_client.run): one POST each.
SESSION_EXCHANGES = len(capture_client.NETCONNECTION_CALLS) + 1 + 3


def _wait_for_capture(path: Path, dump: subprocess.Popen[bytes]) -> None:
    """Wait until tcpdump has written every exchange of the session with its answer
    (it writes each packet as it sees it, -U; the loopback may still be delivering)."""
    from amfkit import capture

    deadline = time.monotonic() + 60
    while True:
        try:
            exchanges = capture.read(path)
        except capture.CaptureError:
            exchanges = []
        done = [e for e in exchanges if e.response_body is not None and e.status is not None]
        if len(done) >= SESSION_EXCHANGES:
            return
        assert dump.poll() is None and time.monotonic() < deadline, f"tcpdump wrote {len(done)} of {SESSION_EXCHANGES} exchanges"
        time.sleep(0.1)


@pytest.fixture(scope="session")
def recording(tmp_path_factory: pytest.TempPathFactory, python_exe: str) -> Iterator[Recording]:
    tcpdump = shutil.which("tcpdump")
    mitmdump = Path(sys.executable).parent / "mitmdump"
    assert tcpdump, "tcpdump is needed (make system-deps installs it)"
    assert mitmdump.exists(), "mitmdump is needed (pip install 'amfkit[capture]'; it is in the dev list)"
    tmp = tmp_path_factory.mktemp("recording")
    src = str(Path(__file__).resolve().parents[2] / "python")
    env = dict(os.environ, PYTHONPATH=src, PYTHONWARNINGS="error", AMFKIT_DEMO_DB=str(tmp / "demo.sqlite3"))
    with serve_cli(python_exe, env, tmp, "--demo", ready=lambda url: httpx.get(url, timeout=5)) as server_url:
        server_port = int(server_url.rsplit(":", 1)[1].split("/")[0])
        proxy_port = _free_port()
        paths = Recording(tmp / "capture.har", tmp / "flows.mitm", tmp / "traffic.pcap", {}, server_port)
        dump = subprocess.Popen(
            [tcpdump, "-i", "lo", "-U", "-n", "-w", str(paths.pcap), f"tcp port {server_port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        proxy_env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
        proxy = subprocess.Popen(
            [str(mitmdump), "--mode", f"reverse:http://{HOST}:{server_port}", "--listen-host", HOST, "-p", str(proxy_port),
             "-w", str(paths.flows), "--set", f"hardump={paths.har}", "-q"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=proxy_env,
        )
        try:
            _wait_for_line(dump, b"listening on", "tcpdump")
            _wait_for_port(proxy_port, proxy, "mitmdump")
            paths.seen = capture_client.run(f"http://{HOST}:{proxy_port}/gateway")
            _wait_for_capture(paths.pcap, dump)
        finally:
            proxy.send_signal(signal.SIGINT)  # mitmdump writes the HAR file as it stops
            proxy.communicate(timeout=60)
            dump.send_signal(signal.SIGINT)
            dump.communicate(timeout=30)
        yield paths
