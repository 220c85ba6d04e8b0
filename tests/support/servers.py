"""Run an ASGI or WSGI app under a real HTTP server on 127.0.0.1, in a background thread.

The remoting tests talk to gateways over real sockets, not in process: a server here is
bound to a free port chosen by the kernel (the listening socket is created first, so
there is no race for the port), started in a daemon thread, and stopped and joined
when the ``with`` block ends.

    with serve_asgi(gateway) as server:
        Client(server.url + "/gateway").EchoService.echo(1)

- ``serve_asgi(app)``: uvicorn (h11), one event loop in the thread.
- ``serve_wsgi(app)``: the standard library's ``wsgiref`` with a thread per connection
  (HTTP/1.0, one request per connection); ``server="uvicorn"`` runs it under uvicorn's
  WSGI adapter instead (HTTP/1.1 keep-alive, the app called from a thread pool).
- ``serve_py3amf_gateway(services)``: Py3AMF's ``WSGIGateway`` under ``serve_wsgi``.
- ``Tagged(gateway)``: the gateway with every answer its ASGI app gives marked, to tell
  them from those amfkit's HTTP protocol gives itself.

Errors an app raises are printed by the server as usual; an exception that kills a
server thread reaches pytest as an unhandled-thread-exception warning, which the suite
turns into an error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import socketserver
import subprocess
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any, Callable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

__all__ = ["RunningServer", "Tagged", "serve_asgi", "serve_cli", "serve_py3amf_gateway", "serve_wsgi"]

HOST = "127.0.0.1"
START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


@dataclasses.dataclass(frozen=True)
class RunningServer:
    """Where a started server listens. ``url`` has no trailing slash."""

    host: str
    port: int
    kind: str

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


class Tagged:
    """The gateway, with every answer it gives through ASGI marked `x-asgi: 1`; amfkit's
    HTTP protocol finds the gateway's fast routes through `.app`, as through uvicorn's
    own middleware."""

    def __init__(self, gateway: Any) -> None:
        self.app = gateway

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def tagged(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"x-asgi", b"1")]}
            await send(message)

        await self.app(scope, receive, tagged)


def _listening_socket(port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


@contextlib.contextmanager
def serve_asgi(app: Any, *, port: int = 0, **config: Any) -> Iterator[RunningServer]:
    """Serve an ASGI 3 app with uvicorn on a free port (or on ``port``: a server
    restarted where a previous one listened) for the ``with`` block.

    ``config`` goes to ``uvicorn.Config`` (e.g. ``timeout_keep_alive``); logging is left
    alone (``log_config=None``) and the access log is off.
    """
    import uvicorn

    sock = _listening_socket(port)
    options: dict[str, Any] = {
        "interface": "asgi3",
        "log_config": None,
        "log_level": "warning",
        "access_log": False,
        "lifespan": "off",
        "http": "h11",
        "timeout_graceful_shutdown": 2,
    }
    options.update(config)
    server = uvicorn.Server(uvicorn.Config(app, **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="uvicorn-test", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the uvicorn test server stopped while starting")
            if time.monotonic() > deadline:
                raise RuntimeError("the uvicorn test server did not start in time")
            time.sleep(0.01)
        yield RunningServer(HOST, sock.getsockname()[1], "uvicorn")
    finally:
        server.should_exit = True
        thread.join(STOP_TIMEOUT)
        sock.close()
        if thread.is_alive():  # pragma: no cover - a hang is a bug worth seeing
            raise RuntimeError("the uvicorn test server did not stop")


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


def _wsgi_under_uvicorn(app: Callable[..., Any]) -> Any:
    # uvicorn warns that its own WSGI adapter is deprecated (it suggests a2wsgi); the
    # adapter is built here, in the calling thread, with exactly that warning ignored.
    from uvicorn.middleware.wsgi import WSGIMiddleware

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"Uvicorn's native WSGI implementation is deprecated", category=DeprecationWarning
        )
        return WSGIMiddleware(app)


@contextlib.contextmanager
def serve_wsgi(app: Callable[..., Any], *, server: str = "wsgiref") -> Iterator[RunningServer]:
    """Serve a WSGI app on a free port for the ``with`` block, with ``wsgiref`` (the
    default) or ``server="uvicorn"``."""
    if server == "uvicorn":
        with serve_asgi(_wsgi_under_uvicorn(app)) as running:
            yield running
        return
    if server != "wsgiref":
        raise ValueError(f"unknown server {server!r}")
    httpd = make_server(HOST, 0, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="wsgiref-test", daemon=True
    )
    thread.start()
    try:
        yield RunningServer(HOST, httpd.server_address[1], "wsgiref")
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(STOP_TIMEOUT)


@contextlib.contextmanager
def serve_py3amf_gateway(
    services: dict[str, Any], *, server: str = "wsgiref", **gateway_options: Any
) -> Iterator[RunningServer]:
    """Serve Py3AMF's ``pyamf.remoting.gateway.wsgi.WSGIGateway(services, **options)`` for
    the ``with`` block; it answers on any path."""
    import peers  # imports pyamf with its import-time warnings handled

    from pyamf.remoting.gateway.wsgi import WSGIGateway

    del peers
    with serve_wsgi(WSGIGateway(services, **gateway_options), server=server) as running:
        yield running


@contextlib.contextmanager
def serve_cli(
    python_exe: str, env: dict[str, str], cwd: Any, app: str, *, workers: int = 1, ready: Callable[[str], Any]
) -> Iterator[str]:
    """`python -m amfkit serve APP --workers N` in its own process(es) on a free port,
    from `cwd` (where the app's module is); yields the gateway URL once `ready(url)`
    returns without a transport error (its result is ignored), and stops the server
    after. A server that exits or is not ready in 30 s fails with what it wrote."""
    import httpx

    with socket.socket() as s:
        s.bind((HOST, 0))
        port = int(s.getsockname()[1])
    url = f"http://{HOST}:{port}/gateway"
    proc = subprocess.Popen(
        [python_exe, "-m", "amfkit", "serve", app, "--port", str(port), "--workers", str(workers), "--log-level", "warning"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                ready(url)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(proc.communicate(timeout=5)[1].decode(errors="replace")) from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.communicate()
