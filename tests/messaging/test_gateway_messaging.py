"""Flex messaging through the gateway's ASGI app, with the packets Flex and Royale send:
the ping handshake, subscribe, polls (the channel's and Consumer.receive()'s),
long-polling and its bounds, multi-subscribe, sends and their rules, faults, small
forms both ways, and `context.publish` from a service."""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from typing import Any

import pytest

import amfkit
from amfkit.messaging import Destination, Messaging
from amfkit.messaging.commands import MESSAGES_DROPPED, NOT_SUBSCRIBED
from amfkit.remoting import Gateway, packet
from amfkit.remoting import messages as m

from gateway_util import asgi_post, authenticate, flex_shape, raw_packet, royale_shape
from messaging_util import Ticker  # a service that publishes

Op = m.Operation


def gateway(*destinations: Any, authenticator: Any = None, **options: Any) -> Gateway:
    options.setdefault("poll_wait", 0)
    messaging = Messaging(destinations or ("prices", "chat"), **options)
    return Gateway({"Ticker": Ticker}, messaging=messaging, authenticator=authenticator)


def packet_of(*messages: Any, shape: str = "flex") -> bytes:
    to_bytes = flex_shape if shape == "flex" else royale_shape
    return raw_packet(3, [("null", f"/{i + 1}", to_bytes(x)) for i, x in enumerate(messages)])


def post(gw: Gateway, *messages: Any, shape: str = "flex") -> list[Any]:
    """POST one packet of Flex messages through the ASGI app; the answers' values."""
    status, headers, out = asgi_post(gw, packet_of(*messages, shape=shape))
    assert status == 200, out
    return [b.value for b in packet.decode(out).bodies]


async def apost(gw: Gateway, *messages: Any) -> list[Any]:
    """`post` on the running event loop, so that several requests can be in flight."""
    data = packet_of(*messages)
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/gateway", "raw_path": b"/gateway", "query_string": b"",
        "headers": [(b"content-type", b"application/x-amf"), (b"content-length", str(len(data)).encode())],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            await asyncio.Event().wait()  # the client stays connected
        delivered = True
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await gw(scope, receive, send)
    assert sent[0]["status"] == 200
    return [b.value for b in packet.decode(b"".join(s.get("body", b"") for s in sent[1:])).bodies]


def command(op: int, dsid: str = "nil", destination: str = "", client_id: Any = None, body: Any = None, **headers: Any) -> m.CommandMessage:
    return m.CommandMessage(operation=op, destination=destination, clientId=client_id, body=body, headers={"DSId": dsid, **headers})


def ping(gw: Gateway, **headers: Any) -> str:
    (ack,) = post(gw, command(Op.CLIENT_PING, **headers))
    return str(ack.headers["DSId"])


def subscribe(gw: Gateway, dsid: str, destination: str = "prices", **headers: Any) -> str:
    (ack,) = post(gw, command(Op.SUBSCRIBE, dsid, destination, **headers))
    assert type(ack) is m.AcknowledgeMessage, ack
    return str(ack.clientId)


def send(destination: str = "prices", body: Any = "hello", dsid: str = "nil", **headers: Any) -> m.AsyncMessage:
    return m.AsyncMessage(destination=destination, body=body, headers={"DSId": dsid, **headers})


def poll(dsid: str) -> m.CommandMessage:
    return command(Op.POLL, dsid)


def bodies(reply: Any) -> list[Any]:
    assert type(reply) in (m.CommandMessage, m.CommandMessageExt) and reply.operation == Op.CLIENT_SYNC, reply
    return [x.body for x in reply.body]


# --- the handshake ----------------------------------------------------------------------


def test_ping_gives_the_client_id_and_the_messaging_version() -> None:
    gw = gateway()
    (ack,) = post(gw, command(Op.CLIENT_PING, DSMessagingVersion=1))
    assert type(ack) is m.AcknowledgeMessageExt  # the client announced small forms
    assert ack.headers["DSMessagingVersion"] == 1.0  # the server's: Flex now sends small forms
    dsid = ack.headers["DSId"]
    assert len(dsid) == 36 and ack.clientId == dsid
    (again,) = post(gw, command(Op.CLIENT_PING, dsid))
    assert type(again) is m.AcknowledgeMessage and again.headers["DSId"] == dsid


