"""A client session for the capture tests, written with Py3AMF (a peer: bytes amfkit did
not write): AMF0 and AMF3 NetConnection calls, a batch with a fault, and Flex
RemoteObject (a ping, calls with random messageIds and the DSId the server gave, a
fault), each request a POST of its own. `run(url)` returns what came back, in a form
two runs can be compared by; the Flex answers are checked to fit their requests."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

import peers  # imports pyamf with its import-time warnings handled

pyamf = peers.pyamf
import pyamf.flex.messaging as flex  # noqa: E402
import pyamf.remoting  # noqa: E402

#: The calls of one session: what `run` makes (target and arguments), in order.
NETCONNECTION_CALLS = [
    (pyamf.AMF0, "EchoService.echo", ["hello"]),
    (pyamf.AMF0, "EchoService.echo", [{"name": "Ada", "scores": [1, 2.5]}]),
    (pyamf.AMF3, "EchoService.echo", [[1, "two", 3.0]]),
    (pyamf.AMF3, "TileService.getTilesAsString", [1]),
]
BATCH = [("EchoService.echo", ["one"]), ("EchoService.fail", ["two"]), ("EchoService.echo", [3])]


def post(client: httpx.Client, url: str, envelope: Any) -> Any:
    body = pyamf.remoting.encode(envelope).getvalue()
    r = client.post(url, content=body, headers={"content-type": "application/x-amf"})
    r.raise_for_status()
    return pyamf.remoting.decode(r.content)


def call(client: httpx.Client, url: str, version: int, target: str, args: list[Any]) -> tuple[str, Any]:
    """One NetConnection call: ("ok", result) or ("fault", (code, description))."""
    env = pyamf.remoting.Envelope(amfVersion=version)
    env["/1"] = pyamf.remoting.Request(target, args)
    return _outcome(post(client, url, env)["/1"])


def _outcome(response: Any) -> tuple[str, Any]:
    if response.status == pyamf.remoting.STATUS_ERROR:
        body = response.body
        return "fault", (body.code, body.description)
    return "ok", peers.from_py3amf(response.body)


def flex_call(client: httpx.Client, url: str, message: Any) -> Any:
    """One Flex message in its own request: the answer, checked to be addressed to it."""
    env = pyamf.remoting.Envelope(amfVersion=pyamf.AMF3)
    env["/1"] = pyamf.remoting.Request("null", [message])
    out = post(client, url, env)["/1"]
    answer = out.body
    assert answer.correlationId == message.messageId, (answer.correlationId, message.messageId)
    return answer


def remoting(destination: str, operation: str, args: list[Any], dsid: str) -> Any:
    return flex.RemotingMessage(
        destination=destination,
        operation=operation,
        body=args,
        messageId=str(uuid.uuid4()).upper(),
        clientId=None,
        headers={"DSId": dsid, "DSEndpoint": "my-amf"},
        timestamp=0,
        timeToLive=0,
    )


def flex_outcome(answer: Any) -> tuple[str, Any]:
    if isinstance(answer, flex.ErrorMessage):
        return "fault", (answer.faultCode, answer.faultString)
    return "ok", peers.from_py3amf(answer.body)


def run(url: str, *, extra: list[tuple[str, list[Any]]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    """One whole session against the gateway at `url`. `extra`: NetConnection (AMF3)
    calls made after the recorded ones (a replay's unrecorded call, then a recorded
    one)."""
    seen: dict[str, Any] = {"calls": [], "batch": None, "flex": [], "extra": []}
    with httpx.Client(timeout=30) as client:
        for version, target, args in NETCONNECTION_CALLS:
            seen["calls"].append(call(client, url, version, target, args))
        env = pyamf.remoting.Envelope(amfVersion=pyamf.AMF3)
        for i, (target, args) in enumerate(BATCH, 1):
            env[f"/{i}"] = pyamf.remoting.Request(target, args)
        out = post(client, url, env)
        seen["batch"] = [_outcome(out[f"/{i}"]) for i in range(1, len(BATCH) + 1)]
        ping = flex.CommandMessage(
            operation=5, messageId=str(uuid.uuid4()).upper(), headers={"DSId": "nil", "DSMessagingVersion": 1},
            body={}, destination="", clientId=None, timestamp=0, timeToLive=0,
        )
        ack = flex_call(client, url, ping)
        dsid = ack.headers["DSId"]
        seen["dsid_given"] = bool(dsid)
        for destination, operation, args in (("EchoService", "echo", ["flex"]), ("EchoService", "fail", ["flex fault"])):
            message = remoting(destination, operation, args, dsid)
            answer = flex_call(client, url, message)
            assert answer.headers.get("DSId", dsid) == dsid
            seen["flex"].append(flex_outcome(answer))
        for target, args in extra:
            seen["extra"].append(call(client, url, pyamf.AMF3, target, args))
    return seen
