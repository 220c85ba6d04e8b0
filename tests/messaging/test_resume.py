"""A Consumer back from a lost channel goes on after the last message it received, on a
shared broker (`redis://`): a server that wrote a batch to a socket whose bytes never
arrived (a proxy drops them and cuts the connection: what a client sees when its worker
dies there) has moved the Consumer's cursor past them; amfkit's client resubscribes
naming its last position (`amfkitPosition`; a WebSocket's new ping names them all,
`amfkitPositions`) and gets them, in order, once. The same when the server forgot the
client meanwhile. A Flex client's resubscribe (its own id, no position) keeps the cursor.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Iterator
from typing import Any

import pytest

from amfkit.messaging import Broker, Messaging
from amfkit.remoting import AsyncClient, Gateway
from amfkit.remoting import messages as m

from cutproxy import CuttingProxy  # tests/support
from messaging_util import Op, command, ping, post
from servers import serve_asgi

_names = itertools.count()
PUSHING = ["streaming", "websocket", "long-poll"]


class Site:
    def __init__(self, url: str, proxy: CuttingProxy, publisher: Broker) -> None:
        self.url = url  # through the proxy
        self.proxy = proxy
        self.publisher = publisher

    def publish(self, *bodies: str) -> None:
        for body in bodies:
            self.publisher.publish("prices", body)


@pytest.fixture
def site(redis_server: Any) -> Iterator[Site]:
    store = f"{redis_server.url}?prefix=rs{os.getpid()}-{next(_names)}:"
    messaging = Messaging(["prices"], broker=store, poll_wait=1.0)
    with serve_asgi(Gateway({}, messaging=messaging)) as server:
        proxy = CuttingProxy(server.host, server.port)
        publisher = Broker.open(store)
        try:
            yield Site(f"http://127.0.0.1:{proxy.port}/gateway", proxy, publisher)
        finally:
            proxy.close()
            asyncio.run(publisher.close())
            asyncio.run(messaging.close())


async def take(consumer: Any, n: int, timeout: float = 15.0) -> list[Any]:
    """The bodies of the next `n` messages (fewer when `timeout` passes first)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    got: list[Any] = []
    while len(got) < n and loop.time() < deadline:
        got += [r.body for r in await consumer.poll(timeout=deadline - loop.time(), limit=n - len(got))]
    return got


@pytest.mark.parametrize("channel", PUSHING)
def test_a_batch_cut_off_on_its_way_comes_again_after_the_resubscribe(site: Site, channel: str) -> None:
    async def main() -> None:
        async with AsyncClient(site.url, timeout=5) as client:
            consumer = await client.consumer("prices", channel=channel)
            site.publish("m0")
            assert await take(consumer, 1) == ["m0"]
            site.proxy.arm_answer(b"lost-1")
            site.proxy.hold()  # the client comes back once "after" is there to push at once
            site.publish("lost-1", "lost-2")
            assert await asyncio.to_thread(site.proxy.cut.wait, 10), "the proxy cut nothing: the test proves nothing"
            site.publish("after")
            site.proxy.release()
            assert await take(consumer, 3) == ["lost-1", "lost-2", "after"]
            assert await take(consumer, 1, timeout=0.5) == []  # nothing twice
            assert consumer.dropped == 0 and consumer.resumes >= 1

    asyncio.run(main())


@pytest.mark.parametrize("channel", PUSHING)
def test_a_client_the_server_forgot_meanwhile_gets_what_was_published_since_its_last_message(site: Site, channel: str) -> None:
    async def main() -> None:
        async with AsyncClient(site.url, timeout=5) as client:
            consumer = await client.consumer("prices", channel=channel)
            site.publish("m0")
            assert await take(consumer, 1) == ["m0"]
            dsid = client.dsid if channel != "websocket" else consumer._hub._socket.dsid
            await site.publisher.disconnect(dsid)  # its subscription gone (expired, say)
            site.publish("missed-1", "missed-2")
            site.proxy.cut_now()
            site.publish("after")
            assert await take(consumer, 3) == ["missed-1", "missed-2", "after"]
            assert consumer.dropped == 0 and consumer.resumes >= 1

    asyncio.run(main())


def test_a_consumer_resumed_past_what_the_log_holds_is_told_how_many_it_lost(redis_server: Any) -> None:
    store = f"{redis_server.url}?prefix=rs{os.getpid()}-{next(_names)}:&log_records=4"
    messaging = Messaging(["prices"], broker=store, poll_wait=1.0)
    with serve_asgi(Gateway({}, messaging=messaging)) as server:
        proxy = CuttingProxy(server.host, server.port)
        publisher = Broker.open(store)

        async def main() -> None:
            async with AsyncClient(f"http://127.0.0.1:{proxy.port}/gateway", timeout=5) as client:
                consumer = await client.consumer("prices", channel="streaming")
                publisher.publish("prices", "m0")
                assert await take(consumer, 1) == ["m0"]
                await publisher.disconnect(client.dsid)
                for i in range(10):  # the log keeps the newest 4
                    publisher.publish("prices", f"missed-{i}")
                proxy.cut_now()
                assert await take(consumer, 4) == ["missed-6", "missed-7", "missed-8", "missed-9"]
                assert consumer.dropped == 6

        try:
            asyncio.run(main())
        finally:
            proxy.close()
            asyncio.run(publisher.close())
            asyncio.run(messaging.close())