def test_without_messaging_nothing_changes() -> None:
    gw = Gateway({"Ticker": Ticker})
    (ack,) = post(gw, command(Op.CLIENT_PING))
    assert "DSMessagingVersion" not in ack.headers
    for reply in post(gw, command(Op.SUBSCRIBE, destination="prices"), send(), command(Op.POLL)):
        assert type(reply) is m.ErrorMessage
    assert type(post(gw, command(Op.DISCONNECT))[0]) is m.AcknowledgeMessage
    (fault,) = post(gw, m.RemotingMessage(destination="Ticker", operation="quote", body=["ABC", 1.5], headers={}))
    assert fault.faultCode == "Server.Processing"  # context.publish without messaging


# --- subscribe, send, poll, unsubscribe -------------------------------------------------


@pytest.mark.parametrize("shape", ["flex", "royale"])
def test_subscribe_send_poll_unsubscribe(shape: str) -> None:
    gw = gateway()
    dsid = ping(gw)
    (sub,) = post(gw, command(Op.SUBSCRIBE, dsid, "prices"), shape=shape)
    consumer = sub.clientId
    assert type(sub) is m.AcknowledgeMessage and len(consumer) == 36 and consumer != dsid
    assert sub.headers["DSId"] == dsid and sub.destination == "prices"

    other = ping(gw)
    sent = send(body={"bid": 1.5}, dsid=other, DSEndpoint="my-amf", custom="yes")
    sent.timeToLive = 60_000
    sent.correlationId = "CORRELATION-1"
    (ack,) = post(gw, sent, shape=shape)
    assert type(ack) is m.AcknowledgeMessage and ack.correlationId == sent.messageId
    assert len(ack.clientId) == 36  # the Producer adopts it

    (reply,) = post(gw, poll(dsid), shape=shape)
    assert type(reply) is m.CommandMessage and reply.operation == Op.CLIENT_SYNC
    assert reply.correlationId is not None and reply.headers["DSId"] == dsid
    (copy,) = reply.body
    assert type(copy) is m.AsyncMessage
    assert copy.clientId == consumer  # Flex routes it to the Consumer by this
    assert copy.messageId == sent.messageId and copy.body == {"bid": 1.5}
    assert copy.headers == {"custom": "yes"}  # DSId and DSEndpoint stripped
    assert copy.destination == "prices" and copy.timeToLive == 60_000
    assert copy.correlationId == "CORRELATION-1"
    assert abs(copy.timestamp - time.time() * 1000) < 60_000  # the server's clock

    (empty,) = post(gw, poll(dsid))
    assert type(empty) is m.AcknowledgeMessage and empty.body is None
    assert "DSPollWait" not in empty.headers  # plain polling: the client's own interval

    (unsub,) = post(gw, command(Op.UNSUBSCRIBE, dsid, "prices", client_id=consumer))
    assert type(unsub) is m.AcknowledgeMessage
    post(gw, send(dsid=other))
    (fault,) = post(gw, poll(dsid))
    assert type(fault) is m.ErrorMessage and fault.faultCode == NOT_SUBSCRIBED


def test_a_poll_from_a_client_without_subscriptions_is_not_subscribed() -> None:
    """Flex then reconnects and resubscribes (after a server restart, an idle expiry)."""
    gw = gateway()
    for dsid in ("nil", ping(gw), "0F0E0D0C-0B0A-0908-0706-050403020100"):
        (fault,) = post(gw, poll(dsid))
        assert type(fault) is m.ErrorMessage
        assert fault.faultCode == "Server.Processing.NotSubscribed"
    assert post(gw, send())[0].correlationId is not None  # and the server goes on


def test_every_subscriber_gets_its_own_copy() -> None:
    gw = gateway()
    clients = [ping(gw) for _ in range(3)]
    consumers = {dsid: subscribe(gw, dsid) for dsid in clients}
    post(gw, send(body="tick"))
    for dsid in clients:
        (reply,) = post(gw, poll(dsid))
        (copy,) = reply.body
        assert copy.clientId == consumers[dsid] and copy.body == "tick"


