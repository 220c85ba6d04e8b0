"""Sessions shared by the workers of `amfkit serve --workers 2` through the SQLite, the
shared-memory and the Redis stores: a Flex client logs in once, then every call it makes
on new connections (spread by the kernel over both worker processes) is authorised,
whichever worker answers."""

from __future__ import annotations

import base64
import os
from typing import Any

import httpx
import pytest

from amfkit.remoting import messages as m, packet

from gateway_util import flex_shape, raw_packet
from servers import serve_cli

APP = """
import os
from amfkit.remoting import Gateway, Principal
from amfkit.remoting.services import Context, requires

class Who:
    @requires("staff")
    def pid(self, context: Context):
        return [os.getpid(), context.principal.name]

def authenticate(user, password):
    return Principal(user, ["staff"]) if password == "pw" else None

gateway = Gateway({"Who": Who()}, authenticator=authenticate, session_store=%r)
"""


def post(url: str, message: Any) -> Any:
    data = raw_packet(3, [("null", "/1", flex_shape(message))])
    # A new connection each time: the kernel hands each to either worker.
    with httpx.Client(timeout=10) as http:
        r = http.post(url, content=data, headers={"Content-Type": "application/x-amf", "Connection": "close"})
    assert r.status_code == 200, r.text
    return packet.decode(r.content).bodies[0].value


@pytest.mark.parametrize("kind", ["sqlite", "shm", "redis"])
def test_a_login_through_one_worker_holds_on_the_other(tmp_path, python_env, python_exe, kind, request):
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'sessions.db'}"
    elif kind == "shm":
        url = f"shm://sessions-{os.getpid()}?directory={tmp_path}"
    else:
        url = request.getfixturevalue("redis_server").url + f"?prefix=sessions-{os.getpid()}:"
    (tmp_path / "sharedapp.py").write_text(APP % url)
    acks = []

    def ping(url: str) -> None:
        acks.append(post(url, m.CommandMessage(operation=m.Operation.CLIENT_PING, headers={"DSId": "nil"})))

    with serve_cli(python_exe, python_env, tmp_path, "sharedapp:gateway", workers=2, ready=ping) as url:
        dsid = acks[-1].headers["DSId"]
        login = m.CommandMessage(operation=m.Operation.LOGIN, body=base64.b64encode(b"ada:pw").decode(), headers={"DSId": dsid})
        assert type(post(url, login)) is m.AcknowledgeMessage
        pids = set()
        for _ in range(60):
            reply = post(url, m.RemotingMessage(destination="Who", operation="pid", body=[], headers={"DSId": dsid}))
            assert type(reply) is m.AcknowledgeMessage, reply.faultString
            pid, name = reply.body
            assert name == "ada"
            pids.add(pid)
            if len(pids) == 2:
                break
        assert len(pids) == 2, "every call reached one worker: the test proves nothing"
        # A client that never logged in is refused on every worker.
        other = post(url, m.CommandMessage(operation=m.Operation.CLIENT_PING, headers={"DSId": "nil"})).headers["DSId"]
        refused = post(url, m.RemotingMessage(destination="Who", operation="pid", body=[], headers={"DSId": other}))
        assert type(refused) is m.ErrorMessage and refused.faultCode.startswith("Client.Authentication")
    if kind == "sqlite":
        # Each worker's gateway closed its store at the lifespan's shutdown: with the last
        # connection closed, SQLite removed the WAL file.
        assert (tmp_path / "sessions.db").exists() and not (tmp_path / "sessions.db-wal").exists()
