"""HTTP streaming (Flex's StreamingAMFChannel) against a real uvicorn server: the open
acknowledgement, frames read after HTTP de-chunking, heartbeats, the close command, the
refusals and limits, a client vanishing mid-stream, and a parked long-poll whose client
vanishes (the HTTP channel's other held response)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from amfkit.messaging import Destination, Messaging
from amfkit.remoting import Gateway
from amfkit.remoting import messages as m

from gateway_util import call
from messaging_util import Chunks, Frames, Op, RawRequest, StreamClient, Switch, Ticker, command, packet_of, ping, post, send, subscribe, wait_until
from servers import RunningServer, serve_asgi


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Switch, RunningServer]]:
    switch = Switch()
    with serve_asgi(switch) as running:
        yield switch, running


Serve = Callable[..., tuple[Gateway, str]]


@pytest.fixture
def serve(server: tuple[Switch, RunningServer]) -> Iterator[Serve]:
    """`serve(**messaging_options)`: a gateway with messaging installed in the module's
    server; its URL. Its streams are ended when the test ends."""
    switch, running = server
    gateways: list[Gateway] = []

    def install(*destinations: Any, gateway_options: dict[str, Any] | None = None, **options: Any) -> tuple[Gateway, str]:
        options.setdefault("poll_wait", 0)
        messaging = Messaging(destinations or ("prices", "chat"), **options)
        gw = Gateway({"Ticker": Ticker}, messaging=messaging, **(gateway_options or {}))
        gateways.append(gw)
        switch.app = gw
        return gw, running.url + "/gateway"

    yield install
    for gw in gateways:
        assert gw.messaging is not None
        gw.messaging.clients.end_all()
        wait_until(lambda: gw.messaging.clients.channels() == 0, what="the streams' end")  # type: ignore[union-attr]
    wait_until(lambda: not [t for t in switch.tasks() if t.startswith("amfkit")], what="the channel tasks' end")


def open_stream(url: str, dsid: str) -> tuple[StreamClient, str]:
    stream = StreamClient(url, dsid)
    assert stream.status == 200, stream.text
    ack = stream.next()
    assert type(ack) is m.AcknowledgeMessage and ack.correlationId == "open"
    assert isinstance(ack.body, str) and len(ack.body) == 36
    return stream, ack.body


def close_stream(url: str, dsid: str, stream_id: str) -> httpx.Response:
    return httpx.post(f"{url}?command=close&streamId={stream_id}&version=1", data={"DSId": dsid}, timeout=10)


# --- the stream ----------------------------------------------------------------------------


def test_open_subscribe_publish_close(serve: Serve, server: tuple[Switch, RunningServer]) -> None:
    gw, url = serve()
    dsid = ping(url)
    stream, stream_id = open_stream(url, dsid)
    assert stream.headers is not None and stream.headers["content-type"] == "application/x-amf"
    assert stream.headers.get("transfer-encoding") == "chunked"  # the server's framing, under the frames
    assert gw.messaging is not None and gw.messaging.clients.streams == 1
    consumer = subscribe(url, dsid)
    ticker = subscribe(url, dsid, DSSubtopic="fx.*", DSSelector="symbol = 'ABC'")

    # a Producer's send over POST
    (ack,) = post(url, send(body={"n": 1}, custom="yes"))
    assert type(ack) is m.AcknowledgeMessage
    copy = stream.next()
    assert type(copy) is m.AsyncMessage and copy.clientId == consumer  # full forms: no version announced
    assert copy.body == {"n": 1} and copy.headers == {"custom": "yes"} and copy.destination == "prices"

    # Context.publish from a service, filtered by subtopic and selector
    post(url, m.RemotingMessage(destination="Ticker", operation="quote", body=["XYZ", 2.0], headers={}))
    (result,) = post(url, m.RemotingMessage(destination="Ticker", operation="quote", body=["ABC", 1.5], headers={}))
    copy = stream.next()
    assert copy.clientId == ticker and copy.messageId == result.body
    assert copy.body == {"symbol": "ABC", "bid": 1.5} and copy.headers == {"symbol": "ABC", "DSSubtopic": "fx.eur"}

    # several messages published at once reach the stream in order
    post(url, *(send(body=i) for i in range(20)))
    assert [stream.next().body for _ in range(20)] == list(range(20))

    r = close_stream(url, dsid, stream_id)
    assert r.status_code == 200 and r.content == b""
    bye = stream.next()
    assert type(bye) is m.CommandMessage and bye.operation == Op.DISCONNECT
    assert stream.next() is None  # the response ended
    stream.close()
    wait_until(lambda: gw.messaging.clients.streams == 0)  # type: ignore[union-attr]
    # the subscriptions outlive the stream (until the client's idle timeout), as BlazeDS's
    assert gw.messaging.broker.stats()["consumers"] == 2


def test_small_forms_for_a_client_that_announced_them(serve: Serve) -> None:
    gw, url = serve()
    dsid = ping(url, DSMessagingVersion=1)
    stream, stream_id = open_stream(url, dsid)
    consumer = subscribe(url, dsid)
    post(url, send(body="tiny"))
    raw = stream.next_raw()
    assert raw is not None and b"DSA" in raw and b"flex.messaging.messages" not in raw
    import amfkit

    copy = amfkit.amf3.decode(raw)
    assert type(copy) is m.AsyncMessageExt and copy.body == "tiny" and copy.clientId == consumer
    close_stream(url, dsid, stream_id)
    stream.close()


def test_heartbeats_while_idle(serve: Serve) -> None:
    gw, url = serve(stream_heartbeat=0.1)
    dsid = ping(url)
    stream, stream_id = open_stream(url, dsid)
    # not subscribed yet (the broker does not know the client): heartbeats still come
    wait_until(lambda: stream.parser.heartbeats >= 2, timeout=3, what="two heartbeats")
    subscribe(url, dsid)
    seen = stream.parser.heartbeats
    wait_until(lambda: stream.parser.heartbeats >= seen + 2, timeout=3, what="heartbeats of a subscribed client")
    post(url, send(body="between heartbeats"))
    assert stream.next().body == "between heartbeats"
    close_stream(url, dsid, stream_id)
    assert stream.next().operation == Op.DISCONNECT
    stream.close()


def test_a_disconnect_command_ends_the_stream(serve: Serve) -> None:
    gw, url = serve()
    dsid = ping(url)
    stream, _ = open_stream(url, dsid)
    subscribe(url, dsid)
    (ack,) = post(url, command(Op.DISCONNECT, dsid))
    assert type(ack) is m.AcknowledgeMessage
    assert stream.next().operation == Op.DISCONNECT and stream.next() is None
    stream.close()
    assert gw.messaging is not None and gw.messaging.broker.stats()["consumers"] == 0


def test_messaging_close_ends_every_stream(serve: Serve, server: tuple[Switch, RunningServer]) -> None:
    import asyncio

    switch, _ = server
    gw, url = serve()
    streams = [open_stream(url, ping(url))[0] for _ in range(3)]
    assert gw.messaging is not None
    assert switch.loop is not None
    asyncio.run_coroutine_threadsafe(gw.messaging.close(), switch.loop).result(5)
    for stream in streams:
        assert stream.next().operation == Op.DISCONNECT and stream.next() is None
        stream.close()
    refused = StreamClient(url, ping(url))
    assert refused.status == 503
    refused.close()


def test_a_malformed_command_is_a_fault_and_the_stream_goes_on(serve: Serve) -> None:
    gw, url = serve()
    dsid = ping(url)
    stream, stream_id = open_stream(url, dsid)
    subscribe(url, dsid)
    other = ping(url)
    subscribe(url, other)
    faults = post(
        url,
        command(Op.SUBSCRIBE, dsid, "prices", client_id="spaces are not ids"),
        m.CommandMessage(operation="2", headers={"DSId": dsid}),
        command(Op.SUBSCRIBE, dsid, "prices", DSSelector="level >= "),
        send("nowhere", dsid=dsid),
    )
    assert [type(f) for f in faults] == [m.ErrorMessage] * 4
    r = httpx.post(url, content=b"\x00\x03garbage", headers={"content-type": "application/x-amf"})
    assert r.status_code == 400
    post(url, send(body="still served"))
    assert stream.next().body == "still served"
    (reply,) = post(url, command(Op.POLL, other))
    assert [c.body for c in reply.body] == ["still served"]
    close_stream(url, dsid, stream_id)
    stream.close()


# --- refusals and limits ---------------------------------------------------------------


@pytest.mark.parametrize(
    "query, form, fragment",
    [
        ("command=open&version=1", {}, "needs the FlexClient id"),
        ("command=open&version=1", {"DSId": "not an id!"}, "needs the FlexClient id"),
        ("command=open&version=1", {"DSId": "0F0E0D0C-0B0A-0908-0706-050403020100"}, "unknown FlexClient id"),
        ("command=reopen&version=1", {"DSId": "PINGED"}, "unknown streaming command"),
        ("command=&version=1", {"DSId": "PINGED"}, "unknown streaming command"),
        ("command=open&version=2", {"DSId": "PINGED"}, "unsupported streaming version"),
        ("command=open", {"DSId": "PINGED"}, "unsupported streaming version"),
        ("command=close&streamId=x&version=1", {}, "needs the FlexClient id"),
    ],
)
def test_bad_streaming_requests_are_400(serve: Serve, query: str, form: dict[str, str], fragment: str) -> None:
    gw, url = serve()
    dsid = ping(url)
    form = {k: dsid if v == "PINGED" else v for k, v in form.items()}
    r = httpx.post(f"{url}?{query}", data=form, timeout=10)
    assert r.status_code == 400 and fragment in r.text
    assert r.headers["content-type"].startswith("text/plain")
    assert gw.messaging is not None and gw.messaging.clients.channels() == 0


def test_a_second_stream_for_a_client_is_400_and_past_max_streams_503(serve: Serve) -> None:
    gw, url = serve(max_streams=2)
    a, b, c = ping(url), ping(url), ping(url)
    first, first_id = open_stream(url, a)
    second = StreamClient(url, a)
    assert second.status == 400 and "has a stream open already" in second.text
    other, other_id = open_stream(url, b)
    full = StreamClient(url, c)
    assert full.status == 503 and "most streams (2)" in full.text
    # a closed stream frees its slot
    close_stream(url, a, first_id)
    assert first.next().operation == Op.DISCONNECT
    wait_until(lambda: gw.messaging.clients.streams == 1)  # type: ignore[union-attr]
    third, third_id = open_stream(url, c)
    # closing with another client's id, or an unknown stream id, closes nothing
    assert close_stream(url, a, third_id).status_code == 200
    assert close_stream(url, c, "0F0E0D0C-0B0A-0908-0706-050403020100").status_code == 200
    assert gw.messaging is not None and gw.messaging.clients.streams == 2
    for stream, dsid, sid in ((other, b, other_id), (third, c, third_id)):
        close_stream(url, dsid, sid)
        assert stream.next().operation == Op.DISCONNECT
    for s in (first, second, other, full, third):
        s.close()


def test_without_messaging_or_under_wsgi_streaming_is_refused(server: tuple[Switch, RunningServer]) -> None:
    switch, running = server
    switch.app = Gateway({"Ticker": Ticker})
    r = httpx.post(running.url + "/gateway?command=open&version=1", data={"DSId": "0F0E0D0C-0B0A-0908-0706-050403020100"})
    assert r.status_code == 400 and "no messaging" in r.text
    gw = Gateway({"Ticker": Ticker}, messaging=Messaging(["prices"]))
    status, _, out = call(gw, b"DSId=0F0E0D0C-0B0A-0908-0706-050403020100", {"content-type": "application/x-www-form-urlencoded"}, path="/gateway?command=open&version=1")
    assert status == 400 and b"ASGI" in out


# --- a client that vanishes, or reads slowly --------------------------------------------


def test_a_slow_reader_costs_at_most_the_queue_bound(serve: Serve, server: tuple[Switch, RunningServer]) -> None:
    """The stream writes a batch only when the previous one went out: with the reader
    stalled, messages wait in the client's bounded queue (oldest dropped), and the reader
    then gets a MessagesDropped notice and the newest messages, in order."""
    import amfkit
    from amfkit.messaging.commands import MESSAGES_DROPPED

    switch, running = server
    gw, url = serve(queue_size=50)
    assert gw.messaging is not None
    dsid = ping(url)
    raw = RawRequest(running.host, running.port, "/gateway?command=open&version=1", f"DSId={dsid}".encode(), "application/x-www-form-urlencoded", receive_buffer=16384)
    data = raw.read_until(b"\r\n\r\n")
    consumer = subscribe(url, dsid)
    n = 10_000
    switch.flood(lambda i: gw.messaging.publish("prices", [i, "x" * 1000]), n)  # type: ignore[union-attr]
    time.sleep(0.2)  # about 11 MB: more than the socket buffers hold, so the server waits
    assert gw.messaging.broker.stats()["queued"] == 50
    chunks, frames = Chunks(), Frames()
    values: list[Any] = []
    pending = data.partition(b"\r\n\r\n")[2]
    raw.sock.settimeout(10)
    while True:
        values += [amfkit.amf3.decode(frame) for frame in frames.feed(chunks.feed(pending))]
        if values and type(values[-1]) is m.AsyncMessage and values[-1].body[0] == n - 1:
            break
        pending = raw.sock.recv(1 << 16)
        assert pending, "the stream ended"
    raw.kill()
    notices = [v for v in values if type(v) is m.ErrorMessage]
    copies = [v.body[0] for v in values if type(v) is m.AsyncMessage]
    assert notices and {x.faultCode for x in notices} == {MESSAGES_DROPPED} and {x.clientId for x in notices} == {consumer}
    assert sum(x.extendedData["dropped"] for x in notices) + len(copies) == n
    assert copies == sorted(copies) and copies[-1] == n - 1 and len(copies) < n


def test_a_client_killed_mid_stream_leaves_nothing_behind(serve: Serve, server: tuple[Switch, RunningServer]) -> None:
    switch, running = server
    gw, url = serve(client_timeout=0.5, stream_heartbeat=0.1)
    assert gw.messaging is not None
    broker = gw.messaging.broker
    baseline_tasks = switch.tasks()
    baseline = broker.stats()
    dsid = ping(url)
    raw = RawRequest(running.host, running.port, f"/gateway?command=open&version=1", f"DSId={dsid}".encode(), "application/x-www-form-urlencoded")
    assert b"open" in raw.read_until(b"open")
    subscribe(url, dsid)
    subscribe(url, dsid, "chat")
    time.sleep(0.8)  # longer than client_timeout: the live stream keeps its client
    broker.sweep()
    assert broker.stats()["consumers"] == baseline["consumers"] + 2
    raw.kill()
    wait_until(lambda: gw.messaging.clients.channels() == 0, timeout=2, what="the stream's end")  # type: ignore[union-attr]
    wait_until(lambda: switch.tasks() == baseline_tasks, timeout=2, what="the tasks' end")
    time.sleep(0.6)  # the client's idle timeout
    broker.sweep()
    assert broker.stats() == baseline


def test_a_killed_parked_long_poll_frees_its_slot_at_once(serve: Serve, server: tuple[Switch, RunningServer]) -> None:
    switch, running = server
    gw, url = serve(poll_wait=30, client_timeout=60)
    assert gw.messaging is not None
    parking = gw.messaging.parking
    baseline_tasks = switch.tasks()
    dsid = ping(url)
    subscribe(url, dsid)
    for path in ("/gateway", "/gateway?amfkit_session=none"):  # the short ASGI path and the general one
        raw = RawRequest(running.host, running.port, path, packet_of(command(Op.POLL, dsid)), "application/x-amf")
        wait_until(lambda: parking.parked == 1, what="the poll's parking")
        t = time.monotonic()
        raw.kill()
        wait_until(lambda: parking.parked == 0, timeout=2, what="the slot's release")
        assert time.monotonic() - t < 2
        wait_until(lambda: switch.tasks() == baseline_tasks, timeout=2, what="the tasks' end")
    # the client goes on: a new poll is parked and answered
    post(url, send(body="after"))
    (reply,) = post(url, command(Op.POLL, dsid))
    assert [c.body for c in reply.body] == ["after"]


@pytest.mark.parametrize("options", [{"stream_heartbeat": 0}, {"stream_heartbeat": float("inf")}, {"max_streams": -1}])
def test_messaging_checks_the_streaming_options(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Messaging(["prices"], **options)


# --- discovery -------------------------------------------------------------------------


def test_discovery_lists_the_channels(serve: Serve, server: tuple[Switch, RunningServer]) -> None:
    _, running = server
    gw, url = serve(Destination("prices", send_roles=()), "chat", poll_wait=20)
    doc = httpx.get(url).json()
    messaging = doc["messaging"]
    host = f"{running.host}:{running.port}"
    assert messaging["channels"] == [
        {"type": "long-polling", "class": "mx.messaging.channels.AMFChannel", "url": f"http://{host}/gateway"},
        {"type": "streaming", "class": "mx.messaging.channels.StreamingAMFChannel", "url": f"http://{host}/gateway?command=open&version=1"},
        {"type": "websocket", "class": None, "url": f"ws://{host}/gateway"},
    ]
    assert [d["name"] for d in messaging["destinations"]] == ["prices", "chat"]
    assert messaging["destinations"][0]["send_roles"] == [] and messaging["destinations"][1]["send_roles"] is None
    assert messaging["poll_wait"] == 20
    # WSGI (and the plain core) serve polling only
    status, _, out = call(gw, method="GET", headers={"host": "example.com"})
    assert status == 200
    channels = json.loads(out)["messaging"]["channels"]
    assert channels == [{"type": "long-polling", "class": "mx.messaging.channels.AMFChannel", "url": "http://example.com/gateway"}]