def test_a_consumer_keeps_its_client_id_when_it_resubscribes() -> None:
    gw = gateway()
    dsid = ping(gw)
    consumer = subscribe(gw, dsid)
    (again,) = post(gw, command(Op.SUBSCRIBE, dsid, "prices", client_id=consumer))
    assert again.clientId == consumer
    post(gw, send())
    assert len(post(gw, poll(dsid))[0].body) == 1
    # another client cannot take it over
    (fault,) = post(gw, command(Op.SUBSCRIBE, ping(gw), "prices", client_id=consumer))
    assert fault.faultCode == "Server.Processing" and "duplicate subscription" in fault.faultString


def test_consumer_receive_polls_its_own_messages_at_once() -> None:
    gw = gateway(poll_wait=5)  # receive() is never held, long-polling or not
    dsid = ping(gw)
    prices = subscribe(gw, dsid, "prices")
    chat = subscribe(gw, dsid, "chat")
    post(gw, send("prices", "p1"), send("chat", "c1"), send("prices", "p2"))
    (reply,) = post(gw, command(Op.POLL, dsid, "prices", client_id=prices))
    assert bodies(reply) == ["p1", "p2"] and {c.clientId for c in reply.body} == {prices}
    (empty,) = post(gw, command(Op.POLL, dsid, "prices", client_id=prices))
    assert type(empty) is m.AcknowledgeMessage and "DSPollWait" not in empty.headers
    (rest,) = post(gw, poll(dsid))
    assert bodies(rest) == ["c1"]
    for wrong in (
        command(Op.POLL, dsid, "prices", client_id="NOT-A-CONSUMER-ID"),
        command(Op.POLL, dsid, "prices", client_id=chat),  # subscribed elsewhere
        command(Op.POLL, ping(gw), "prices", client_id=prices),  # another client's
    ):
        (fault,) = post(gw, wrong)
        assert fault.faultCode == NOT_SUBSCRIBED and "prices" in fault.faultString


# --- subtopics and selectors ------------------------------------------------------------


def test_subtopics_and_selectors_on_the_wire() -> None:
    gw = gateway()
    dsid = ping(gw)
    subscribe(gw, dsid, "chat", DSSubtopic="room.*", DSSelector="level >= 2")
    post(
        gw,
        send("chat", "high", DSSubtopic="room.1", level=3),
        send("chat", "low", DSSubtopic="room.1", level=1),
        send("chat", "elsewhere", DSSubtopic="lobby", level=5),
        send("chat", "no subtopic", level=5),
        send("chat", "to many", DSSubtopic=["lobby", "room.2"], level=2),
    )
    (reply,) = post(gw, poll(dsid))
    assert bodies(reply) == ["high", "to many"]
    assert reply.body[0].headers == {"DSSubtopic": "room.1", "level": 3}


@pytest.mark.parametrize(
    "headers, fragment",
    [
        ({"DSSelector": "level >= "}, "selector expression is not valid"),
        ({"DSSelector": 42}, "selector expression is not valid"),
        ({"DSSubtopic": "room.*x"}, "subtopic is not valid"),
        ({"DSSubtopic": ["room"]}, "subtopic is not valid"),
    ],
)
def test_a_bad_subscription_is_refused(headers: dict[str, Any], fragment: str) -> None:
    gw = gateway()
    (fault,) = post(gw, command(Op.SUBSCRIBE, destination="chat", **headers))
    assert type(fault) is m.ErrorMessage and fault.faultCode == "Server.Processing"
    assert fragment in fault.faultString


def test_subtopics_only_where_allowed_and_never_wildcards_in_a_send() -> None:
    gw = gateway(Destination("flat", allow_subtopics=False), "chat")
    (fault,) = post(gw, command(Op.SUBSCRIBE, destination="flat", DSSubtopic="a"))
    assert "does not allow subtopics" in fault.faultString
    (fault,) = post(gw, send("flat", DSSubtopic="a"))
    assert "does not allow subtopics" in fault.faultString
    (fault,) = post(gw, send("chat", DSSubtopic="room.*"))
    assert fault.faultCode == "Server.Processing" and "wildcard" in fault.faultString