def test_a_flex_resubscribe_keeps_the_cursor_and_a_position_moves_it(site: Site) -> None:
    # The wire, as a Flex client sends it: a subscribe naming the Consumer's own id (how
    # Flex resubscribes) changes nothing; one naming a position goes on after it.
    url = site.url
    dsid = ping(url)
    (ack,) = post(url, command(Op.SUBSCRIBE, dsid, "prices"))
    consumer_id, start = ack.clientId, ack.headers["amfkitPosition"]
    site.publish("a", "b", "c")
    (sync,) = post(url, command(Op.POLL, dsid))
    assert [x.body for x in sync.body] == ["a", "b", "c"]
    positions = [x.headers["amfkitPosition"] for x in sync.body]
    assert positions == [start + 1, start + 2, start + 3]
    (ack,) = post(url, command(Op.SUBSCRIBE, dsid, "prices", consumer_id))
    assert type(ack) is m.AcknowledgeMessage and ack.clientId == consumer_id
    (empty,) = post(url, command(Op.POLL, dsid))
    assert type(empty) is m.AcknowledgeMessage  # nothing again
    (ack,) = post(url, command(Op.SUBSCRIBE, dsid, "prices", consumer_id, amfkitPosition=positions[0]))
    assert ack.headers["amfkitPosition"] == positions[0]
    (sync,) = post(url, command(Op.POLL, dsid))
    assert [x.body for x in sync.body] == ["b", "c"]
    (fault,) = post(url, command(Op.SUBSCRIBE, dsid, "prices", amfkitPosition=1))
    assert type(fault) is m.ErrorMessage and "own clientId" in fault.faultString
    (fault,) = post(url, command(Op.SUBSCRIBE, dsid, "prices", consumer_id, amfkitPosition="x"))
    assert type(fault) is m.ErrorMessage and fault.faultCode == "Server.Processing"


def test_a_socket_taking_over_a_client_pushes_from_the_positions_its_ping_names(site: Site) -> None:
    # What amfkit's client does after a lost socket, on the wire: the new socket's ping
    # names the client's DSId and, in amfkitPositions, each Consumer's last position; the
    # server goes on from there before it pushes anything (else what the cursor already
    # passed would be lost, and a later resubscribe could only bring it out of order).
    import amfkit
    from websockets.sync.client import connect

    url = site.url
    ws_url = url.replace("http://", "ws://")

    def drained_client(*bodies: str) -> tuple[str, str, int]:
        """A client whose cursor is past `bodies` (drained by a poll whose answer, say,
        never reached it): (DSId, consumer id, the position before them)."""
        dsid = ping(url)
        (ack,) = post(url, command(Op.SUBSCRIBE, dsid, "prices"))
        site.publish(*bodies)
        (sync,) = post(url, command(Op.POLL, dsid))
        assert [x.body for x in sync.body] == list(bodies)
        return dsid, ack.clientId, ack.headers["amfkitPosition"]

    def pushed(headers: dict[str, Any], then: tuple[str, ...] = ()) -> list[Any]:
        """The frames a new socket gets for its ping (with `headers`) while it sends
        nothing else (and `then` is published)."""
        out = []
        with connect(ws_url) as ws:
            ws.send(amfkit.amf3.encode(m.CommandMessage(operation=Op.CLIENT_PING, headers=headers)))
            out.append(amfkit.amf3.decode(ws.recv(timeout=5)))
            site.publish(*then)
            try:
                while True:
                    out.append(amfkit.amf3.decode(ws.recv(timeout=1.5)))
            except TimeoutError:
                return out

    dsid, consumer_id, start = drained_client("a", "b", "c")
    frames = pushed({"DSId": dsid, "amfkitPositions": {consumer_id: start + 1}})  # it had "a" only
    assert type(frames[0]) is m.AcknowledgeMessage and frames[0].headers["DSId"] == dsid
    assert [x.body for x in frames[1:]] == ["b", "c"]
    # Without positions, a socket taking over the client goes on from its cursor.
    dsid, consumer_id, start = drained_client("e", "f")
    frames = pushed({"DSId": dsid}, then=("g",))
    assert [x.body for x in frames[1:]] == ["g"]
    dsid, consumer_id, start = drained_client("h")
    (fault,) = pushed({"DSId": dsid, "amfkitPositions": {consumer_id: -1}})
    assert type(fault) is m.ErrorMessage and "amfkitPositions" in fault.faultString
