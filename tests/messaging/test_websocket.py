"""The WebSocket channel against a real uvicorn server, with the `websockets` client: one
AMF3 Flex message per binary frame, each request answered in order, pushes between
replies, the connection as the FlexClient, and the close codes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

import amfkit
from amfkit.messaging import Messaging
from amfkit.messaging.commands import NOT_SUBSCRIBED
from amfkit.remoting import Gateway
from amfkit.remoting import messages as m

from messaging_util import Op, RawWebSocket, Switch, Ticker, command, ping, post, send, subscribe, wait_until
from servers import RunningServer, serve_asgi


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Switch, RunningServer]]:
    switch = Switch()
    with serve_asgi(switch) as running:
        yield switch, running


Serve = Callable[..., tuple[Gateway, str, str]]


@pytest.fixture
def serve(server: tuple[Switch, RunningServer]) -> Iterator[Serve]:
    """`serve(**messaging_options)`: a gateway installed in the module's server; its
    ws:// and http:// URLs."""
    switch, running = server

    def install(*destinations: Any, gateway_options: dict[str, Any] | None = None, **options: Any) -> tuple[Gateway, str, str]:
        options.setdefault("poll_wait", 10)
        gw = Gateway({"Ticker": Ticker}, messaging=Messaging(destinations or ("prices", "chat"), **options), **(gateway_options or {}))
        switch.app = gw
        return gw, running.url.replace("http://", "ws://") + "/gateway", running.url + "/gateway"

    yield install
    wait_until(lambda: not [t for t in switch.tasks() if t.startswith("amfkit")], what="the channel tasks' end")


def request(ws: ClientConnection, message: Any) -> Any:
    ws.send(amfkit.amf3.encode(message))
    return receive(ws)


def receive(ws: ClientConnection, timeout: float = 5) -> Any:
    data = ws.recv(timeout=timeout)
    assert isinstance(data, bytes)
    return amfkit.amf3.decode(data)


def ws_command(op: int, destination: str = "", client_id: Any = None, **headers: Any) -> m.CommandMessage:
    """A command as a WebSocket client sends it: no DSId (the connection is the client)."""
    return m.CommandMessage(operation=op, destination=destination, clientId=client_id, headers=headers)


def ws_ping(ws: ClientConnection) -> str:
    ack = request(ws, ws_command(Op.CLIENT_PING, DSMessagingVersion=1))
    assert type(ack) is m.AcknowledgeMessageExt and ack.headers["DSMessagingVersion"] == 1.0
    return str(ack.headers["DSId"])


def test_ping_subscribe_send_push_unsubscribe(serve: Serve) -> None:
    gw, ws_url, url = serve()
    assert gw.messaging is not None
    with connect(ws_url, subprotocols=["amf3"]) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "amf3"
        dsid = ws_ping(ws)
        assert len(dsid) == 36
        sub = request(ws, ws_command(Op.SUBSCRIBE, "prices"))
        assert type(sub) is m.AcknowledgeMessage and sub.headers["DSId"] == dsid
        consumer = sub.clientId
        # a Producer's send over the socket is acknowledged, then pushed back to its Consumer
        sent = m.AsyncMessage(destination="prices", body="over ws", headers={})
        ack = request(ws, sent)
        assert type(ack) is m.AcknowledgeMessage and ack.correlationId == sent.messageId
        copy = receive(ws)
        assert type(copy) is m.AsyncMessageExt and copy.clientId == consumer and copy.body == "over ws"
        # from another client over HTTP, and from a service
        post(url, send(body="over http"))
        assert receive(ws).body == "over http"
        request(ws, ws_command(Op.SUBSCRIBE, "prices", DSSubtopic="fx.*"))
        result = request(ws, m.RemotingMessage(destination="Ticker", operation="quote", body=["ABC", 1.5], headers={}))
        assert type(result) is m.AcknowledgeMessage
        assert receive(ws).messageId == result.body
        # a poll over the socket is answered at once, never parked (poll_wait is 10 s here)
        t = time.monotonic()
        reply = request(ws, ws_command(Op.POLL))
        assert time.monotonic() - t < 2 and type(reply) is m.AcknowledgeMessage
        unsub = request(ws, ws_command(Op.UNSUBSCRIBE, "prices", client_id=consumer))
        assert type(unsub) is m.AcknowledgeMessage
        post(url, send(body="not for the unsubscribed"))
        with pytest.raises(TimeoutError):
            receive(ws, timeout=0.2)
        assert gw.messaging.clients.channels() == 1