def test_multi_subscribe_adds_and_removes() -> None:
    gw = gateway()
    dsid = ping(gw)
    (ack,) = post(gw, command(Op.MULTI_SUBSCRIBE, dsid, "chat", DSAddSub=["room.*_;_", "_;_level > 1", "news_;__;_10"]))
    consumer = ack.clientId
    assert type(ack) is m.AcknowledgeMessage and len(consumer) == 36
    post(gw, send("chat", "room", DSSubtopic="room.9"), send("chat", "plain high", level=2), send("chat", "plain low", level=0), send("chat", "news", DSSubtopic="news"))
    (reply,) = post(gw, poll(dsid))
    assert bodies(reply) == ["room", "plain high", "news"] and {c.clientId for c in reply.body} == {consumer}
    (ack,) = post(gw, command(Op.MULTI_SUBSCRIBE, dsid, "chat", client_id=consumer, DSRemSub=["room.*_;_"], DSAddSub=["sport_;_"]))
    assert ack.clientId == consumer
    post(gw, send("chat", "room", DSSubtopic="room.9"), send("chat", "sport", DSSubtopic="sport"))
    assert bodies(post(gw, poll(dsid))[0]) == ["sport"]
    post(gw, command(Op.MULTI_SUBSCRIBE, dsid, "chat", client_id=consumer, DSRemSub=["_;_level > 1", "news_;_", "sport_;_"]))
    assert post(gw, poll(dsid))[0].faultCode == NOT_SUBSCRIBED


@pytest.mark.parametrize("header", [{"DSAddSub": "room_;_"}, {"DSAddSub": ["no separator"]}, {"DSAddSub": [7]}, {"DSRemSub": {"a": 1}}, {"DSAddSub": ["x_;_"] * 300}])
def test_malformed_multi_subscribe_headers(header: dict[str, Any]) -> None:
    gw = gateway()
    (fault,) = post(gw, command(Op.MULTI_SUBSCRIBE, destination="chat", **header))
    assert type(fault) is m.ErrorMessage and "invalid header" in fault.faultString


# --- long-polling -----------------------------------------------------------------------


def test_a_parked_poll_is_woken_by_a_send_from_another_request() -> None:
    gw = gateway(poll_wait=10)
    dsid = ping(gw)
    consumer = subscribe(gw, dsid)

    async def main() -> tuple[list[Any], float]:
        t = time.monotonic()
        parked = asyncio.ensure_future(apost(gw, poll(dsid)))
        await asyncio.sleep(0.05)
        assert not parked.done() and gw.messaging.parking.parked == 1
        await apost(gw, send(body="wake up"))
        replies = await asyncio.wait_for(parked, 2)
        return replies, time.monotonic() - t

    (reply,), elapsed = asyncio.run(main())
    assert elapsed < 2 and bodies(reply) == ["wake up"] and reply.body[0].clientId == consumer
    assert reply.headers["DSPollWait"] == 1  # poll again at once: always listening
    assert gw.messaging.parking.parked == 0


def test_a_parked_poll_is_woken_by_context_publish_from_a_service() -> None:
    gw = gateway(poll_wait=10)
    dsid = ping(gw)
    subscribe(gw, dsid, DSSubtopic="fx.*", DSSelector="symbol = 'ABC'")

    async def main() -> list[Any]:
        parked = asyncio.ensure_future(apost(gw, poll(dsid)))
        await asyncio.sleep(0.05)
        (result,) = await apost(gw, m.RemotingMessage(destination="Ticker", operation="quote", body=["XYZ", 2.0], headers={}))
        await asyncio.sleep(0.05)
        assert not parked.done()  # the selector kept that one out
        (result,) = await apost(gw, m.RemotingMessage(destination="Ticker", operation="quote", body=["ABC", 1.5], headers={}))
        replies = await asyncio.wait_for(parked, 2)
        assert replies[0].body[0].messageId == result.body
        return replies

    (reply,) = asyncio.run(main())
    (copy,) = reply.body
    assert copy.body == {"symbol": "ABC", "bid": 1.5}
    assert copy.headers == {"symbol": "ABC", "DSSubtopic": "fx.eur"}


