"""The client's Flex Consumers and Producers (amfkit.messaging.consumer, .hub) end to end,
against a real gateway with messaging under uvicorn (tests/support/messaging_app.py):
every channel (poll, long-poll, streaming, WebSocket), sync and async; subtopics and
selectors; several Consumers of one client routed by consumer id; unsubscribing; the
bounds (the local queue, the server's MessagesDropped notices); reconnecting after the
server restarts on the same port, and giving up.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from amfkit import amf3
from amfkit.messaging import ConnectionLost, Consumer, MessagingFault, Received
from amfkit.messaging.hub import Frames, Routes, _next_poll, websocket_url
from amfkit.remoting import messages as m
from amfkit.remoting.client import AsyncClient, Client, TransportError
from amfkit.remoting.services import Fault

from messaging_app import messaging_gateway
from servers import RunningServer, serve_asgi

CHANNELS = ["poll", "long-poll", "streaming", "websocket"]
#: How long a test waits for something that should come at once.
SOON = 5.0


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    # Long-polls held 1 s, so that the server stops quickly when the module ends.
    with serve_asgi(messaging_gateway(poll_wait=1.0)) as running:
        yield running


@pytest.fixture
def url(server: RunningServer) -> str:
    return server.url + "/gateway"


@pytest.fixture
def client(url: str) -> Iterator[Client]:
    with Client(url) as c:
        yield c


def until(condition: Callable[[], Any], timeout: float = SOON) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


def bodies(messages: list[Received]) -> list[Any]:
    return [x.body for x in messages]


def take(consumer: Consumer, n: int, timeout: float = SOON) -> list[Received]:
    """Exactly n messages (waiting for them), then none more for a moment."""
    got: list[Received] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += consumer.poll(timeout=deadline - time.monotonic())
    assert len(got) == n, bodies(got)
    return got


# --------------------------------------------------------------------------------------
# Every channel, sync and async


@pytest.mark.parametrize("channel", CHANNELS)
def test_sync_consumer_receives_what_matches_its_subtopic_and_selector(client: Client, channel: str) -> None:
    consumer = client.consumer("prices", subtopic="fx.*", selector="symbol = 'ABC'", channel=channel, poll_interval=0.05)
    assert consumer.id and not consumer.closed
    producer = client.producer("prices")
    sent = producer.send({"bid": 1.5}, headers={"symbol": "ABC"}, subtopic="fx.eur")
    producer.send({"bid": 2.0}, headers={"symbol": "XYZ"}, subtopic="fx.eur")  # the selector says no
    producer.send({"bid": 3.0}, headers={"symbol": "ABC"}, subtopic="rates.eur")  # the subtopic says no
    producer.send({"bid": 4.0}, headers={"symbol": "ABC"})  # no subtopic: no
    producer.send({"bid": 5.0}, headers={"symbol": "ABC"}, subtopic="fx.usd.spot", ttl=60)
    got = take(consumer, 2)
    first, second = got
    assert first.body == {"bid": 1.5}
    assert first.message_id == sent
    assert first.headers == {"symbol": "ABC", "DSSubtopic": "fx.eur"}
    assert first.subtopic == "fx.eur"
    assert first.destination == "prices"
    assert first.client_id == consumer.id
    assert isinstance(first.timestamp, int) and abs(first.timestamp / 1000 - time.time()) < 60
    assert first.time_to_live == 0 and first.correlation_id is None
    assert isinstance(first.raw, m.AsyncMessage)
    assert second.body == {"bid": 5.0} and second.subtopic == "fx.usd.spot" and second.time_to_live == 60_000
    assert consumer.poll(timeout=0.2) == []
    assert consumer.dropped == 0
    consumer.unsubscribe()
    assert consumer.closed


@pytest.mark.parametrize("channel", CHANNELS)
def test_async_consumer_receives_on_every_channel(url: str, channel: str) -> None:
    async def main() -> None:
        async with AsyncClient(url) as client:
            async with client.consumer("prices", subtopic="fx.*", selector="symbol = 'ABC'", channel=channel, poll_interval=0.05) as consumer:
                assert consumer.id
                producer = client.producer("prices")
                sent = await producer.send({"bid": 1.5}, headers={"symbol": "ABC"}, subtopic="fx.eur")
                await producer.send({"bid": 2.0}, headers={"symbol": "XYZ"}, subtopic="fx.eur")
                await producer.send({"bid": 3.0}, headers={"symbol": "ABC"}, subtopic="fx.gbp")
                assert producer.id  # adopted from the first acknowledgement
                got = await consumer.poll(timeout=SOON)
                if len(got) < 2:
                    got += await consumer.poll(timeout=SOON)
                assert [x.body for x in got] == [{"bid": 1.5}, {"bid": 3.0}]
                assert got[0].message_id == sent and got[0].client_id == consumer.id
                stream = consumer.stream()
                await producer.send("four", headers={"symbol": "ABC"}, subtopic="fx.eur")
                message = await asyncio.wait_for(stream.__anext__(), SOON)
                assert message.body == "four"
                await stream.aclose()
                assert await consumer.poll(timeout=0.1) == []
            assert consumer.closed

    asyncio.run(main())


def test_await_subscribes_an_async_consumer_and_aclose_ends_its_stream(url: str) -> None:
    async def main() -> None:
        client = AsyncClient(url)
        consumer = await client.consumer("chat")
        assert consumer.id
        seen: list[Any] = []

        async def read() -> None:
            async for message in consumer.stream():
                seen.append(message.body)

        reader = asyncio.ensure_future(read())
        await client.producer("chat").send("hello")
        for _ in range(500):
            if seen:
                break
            await asyncio.sleep(0.01)
        await client.aclose()  # ends the stream: the reader returns
        await asyncio.wait_for(reader, SOON)
        assert seen == ["hello"] and consumer.closed

    asyncio.run(main())


def test_the_streaming_channel_is_one_open_stream(client: Client) -> None:
    consumer = client.consumer("chat", channel="streaming")
    hub = client._hub
    assert hub is not None and "streaming" in hub._streams  # opened before consumer() returned
    client.producer("chat").send("a")
    assert bodies(consumer.poll(timeout=SOON)) == ["a"]
    consumer.unsubscribe()  # the last one: the stream is closed
    until(lambda: "streaming" not in hub._threads)


# --------------------------------------------------------------------------------------
# Routing, streams, unsubscribing


@pytest.mark.parametrize("channel", ["long-poll", "websocket"])
def test_several_consumers_of_one_client_each_get_their_own(client: Client, channel: str) -> None:
    fx = client.consumer("prices", subtopic="fx.*", channel=channel)
    abc = client.consumer("prices", subtopic="fx.*", selector="symbol = 'ABC'", channel=channel)
    chat = client.consumer("chat", channel=channel)
    other = client.consumer("chat", channel="long-poll" if channel == "websocket" else "poll", poll_interval=0.05)
    assert len({fx.id, abc.id, chat.id, other.id}) == 4
    producer = client.producer("prices", subtopic="fx.eur")
    producer.send(1, headers={"symbol": "ABC"})
    producer.send(2, headers={"symbol": "XYZ"})
    client.producer("chat").send("hi")
    assert bodies(take(fx, 2)) == [1, 2]
    assert bodies(take(abc, 1)) == [1]
    assert bodies(take(chat, 1)) == ["hi"]
    assert bodies(take(other, 1)) == ["hi"]
    for consumer in (fx, abc, chat, other):
        assert consumer.poll(timeout=0.05) == []


def test_server_side_publish_reaches_a_consumer(client: Client) -> None:
    consumer = client.consumer("prices", selector="symbol = 'ABC'", subtopic="fx.eur")
    sent = client.Ticker.quote("ABC", 1.25)
    client.Ticker.quote("XYZ", 9.0)
    (message,) = take(consumer, 1)
    assert message.message_id == sent and message.body == {"symbol": "ABC", "bid": 1.25}


def test_stream_yields_as_messages_come_and_ends_at_unsubscribe(client: Client) -> None:
    consumer = client.consumer("chat")
    producer = client.producer("chat")
    got: list[Any] = []

    def later() -> None:
        for i in range(3):
            producer.send(i)
        until(lambda: len(got) == 3)
        consumer.unsubscribe()

    thread = threading.Thread(target=later)
    thread.start()
    for message in consumer.stream():  # ends once unsubscribed
        got.append(message.body)
    thread.join()
    assert got == [0, 1, 2]


def test_unsubscribed_consumer_gets_nothing_more_and_others_go_on(client: Client) -> None:
    gone = client.consumer("chat")
    stays = client.consumer("chat")
    producer = client.producer("chat")
    producer.send("before")
    assert bodies(take(gone, 1)) == ["before"]
    gone.unsubscribe()
    gone.unsubscribe()  # again: nothing
    assert gone.closed and gone.poll(timeout=5) == []  # at once
    producer.send("after")
    assert bodies(take(stays, 2)) == ["before", "after"]
    assert list(gone.stream()) == []


def test_with_block_unsubscribes(client: Client) -> None:
    with client.consumer("chat", channel="poll", poll_interval=0.05) as consumer:
        client.producer("chat").send(1)
        assert bodies(take(consumer, 1)) == [1]
    assert consumer.closed


def test_client_close_ends_streams_in_other_threads(url: str) -> None:
    client = Client(url)
    consumer = client.consumer("chat")
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.extend(consumer.stream()))
    thread.start()
    time.sleep(0.05)
    client.close()
    thread.join(SOON)
    assert not thread.is_alive() and out == [] and consumer.closed


# --------------------------------------------------------------------------------------
# Refusals and faults


def test_subscribe_refusals_raise_the_servers_fault(client: Client) -> None:
    with pytest.raises(Fault, match="selector") as e:
        client.consumer("prices", selector="symbol = ")
    assert e.value.code == "Server.Processing"
    with pytest.raises(Fault, match="not registered"):
        client.consumer("nowhere", channel="websocket")
    with pytest.raises(Fault, match="subtopic"):
        client.consumer("plain", subtopic="a.b")
    with pytest.raises(Fault, match="subtopic"):
        client.producer("prices").send(1, subtopic="fx.*")  # no wildcard in a sent subtopic
    with pytest.raises(ValueError, match="unknown channel"):
        client.consumer("chat", channel="carrier-pigeon")
    with pytest.raises(ValueError, match="AMF3"):
        Client("http://127.0.0.1:1/gateway", amf3=False).consumer("chat")


def test_a_pushed_fault_is_raised_in_its_place(client: Client) -> None:
    consumer = client.consumer("chat", channel="websocket")
    client.producer("chat").send("first")
    until(lambda: len(consumer._inbox.items) == 1)
    hub = client._hub
    assert hub is not None
    hub.routes.route(m.ErrorMessage(clientId=consumer.id, faultCode="App.Failed", faultString="it broke"))
    hub.routes.route(m.AsyncMessage(clientId=consumer.id, body="after"))
    assert bodies(consumer.poll(timeout=0)) == ["first"]
    with pytest.raises(MessagingFault, match="it broke") as e:
        consumer.poll(timeout=0)
    assert e.value.code == "App.Failed" and isinstance(e.value.raw, m.ErrorMessage)
    assert bodies(consumer.poll(timeout=0)) == ["after"]  # the consumer goes on


@pytest.mark.parametrize("channel", ["long-poll", "streaming", "websocket"])
@pytest.mark.parametrize("flex", [False, True], ids=["credentials-header", "flex-login"])
def test_credentials_reach_a_destination_with_subscribe_roles(url: str, channel: str, flex: bool) -> None:
    with Client(url, credentials=("alice", "s3cret"), flex=flex) as client:
        consumer = client.consumer("members", channel=channel)
        client.producer("members").send("welcome")
        assert bodies(take(consumer, 1)) == ["welcome"]
    with Client(url) as anonymous, pytest.raises(Fault) as e:
        anonymous.consumer("members", channel=channel)
    assert e.value.code == "Client.Authentication"


# --------------------------------------------------------------------------------------
# Bounds


def test_local_queue_keeps_the_newest_and_counts_the_dropped(client: Client) -> None:
    consumer = client.consumer("chat", queue_size=3)
    producer = client.producer("chat")
    for i in range(5):
        producer.send(i)
    until(lambda: consumer.dropped == 2)
    assert bodies(consumer.poll(timeout=0)) == [2, 3, 4]
    assert consumer.dropped == 2


def test_server_queue_drops_are_counted_not_raised() -> None:
    # A plain-polling server keeping 2 messages per client; the consumer polls every 0.5 s.
    with serve_asgi(messaging_gateway(poll_wait=0, queue_size=2)) as small, Client(small.url + "/gateway") as client:
        consumer = client.consumer("chat", channel="poll", poll_interval=0.5)
        producer = client.producer("chat")
        time.sleep(0.1)  # the first poll is behind us
        for i in range(5):
            producer.send(i)
        got = take(consumer, 2)
        assert bodies(got) == [3, 4]
        assert consumer.dropped == 3


# --------------------------------------------------------------------------------------
# Reconnecting


@pytest.fixture
def restartable() -> Iterator[Callable[[], Any]]:
    """`start()` serves a new messaging gateway on the same port each time (the
    previous one stopped with `stop()`); yields `start`; the address is `start.url`."""
    state: dict[str, Any] = {"port": 0, "cm": None}

    def start() -> str:
        cm = serve_asgi(messaging_gateway(poll_wait=0.5), port=state["port"], timeout_graceful_shutdown=0.3)
        running = cm.__enter__()
        state["port"], state["cm"] = running.port, cm
        return running.url + "/gateway"

    def stop() -> None:
        cm, state["cm"] = state["cm"], None
        if cm is not None:
            cm.__exit__(None, None, None)

    start.stop = stop  # type: ignore[attr-defined]
    try:
        yield start
    finally:
        stop()


@pytest.mark.parametrize("channel", CHANNELS)
def test_consumers_resubscribe_after_a_server_restart(restartable: Any, channel: str) -> None:
    url = restartable()
    with Client(url, timeout=5) as client:
        consumer = client.consumer("chat", channel=channel, poll_interval=0.05)
        partner = client.consumer("prices", subtopic="fx.*", channel=channel, poll_interval=0.05)
        producer = client.producer("chat")
        producer.send("before")
        assert bodies(take(consumer, 1)) == ["before"]
        old_ids, old_dsid = (consumer.id, partner.id), client.dsid
        restartable.stop()
        assert consumer.poll(timeout=0.3) == []  # the server is down: nothing, no error
        restartable()
        until(lambda: consumer.resumes and partner.resumes, timeout=15)
        producer.send("after")
        client.producer("prices").send("fx", subtopic="fx.eur")
        assert bodies(take(consumer, 1)) == ["after"]
        assert bodies(take(partner, 1)) == ["fx"]
        assert not consumer.closed and consumer is not None
        # The same FlexClient and Consumers, as a Flex client resubscribes (the new server
        # forgot them: they are made again under their ids).
        assert (consumer.id, partner.id) == old_ids and client.dsid == old_dsid


def test_reconnect_false_ends_the_consumer_with_connection_lost(restartable: Any) -> None:
    url = restartable()
    with Client(url, timeout=5) as client:
        consumer = client.consumer("chat", reconnect=False)
        keeps = client.consumer("chat", max_attempts=None)
        restartable.stop()
        with pytest.raises(ConnectionLost, match="reconnect is off"):
            consumer.poll(timeout=SOON)
        assert consumer.closed
        with pytest.raises(ConnectionLost):
            list(consumer.stream())  # it stays lost
        assert not keeps.closed


@pytest.mark.parametrize("channel", ["long-poll", "websocket"])
def test_max_attempts_gives_up_with_a_clear_error(restartable: Any, channel: str) -> None:
    url = restartable()
    with Client(url, timeout=5) as client:
        consumer = client.consumer("chat", channel=channel, max_attempts=2)
        restartable.stop()
        with pytest.raises(ConnectionLost, match="gave up after 2 reconnection attempts") as e:
            consumer.poll(timeout=SOON)
        assert e.value.attempts == 2 and isinstance(e.value.__cause__, TransportError)


def test_async_consumer_resubscribes_after_a_server_restart(restartable: Any) -> None:
    url = restartable()

    async def main() -> None:
        async with AsyncClient(url, timeout=5) as client:
            consumer = await client.consumer("chat")
            socket = await client.consumer("chat", channel="websocket")
            await client.producer("chat").send("before")
            assert [x.body for x in await consumer.poll(timeout=SOON)] == ["before"]
            assert [x.body for x in await socket.poll(timeout=SOON)] == ["before"]
            old = (consumer.id, socket.id)
            await asyncio.to_thread(restartable.stop)
            await asyncio.to_thread(restartable)
            for _ in range(1500):
                if consumer.resumes and socket.resumes:
                    break
                await asyncio.sleep(0.01)
            assert (consumer.id, socket.id) == old
            await client.producer("chat").send("after")
            assert [x.body for x in await consumer.poll(timeout=SOON)] == ["after"]
            assert [x.body for x in await socket.poll(timeout=SOON)] == ["after"]

    asyncio.run(main())


# --------------------------------------------------------------------------------------
# The stream's framing, without a server


def frame(value: Any) -> bytes:
    data = amf3.encode(value)
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def test_frames_skip_heartbeats_and_join_split_chunks() -> None:
    wire = b"\x00\x00" + frame("one") + b"\x00" + frame({"a": [1, 2]}) + frame(m.AsyncMessage(body=3, clientId="C"))
    for size in (1, 2, 7, len(wire)):
        frames = Frames(1 << 20)
        out: list[Any] = []
        for i in range(0, len(wire), size):
            out += frames.feed(wire[i : i + size])
        assert out[:2] == ["one", {"a": [1, 2]}]
        assert isinstance(out[2], m.AsyncMessage) and out[2].body == 3 and len(out) == 3


@pytest.mark.parametrize(
    "wire, error",
    [
        (b"zz\r\n", "not hex"),
        (b"ffffffff\r\n", "larger than"),
        (b"1" * 40, "length line"),
        (b"1\r\n\x01XX", "CRLF"),
    ],
)
def test_frames_refuse_what_is_not_a_stream(wire: bytes, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Frames(1000).feed(wire)


def test_routes_keep_a_message_that_comes_before_its_consumers_id() -> None:
    got: list[Any] = []

    class Sink:
        def _deliver(self, message: Any) -> None:
            got.append(message.body)

    routes = Routes()
    routes.route(m.AsyncMessage(clientId="LATE", body=1))
    routes.route(m.AsyncMessage(clientId="NOBODY", body=2))
    routes.route(m.AsyncMessage(clientId=None, body=3))  # no id: dropped
    routes.add("LATE", Sink())  # type: ignore[arg-type]
    routes.route(m.AsyncMessage(clientId="LATE", body=4))
    assert got == [1, 4]


def test_poll_intervals() -> None:
    class C:
        poll_interval = 2.0

    consumers: Any = [C()]
    assert _next_poll("long-poll", 0.001, consumers) == 0.001  # a long-polling server: again at once
    assert _next_poll("long-poll", None, consumers) == 2.0  # a server that answers at once: not in a loop
    assert _next_poll("poll", 0.001, consumers) == 2.0  # plain polling: the interval at least
    assert _next_poll("poll", 3.0, consumers) == 3.0  # or longer when the server asks


def test_websocket_url_follows_the_gateway_url() -> None:
    assert websocket_url("http://h:8000/gateway") == "ws://h:8000/gateway"
    assert websocket_url("https://h/gateway?amfkit_session=x") == "wss://h/gateway?amfkit_session=x"


def test_received_of_a_small_form_message() -> None:
    raw = amf3.decode(amf3.encode(m.AsyncMessageExt(body=[1], clientId="C", headers={"DSSubtopic": "a.b"}, timeToLive=5)))
    received = Received.of(raw)
    assert (received.body, received.client_id, received.subtopic, received.time_to_live) == ([1], "C", "a.b", 5)


def test_consumers_poll_timeout_is_checked(client: Client) -> None:
    consumer = client.consumer("chat", channel="poll", poll_interval=0.05)
    with pytest.raises(ValueError):
        consumer.poll(timeout=-1)
    assert list(itertools.islice(consumer.poll(timeout=0), 1)) == []
