"""`amfkit serve` as a real process on each HTTP server it offers: the default (uvicorn,
with amfkit's HTTP protocol; started without `--server`) and granian (RSGI). On each: a
real echo call (NetConnection, Flex RemoteObject, JSON-RPC), the messaging channel over
WebSocket and a Consumer on each push channel, and the limits docs/limits.md promises:
a head sent slowly or not at all is cut at the deadline, a head too large is refused
(431), a body too large (413) or too slow (408) is refused and the connection closed, an
idle kept-alive connection closed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from abuse import Closed, amf_request, amf_result, is_closed, post, read_response

from amfkit.remoting import packet
from amfkit.remoting.client import Client
from amfkit.serving import DEFAULT_SERVER, SERVERS
from repo import tomllib

HEADER_TIMEOUT = 1.5
KEEP_ALIVE = 3
BODY_TIMEOUT = 1.5
MAX_HEADER_SIZE = 8192


class Served:
    def __init__(self, server: str, proc: subprocess.Popen[bytes], port: int, stderr: Path) -> None:
        self.server = server
        self.proc = proc
        self.port = port
        self.stderr = stderr

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/gateway"

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    @property
    def idle_timeout(self) -> float:
        """granian has one timer for a head and for an idle connection: the smaller."""
        return min(HEADER_TIMEOUT, KEEP_ALIVE) if self.server == "granian" else KEEP_ALIVE


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(server: str, tmp: Path, *extra: str) -> Served:
    port = _free_port()
    cmd = [
        sys.executable, "-m", "amfkit", "serve", "--demo", "--port", str(port), "--log-level", "warning",
        "--header-timeout", str(HEADER_TIMEOUT), "--timeout-keep-alive", str(KEEP_ALIVE),
        "--body-timeout", str(BODY_TIMEOUT), "--max-header-size", str(MAX_HEADER_SIZE), *extra,
    ]  # fmt: skip
    if server != DEFAULT_SERVER:
        cmd += ["--server", server]
    env = dict(os.environ, AMFKIT_DEMO_DB=str(tmp / "demo.sqlite3"), AMFKIT_DEMO_ASSETS=str(tmp / "assets"), PYTHONUNBUFFERED="1")
    stderr = tmp / "stderr"
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
    served = Served(server, proc, port, stderr)
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(served.url, timeout=2).status_code == 200:
                return served
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise AssertionError(f"amfkit serve --server {server} did not start: {stderr.read_text()[-2000:]}")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module", params=SERVERS)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if request.param == "granian":
        pytest.importorskip("granian")
    running = _serve(request.param, tmp_path_factory.mktemp(request.param))
    try:
        yield running
    finally:
        _stop(running.proc)
        log = running.stderr.read_text()
        assert "Traceback" not in log, log


def test_it_says_which_server_runs_and_uvicorn_is_the_default(served: Served) -> None:
    first = served.stderr.read_text().splitlines()[0]
    assert ("(1 worker, uvicorn)" if served.server == "uvicorn" else "(1 worker, granian RSGI)") in first
    assert DEFAULT_SERVER == "uvicorn"  # started above without --server


def test_a_real_echo_call(served: Served) -> None:
    with Client(served.url) as c:
        assert c.EchoService.echo({"id": 42, "tags": ["a", "b"], "ratio": 0.5}) == {"id": 42, "tags": ["a", "b"], "ratio": 0.5}
        assert len(c.TileService.getTilesAsString(1).splitlines()) == 1000
    with Client(served.url, flex=True) as c:
        assert c.EchoService.echo("flex") == "flex"
    r = httpx.post(served.url, json={"jsonrpc": "2.0", "method": "EchoService.echo", "params": [1], "id": 1})
    assert r.json()["result"] == 1


def test_a_silent_connection_is_closed_at_the_head_deadline(served: Served) -> None:
    with served.connect() as s:
        started = time.monotonic()
        assert s.recv(100) == b""
        assert HEADER_TIMEOUT - 0.2 < time.monotonic() - started < HEADER_TIMEOUT + 2


def test_a_head_sent_slowly_is_cut_at_the_deadline(served: Served) -> None:
    with served.connect() as s:
        started = time.monotonic()
        s.sendall(b"POST /gateway HTTP/1.1\r\nHost: x\r\n")
        got = b""
        try:
            while time.monotonic() - started < HEADER_TIMEOUT + 5:
                s.sendall(b"X")  # a byte every 0.2 s: never a whole head
                time.sleep(0.2)
        except OSError:  # the server closed the connection
            pass
        try:
            got = s.recv(1000)
        except OSError:
            pass
        assert time.monotonic() - started < HEADER_TIMEOUT + 2
        if served.server == "uvicorn":
            assert got.startswith(b"HTTP/1.1 408")
        else:  # granian closes without an answer
            assert got == b""


def test_a_head_too_large_is_refused(served: Served) -> None:
    head = b"POST /gateway HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (3 * MAX_HEADER_SIZE) + b"\r\n\r\n"
    with served.connect() as s:
        try:
            for i in range(0, len(head), 1000):
                s.sendall(head[i : i + 1000])
                time.sleep(0.005)
        except OSError:  # refused before the whole head was sent
            pass
        assert read_response(s, 5)[0] == 431
        assert is_closed(s, 2)


def test_a_body_too_large_or_too_slow_is_refused(served: Served) -> None:
    with served.connect() as s:
        s.sendall(post(b"", length=17 * 1024 * 1024))
        assert read_response(s, 5)[0] == 413
        assert is_closed(s, 2)
    body = amf_request(3, "EchoService.echo", [1])
    with served.connect() as s:
        s.sendall(post(body)[:-5])
        started = time.monotonic()
        assert read_response(s, BODY_TIMEOUT + 5)[0] == 408
        assert time.monotonic() - started < BODY_TIMEOUT + 2


def test_a_kept_alive_connection_serves_then_closes_when_idle(served: Served) -> None:
    request = post(amf_request(3, "EchoService.echo", ["again"]))
    buf = bytearray()
    with served.connect() as s:
        for _ in range(3):
            s.sendall(request)
            status, _, body = read_response(s, 5, buf)
            assert status == 200 and amf_result(body) == "again"
        started = time.monotonic()
        with pytest.raises(Closed):
            read_response(s, served.idle_timeout + 5, buf)
        assert served.idle_timeout - 0.3 < time.monotonic() - started < served.idle_timeout + 2


def test_the_messaging_channel_over_websocket(served: Served) -> None:
    from messaging_util import Op, send
    from messaging_util import post as post_messages
    from websockets.sync.client import connect

    import amfkit
    from amfkit.remoting import messages as m

    def request(ws: Any, message: Any) -> Any:
        ws.send(amfkit.amf3.encode(message))
        return amfkit.amf3.decode(ws.recv(timeout=5))

    with connect(served.url.replace("http://", "ws://")) as ws:
        ack = request(ws, m.CommandMessage(operation=Op.CLIENT_PING, headers={"DSMessagingVersion": 1}))
        assert type(ack) is m.AcknowledgeMessageExt
        assert type(request(ws, m.CommandMessage(operation=Op.SUBSCRIBE, destination="chat", headers={}))) is m.AcknowledgeMessage
        post_messages(served.url, send(destination="chat", body="from http"))
        pushed = amfkit.amf3.decode(ws.recv(timeout=5))
        assert pushed.body == "from http"


def test_granian_refuses_limits_it_cannot_keep(python_env: dict[str, str], python_exe: str) -> None:
    pytest.importorskip("granian")
    for option, value, message in (
        ("--header-timeout", "61", "at most 60"),
        ("--max-header-size", "4096", "at least 8192"),
        ("--backlog", "64", "at least 128"),
    ):
        out = subprocess.run(
            [python_exe, "-m", "amfkit", "serve", "--demo", "--server", "granian", option, value],
            env=python_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 1 and message in out.stderr and "Traceback" not in out.stderr


def test_granian_is_pinned_as_make_installs_it(repo_root: Path) -> None:
    """`make venv` installs the dev extra, which holds the `granian` extra's requirement."""
    extras = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (requirement,) = extras["granian"]
    assert requirement in extras["dev"] and requirement in extras["all"]


def test_the_echo_answer_is_the_same_on_every_server(served: Served) -> None:
    body = amf_request(0, "EchoService.echo", [[1, "two", 3.0]])
    r = httpx.post(served.url, content=body, headers={"content-type": "application/x-amf"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-amf"
    assert packet.decode(r.content).bodies[0].value == [1, "two", 3.0]


@pytest.mark.parametrize("channel", ["long-poll", "streaming", "websocket"])
def test_a_consumer_on_each_push_channel(served: Served, channel: str) -> None:
    with Client(served.url) as client, client.consumer("chat", channel=channel) as consumer:
        client.producer("chat").send(f"over {channel}")
        deadline = time.monotonic() + 10
        got: list[Any] = []
        while not got and time.monotonic() < deadline:
            got = consumer.poll(timeout=2)
        assert [r.body for r in got] == [f"over {channel}"]