def test_a_long_poll_times_out_with_an_empty_acknowledgement() -> None:
    gw = gateway(poll_wait=0.2)
    dsid = ping(gw)
    subscribe(gw, dsid)
    t = time.monotonic()
    (ack,) = post(gw, poll(dsid))
    assert 0.15 < time.monotonic() - t < 2
    assert type(ack) is m.AcknowledgeMessage and ack.body is None
    assert ack.headers == {"DSId": dsid, "DSPollWait": 1}


def test_poll_interval_is_the_dspollwait_hint() -> None:
    gw = gateway(poll_wait=0, poll_interval=2.5)
    dsid = ping(gw)
    subscribe(gw, dsid)
    assert post(gw, poll(dsid))[0].headers["DSPollWait"] == 2500


def test_a_poll_batched_with_other_bodies_is_answered_at_once() -> None:
    """Flex piggybacks: poll, send, poll in one request. None of them waits."""
    gw = gateway(poll_wait=10)
    dsid = ping(gw)
    subscribe(gw, dsid)
    t = time.monotonic()
    first, ack, last = post(gw, poll(dsid), send(body="piggy"), poll(dsid))
    assert time.monotonic() - t < 2
    assert type(first) is m.AcknowledgeMessage and "DSPollWait" not in first.headers
    assert type(ack) is m.AcknowledgeMessage
    assert bodies(last) == ["piggy"]


def test_a_second_poll_displaces_the_parked_one_with_a_no_op() -> None:
    gw = gateway(poll_wait=10)
    dsid = ping(gw)
    subscribe(gw, dsid)

    async def main() -> tuple[Any, Any]:
        first = asyncio.ensure_future(apost(gw, poll(dsid)))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(apost(gw, poll(dsid)))
        (noop,) = await asyncio.wait_for(first, 2)
        assert not second.done() and gw.messaging.parking.parked == 1
        await apost(gw, send(body="for the newest"))
        (reply,) = await asyncio.wait_for(second, 2)
        return noop, reply

    noop, reply = asyncio.run(main())
    assert type(noop) is m.CommandMessage and noop.operation == Op.CLIENT_SYNC
    assert noop.headers["DSNoOpPoll"] is True and noop.body is None
    assert bodies(reply) == ["for the newest"]


def test_polls_parked_per_client_are_bounded() -> None:
    gw = gateway(poll_wait=10, max_parked_per_client=2)
    dsid = ping(gw)
    subscribe(gw, dsid)

    async def main() -> list[Any]:
        polls = []
        for _ in range(3):
            polls.append(asyncio.ensure_future(apost(gw, poll(dsid))))
            await asyncio.sleep(0.02)
        (noop,) = await asyncio.wait_for(polls[0], 2)  # the oldest made room
        assert noop.headers["DSNoOpPoll"] is True
        assert gw.messaging.parking.parked_by(dsid) == 2
        # one message: one of the two parked polls takes it, the other waits on
        await apost(gw, send(body="one"))
        done, pending = await asyncio.wait(polls[1:], timeout=2, return_when=asyncio.FIRST_COMPLETED)
        assert len(done) == 1 and len(pending) == 1
        await asyncio.sleep(0.05)
        assert not pending.pop().done()
        await apost(gw, send(body="two"))
        return [bodies(r) for p in polls[1:] for r in await asyncio.wait_for(p, 2)]

    assert sorted(asyncio.run(main())) == [["one"], ["two"]]


def test_polls_parked_per_process_are_bounded() -> None:
    gw = gateway(poll_wait=10, max_parked=1)
    a, b = ping(gw), ping(gw)
    subscribe(gw, a)
    subscribe(gw, b)

    async def main() -> Any:
        parked = asyncio.ensure_future(apost(gw, poll(a)))
        await asyncio.sleep(0.05)
        t = time.monotonic()
        (excess,) = await apost(gw, poll(b))
        assert time.monotonic() - t < 1  # not held
        await apost(gw, send())
        await asyncio.wait_for(parked, 2)
        return excess

    excess = asyncio.run(main())
    assert type(excess) is m.AcknowledgeMessage
    assert excess.headers["DSPollWait"] == 3000  # BlazeDS's wait for excess long-poll clients