def test_replies_in_order_with_their_correlation_ids(serve: Serve) -> None:
    gw, ws_url, url = serve()
    with connect(ws_url) as ws:
        assert ws.subprotocol is None  # none required
        ws_ping(ws)
        consumer = request(ws, ws_command(Op.SUBSCRIBE, "chat")).clientId
        requests = [m.AsyncMessage(destination="chat", body=i, headers={}) for i in range(30)]
        requests.insert(10, ws_command(Op.SUBSCRIBE, "nowhere"))
        requests.insert(20, m.RemotingMessage(destination="Ticker", operation="echo", body=["echo"], headers={}))
        for r in requests:  # all sent before any reply is read
            ws.send(amfkit.amf3.encode(r))
        replies, pushed = [], []
        while len(replies) < len(requests) or len(pushed) < 30:
            frame = receive(ws)
            (pushed if type(frame) is m.AsyncMessage or type(frame) is m.AsyncMessageExt else replies).append(frame)
        assert [r.correlationId for r in replies] == [r.messageId for r in requests]
        assert type(replies[10]) is m.ErrorMessage and replies[10].faultCode == "Server.Processing"
        assert replies[20].body == "echo"
        assert [p.body for p in pushed] == list(range(30)) and {p.clientId for p in pushed} == {consumer}


def test_pushes_wait_for_the_reply_being_answered(serve: Serve) -> None:
    """A message published while a request is answered is pushed after its reply (so a
    subscribe's ack always comes before the first message for that Consumer)."""
    gw, ws_url, url = serve()
    with connect(ws_url) as ws:
        ws_ping(ws)
        consumer = request(ws, ws_command(Op.SUBSCRIBE, "chat")).clientId
        call = m.RemotingMessage(destination="Ticker", operation="publish_slowly", body=["during the call"], headers={})
        result = request(ws, call)
        assert type(result) is m.AcknowledgeMessage and result.correlationId == call.messageId
        copy = receive(ws)
        assert copy.clientId == consumer and copy.messageId == result.body


def test_selectors_and_subtopics_over_websocket(serve: Serve) -> None:
    gw, ws_url, url = serve()
    with connect(ws_url) as ws:
        ws_ping(ws)
        consumer = request(ws, ws_command(Op.SUBSCRIBE, "chat", DSSubtopic="room.*", DSSelector="level >= 2")).clientId
        post(
            url,
            send("chat", "high", DSSubtopic="room.1", level=3),
            send("chat", "low", DSSubtopic="room.1", level=1),
            send("chat", "elsewhere", DSSubtopic="lobby", level=5),
            send("chat", "no subtopic", level=5),
            send("chat", "to many", DSSubtopic=["lobby", "room.2"], level=2),
        )
        got = [receive(ws) for _ in range(2)]
        assert [g.body for g in got] == ["high", "to many"] and {g.clientId for g in got} == {consumer}
        with pytest.raises(TimeoutError):
            receive(ws, timeout=0.2)


def test_closing_the_socket_disconnects_the_flex_client(serve: Serve) -> None:
    gw, ws_url, url = serve()
    assert gw.messaging is not None
    broker = gw.messaging.broker
    baseline = broker.stats()
    with connect(ws_url) as ws:
        dsid = ws_ping(ws)
        request(ws, ws_command(Op.SUBSCRIBE, "prices"))
        request(ws, ws_command(Op.SUBSCRIBE, "chat", DSSubtopic="a.b"))
        assert broker.stats()["consumers"] == baseline["consumers"] + 2
    wait_until(lambda: broker.stats() == baseline, timeout=2, what="the client's disconnection")
    assert gw.messaging.clients.channels() == 0
    (fault,) = post(url, command(Op.POLL, dsid))
    assert fault.faultCode == NOT_SUBSCRIBED