def test_disconnect_answers_the_parked_poll_and_forgets_the_client() -> None:
    gw = gateway(poll_wait=10)
    dsid = ping(gw)
    subscribe(gw, dsid)

    async def main() -> Any:
        parked = asyncio.ensure_future(apost(gw, poll(dsid)))
        await asyncio.sleep(0.05)
        (ack,) = await apost(gw, command(Op.DISCONNECT, dsid))
        assert type(ack) is m.AcknowledgeMessage
        (reply,) = await asyncio.wait_for(parked, 2)
        return reply

    reply = asyncio.run(main())
    assert type(reply) is m.AcknowledgeMessage
    assert post(gw, poll(dsid))[0].faultCode == NOT_SUBSCRIBED


def test_the_async_server_holds_many_parked_polls_without_a_thread_each() -> None:
    gw = gateway(poll_wait=30)
    clients = [ping(gw) for _ in range(2000)]
    for dsid in clients:
        subscribe(gw, dsid)
    threads = threading.active_count()

    async def main() -> list[Any]:
        polls = [asyncio.ensure_future(apost(gw, poll(dsid))) for dsid in clients]
        for _ in range(1000):
            await asyncio.sleep(0.01)
            if gw.messaging.parking.parked == len(clients):
                break
        assert gw.messaging.parking.parked == len(clients)
        assert threading.active_count() == threads
        await apost(gw, send(body="all"))
        return [r for p in await asyncio.wait_for(asyncio.gather(*polls), 20) for r in p]

    replies = asyncio.run(main())
    assert [bodies(r) for r in replies] == [["all"]] * len(clients)


# --- bounds ----------------------------------------------------------------------------


def test_a_full_queue_tells_the_consumer_how_many_it_lost() -> None:
    gw = gateway(queue_size=2)
    dsid = ping(gw)
    consumer = subscribe(gw, dsid)
    post(gw, *(send(body=i) for i in range(5)))
    (reply,) = post(gw, poll(dsid))
    notice, *copies = reply.body
    assert type(notice) is m.ErrorMessage and notice.faultCode == MESSAGES_DROPPED
    assert notice.clientId == consumer and notice.destination == "prices"
    assert notice.extendedData == {"dropped": 3}
    assert [c.body for c in copies] == [3, 4]


def test_a_destination_ttl_replaces_the_senders() -> None:
    gw = gateway(Destination("prices", ttl=0.05), "chat")
    dsid = ping(gw)
    subscribe(gw, dsid)
    forever = send(body="expires anyway")
    forever.timeToLive = 0
    post(gw, forever)
    time.sleep(0.1)
    (ack,) = post(gw, poll(dsid))
    assert type(ack) is m.AcknowledgeMessage  # expired before it was polled
    post(gw, send())
    assert post(gw, poll(dsid))[0].body[0].timeToLive == 50


# --- access rules ----------------------------------------------------------------------


def _login(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def test_send_and_subscribe_rules_use_the_authenticator_and_roles() -> None:
    gw = gateway(
        Destination("admin", send_roles=["admin"], subscribe_roles=["admin"]),
        Destination("news", send_roles=()),
        authenticator=authenticate,
    )
    anonymous = ping(gw)
    (fault,) = post(gw, send("admin", dsid=anonymous))
    assert fault.faultCode == "Client.Authentication"
    (fault,) = post(gw, command(Op.SUBSCRIBE, anonymous, "admin"))
    assert fault.faultCode == "Client.Authentication"

    bob = ping(gw)
    assert post(gw, command(Op.LOGIN, bob, body=_login("bob", "builder")))[0].body == "success"
    (fault,) = post(gw, send("admin", dsid=bob))
    assert fault.faultCode == "Client.Authorization"

    alice = ping(gw)
    post(gw, command(Op.LOGIN, alice, body=_login("alice", "wonderland")))
    subscribe(gw, alice, "admin")
    assert type(post(gw, send("admin", "secret", dsid=alice))[0]) is m.AcknowledgeMessage
    assert bodies(post(gw, poll(alice))[0]) == ["secret"]

    # send_roles=(): no client sends there, anyone may listen to the server's news
    subscribe(gw, anonymous, "news")
    assert post(gw, send("news", dsid=alice))[0].faultCode == "Client.Authorization"
    assert gw.messaging.publish("news", "from the server") is not None
    assert bodies(post(gw, poll(anonymous))[0]) == ["from the server"]


# --- faults and hostile input ----------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        command(Op.SUBSCRIBE, destination="nowhere"),
        command(Op.UNSUBSCRIBE, destination="nowhere", client_id="0F0E0D0C-0B0A-0908-0706-050403020100"),
        command(Op.MULTI_SUBSCRIBE, destination="nowhere", DSAddSub=["_;_"]),
        command(Op.POLL, destination="nowhere", client_id="0F0E0D0C-0B0A-0908-0706-050403020100"),
        send("nowhere"),
        send(["not", "a", "name"]),  # type: ignore[arg-type]
    ],
)
def test_unknown_destinations(message: Any) -> None:
    gw = gateway()
    (fault,) = post(gw, message)
    assert type(fault) is m.ErrorMessage and fault.faultCode == "Server.Processing"
    assert "not registered with any service" in fault.faultString


MALFORMED = [
    command(Op.SUBSCRIBE, destination="prices", client_id="spaces are not ids"),
    command(Op.SUBSCRIBE, destination="prices", client_id=12345678),
    m.AsyncMessage(destination="prices", clientId="x" * 200, headers={"DSId": "nil"}),
    send(DSSubtopic=7),
    send(DSSubtopic=["a"] * 1000),
    m.CommandMessage(operation=Op.POLL, destination="prices", clientId=["a list"], headers={"DSId": "nil"}),
    m.CommandMessage(operation=2.5, headers={"DSId": "nil"}),
    m.CommandMessage(operation="2", headers={"DSId": "nil"}),
    m.CommandMessage(operation=Op.SUBSCRIBE, destination="prices", headers=["not", "a", "dict"]),
]


@pytest.mark.parametrize("message", MALFORMED)
def test_malformed_messages_are_faults_and_the_server_goes_on(message: Any) -> None:
    gw = gateway()
    dsid = ping(gw)
    subscribe(gw, dsid)
    replies = post(gw, message, send(body="after"), poll(dsid))
    assert type(replies[0]) is m.ErrorMessage
    assert replies[0].faultCode in ("Server.Processing", NOT_SUBSCRIBED)
    assert type(replies[1]) is m.AcknowledgeMessage
    assert bodies(replies[2]) == ["after"]


def test_a_sent_message_with_odd_fields_is_still_delivered_sanely() -> None:
    gw = gateway()
    dsid = ping(gw)
    subscribe(gw, dsid)
    odd = send(body=[1, 2])
    odd.messageId = 42
    odd.timeToLive = float("nan")
    odd.correlationId = {"not": "text"}
    assert type(post(gw, odd)[0]) is m.AcknowledgeMessage
    (copy,) = post(gw, poll(dsid))[0].body
    assert isinstance(copy.messageId, str) and len(copy.messageId) == 36
    assert copy.timeToLive == 0 and copy.correlationId is None and copy.body == [1, 2]


# --- small forms ----------------------------------------------------------------------


def small(cls: type, **fields: Any) -> Any:
    """A small-form message as the codec decodes one: every field absent, then set."""
    msg = cls.__new__(cls)
    for name in cls._fields:
        setattr(msg, name, None)
    msg.messageId = m.new_id()
    for k, v in fields.items():
        setattr(msg, k, v)
    return msg