def test_a_client_reconnecting_with_its_dsid_takes_over(serve: Serve) -> None:
    gw, ws_url, url = serve()
    assert gw.messaging is not None
    with connect(ws_url) as old:
        dsid = ws_ping(old)
        with connect(ws_url) as new:
            ack = request(new, ws_command(Op.CLIENT_PING, DSId=dsid))
            assert ack.headers["DSId"] == dsid
            with pytest.raises(ConnectionClosed) as closed:
                receive(old)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
            consumer = request(new, ws_command(Op.SUBSCRIBE, "prices")).clientId
            post(url, send(body="to the new one"))
            assert receive(new).clientId == consumer
            assert gw.messaging.clients.channels() == 1
    wait_until(lambda: gw.messaging.broker.stats()["consumers"] == 0, timeout=2)  # type: ignore[union-attr]


def test_messaging_close_closes_every_socket(serve: Serve, server: tuple[Switch, RunningServer]) -> None:
    import asyncio

    switch, _ = server
    gw, ws_url, url = serve()
    assert gw.messaging is not None and switch.loop is not None
    with connect(ws_url) as a, connect(ws_url) as b:
        ws_ping(a)
        ws_ping(b)
        asyncio.run_coroutine_threadsafe(gw.messaging.close(), switch.loop).result(5)
        for ws in (a, b):
            with pytest.raises(ConnectionClosed) as closed:
                receive(ws)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    with pytest.raises(InvalidStatus):
        connect(ws_url)
    wait_until(lambda: gw.messaging.clients.channels() == 0, timeout=2)  # type: ignore[union-attr]


def test_a_slow_reader_costs_at_most_the_queue_bound(serve: Serve, server: tuple[Switch, RunningServer]) -> None:
    """A frame is drained only when the previous one was handed to the socket: with the
    reader stalled, messages wait in the client's bounded queue (oldest dropped); the
    reader then gets a MessagesDropped notice and the newest messages, in order."""
    from amfkit.messaging.commands import MESSAGES_DROPPED

    switch, running = server
    gw, ws_url, url = serve(queue_size=50)
    assert gw.messaging is not None
    ws = RawWebSocket(ws_url)
    ws.send(ws_command(Op.CLIENT_PING))
    ws.receive()
    ws.send(ws_command(Op.SUBSCRIBE, "prices"))
    consumer = ws.receive().clientId
    n = 10_000
    switch.flood(lambda i: gw.messaging.publish("prices", [i, "x" * 1000]), n)  # type: ignore[union-attr]
    time.sleep(0.2)  # about 11 MB: more than the socket buffers hold, so the server waits
    assert gw.messaging.broker.stats()["queued"] == 50
    values = [ws.receive()]
    while type(values[-1]) is not m.AsyncMessage or values[-1].body[0] != n - 1:
        values.append(ws.receive())
    ws.close()
    notices = [v for v in values if type(v) is m.ErrorMessage]
    copies = [v.body[0] for v in values if type(v) is m.AsyncMessage]
    assert notices and {x.faultCode for x in notices} == {MESSAGES_DROPPED} and {x.clientId for x in notices} == {consumer}
    assert sum(x.extendedData["dropped"] for x in notices) + len(copies) == n
    assert copies == sorted(copies) and copies[-1] == n - 1 and len(copies) < n


# --- hostile frames ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"garbage", "malformed AMF3 message"),
        (b"\x0a\x07\x07DSA\xff", "malformed AMF3 message"),  # a small form cut short
        (amfkit.amf3.encode(42), "a Flex message was expected"),
        (amfkit.amf3.encode({"operation": 5}), "a Flex message was expected"),
        (amfkit.amf3.encode("x") + b"\x01", "malformed AMF3 message"),  # trailing bytes
    ],
)
def test_a_frame_that_does_not_decode_is_an_error_and_the_socket_goes_on(serve: Serve, data: bytes, fragment: str) -> None:
    gw, ws_url, url = serve()
    with connect(ws_url) as ws:
        ws_ping(ws)
        ws.send(data)
        err = receive(ws)
        assert type(err) is m.ErrorMessage and err.faultCode == "Client.Message.Encoding" and fragment in err.faultString
        consumer = request(ws, ws_command(Op.SUBSCRIBE, "prices")).clientId
        post(url, send(body="still works"))
        assert receive(ws).clientId == consumer