def test_small_forms_both_ways() -> None:
    gw = gateway()
    dsid = ping(gw, DSMessagingVersion=1)
    (sub,) = post(gw, small(m.CommandMessageExt, operation=Op.SUBSCRIBE, destination="prices", headers={"DSId": dsid}))
    assert type(sub) is m.AcknowledgeMessageExt and len(sub.clientId) == 36
    (ack,) = post(gw, small(m.AsyncMessageExt, destination="prices", body="tiny", headers={"DSId": dsid}))
    assert type(ack) is m.AcknowledgeMessageExt
    data = packet_of(small(m.CommandMessageExt, operation=Op.POLL, headers={"DSId": dsid}))
    status, _, out = asgi_post(gw, data)
    assert status == 200
    assert b"DSC" in out and b"DSA" in out and b"flex.messaging.messages" not in out
    (reply,) = [b.value for b in packet.decode(out).bodies]
    assert type(reply) is m.CommandMessageExt and reply.operation == Op.CLIENT_SYNC
    (copy,) = reply.body
    assert type(copy) is m.AsyncMessageExt and copy.body == "tiny" and copy.clientId == sub.clientId
    # an error stays in full form
    (fault,) = post(gw, small(m.CommandMessageExt, operation=Op.SUBSCRIBE, destination="nowhere", headers={"DSId": dsid}))
    assert type(fault) is m.ErrorMessage


# --- the server's own publish -------------------------------------------------------------


def test_context_publish_from_a_service() -> None:
    gw = gateway()
    dsid = ping(gw)
    consumer = subscribe(gw, dsid, DSSubtopic="fx.*")
    (result,) = post(gw, m.RemotingMessage(destination="Ticker", operation="quote", body=["ABC", 1.5], headers={"DSId": dsid}))
    (copy,) = post(gw, poll(dsid))[0].body
    assert copy.messageId == result.body and copy.clientId == consumer
    assert copy.body == {"symbol": "ABC", "bid": 1.5} and copy.headers == {"symbol": "ABC", "DSSubtopic": "fx.eur"}


def test_messaging_publish_checks_its_arguments() -> None:
    messaging = Messaging([Destination("flat", allow_subtopics=False), "chat"])
    with pytest.raises(amfkit.remoting.Fault):
        messaging.publish("nowhere", 1)
    for bad in ({"subtopic": "a.*"}, {"subtopic": ""}, {"ttl": -1}):
        with pytest.raises(ValueError):
            messaging.publish("chat", 1, **bad)
    with pytest.raises(ValueError):
        messaging.publish("flat", 1, subtopic="a")
    with pytest.raises(TypeError):
        messaging.publish("chat", 1, headers=[("a", 1)])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [{"poll_wait": -1}, {"poll_interval": 0}, {"max_parked": -1}, {"poll_wait": 30, "client_timeout": 20}, {"broker": "mqtt://localhost"}],
)
def test_messaging_checks_its_options(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Messaging(["chat"], **options)
    with pytest.raises(ValueError):
        Messaging(["chat", "chat"])
    with pytest.raises(TypeError):
        Messaging("chat")


# --- under real servers ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["asgi", "wsgi"])
def test_long_polling_under_a_real_server(kind: str) -> None:
    """uvicorn (one event loop) and a threaded WSGI server (one loop per worker thread:
    the parked poll is woken from another thread's loop)."""
    import concurrent.futures

    import httpx
    from servers import serve_asgi, serve_wsgi

    gw = gateway(poll_wait=10)
    app = gw if kind == "asgi" else gw.wsgi
    serve = serve_asgi if kind == "asgi" else serve_wsgi

    def http(url: str, *messages: Any) -> list[Any]:
        r = httpx.post(url, content=packet_of(*messages), headers={"content-type": "application/x-amf"}, timeout=20)
        assert r.status_code == 200
        return [b.value for b in packet.decode(r.content).bodies]

    with serve(app) as server, concurrent.futures.ThreadPoolExecutor(2) as pool:
        url = server.url + "/gateway"
        dsid = http(url, command(Op.CLIENT_PING))[0].headers["DSId"]
        consumer = http(url, command(Op.SUBSCRIBE, dsid, "prices"))[0].clientId
        t = time.monotonic()
        parked = pool.submit(http, url, poll(dsid))
        for _ in range(200):
            if gw.messaging.parking.parked:
                break
            time.sleep(0.01)
        assert gw.messaging.parking.parked == 1
        http(url, send(body="over the wire"))
        (reply,) = parked.result(timeout=5)
    assert time.monotonic() - t < 5
    assert bodies(reply) == ["over the wire"] and reply.body[0].clientId == consumer