@pytest.mark.parametrize(
    "message",
    [
        ws_command(Op.SUBSCRIBE, "prices", DSSelector="level >= "),
        m.CommandMessage(operation="2", headers={}),
        m.CommandMessage(operation=Op.SUBSCRIBE, destination="prices", headers=["not", "a", "dict"]),
        m.AsyncMessage(destination="prices", clientId="x" * 200, headers={}),
        m.RemotingMessage(destination="Ticker", operation="nope", body=[], headers={}),
    ],
)
def test_a_malformed_message_is_a_fault_and_other_clients_are_served(serve: Serve, message: Any) -> None:
    gw, ws_url, url = serve()
    with connect(ws_url) as bad, connect(ws_url) as good:
        ws_ping(bad)
        ws_ping(good)
        consumer = request(good, ws_command(Op.SUBSCRIBE, "prices")).clientId
        fault = request(bad, message)
        assert type(fault) is m.ErrorMessage
        assert request(bad, m.RemotingMessage(destination="Ticker", operation="echo", body=[1], headers={})).body == 1
        post(url, send(body="served"))
        assert receive(good).clientId == consumer


def test_a_text_frame_is_closed_1003(serve: Serve) -> None:
    gw, ws_url, url = serve()
    with connect(ws_url) as ws:
        ws_ping(ws)
        request(ws, ws_command(Op.SUBSCRIBE, "prices"))
        ws.send("a text frame")
        with pytest.raises(ConnectionClosed) as closed:
            receive(ws)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003
    assert gw.messaging is not None
    wait_until(lambda: gw.messaging.broker.stats()["consumers"] == 0, timeout=2)  # type: ignore[union-attr]


def test_a_frame_over_max_body_size_is_closed_1009(serve: Serve) -> None:
    gw, ws_url, url = serve(gateway_options={"max_body_size": 1000})
    with connect(ws_url) as ws:
        ws_ping(ws)
        assert type(request(ws, m.RemotingMessage(destination="Ticker", operation="echo", body=["x" * 800], headers={}))) is m.AcknowledgeMessage
        ws.send(amfkit.amf3.encode(m.RemotingMessage(destination="Ticker", operation="echo", body=["x" * 2000], headers={})))
        with pytest.raises(ConnectionClosed) as closed:
            receive(ws)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


def test_without_messaging_the_handshake_is_refused(server: tuple[Switch, RunningServer]) -> None:
    switch, running = server
    switch.app = Gateway({"Ticker": Ticker})
    with pytest.raises(InvalidStatus) as refused:
        connect(running.url.replace("http://", "ws://") + "/gateway")
    assert refused.value.response.status_code == 403
    switch.app = Gateway({"Ticker": Ticker}, messaging=Messaging(["prices"]))
    with pytest.raises(InvalidStatus) as refused:
        connect(running.url.replace("http://", "ws://") + "/elsewhere")
    assert refused.value.response.status_code == 403


def test_a_poll_over_http_of_a_websocket_client_and_its_pushes(serve: Serve) -> None:
    """The client's DSId works over HTTP too (the same FlexClient), and a Consumer's
    receive() there takes what the socket has not pushed yet."""
    gw, ws_url, url = serve(poll_wait=0)
    with connect(ws_url) as ws:
        dsid = ws_ping(ws)
        consumer = subscribe(url, dsid, "chat")  # subscribed over HTTP: pushed over the socket
        post(url, send("chat", "both ways"))
        copy = receive(ws)
        assert copy.clientId == consumer and copy.body == "both ways"
