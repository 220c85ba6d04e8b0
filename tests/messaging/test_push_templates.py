"""A pushed copy is spliced from one encoding per published message: it must decode
equal to the copy encoded directly, in both forms, and fall back for other ids."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from amfkit import amf3
from amfkit.messaging import push
from amfkit.messaging.broker import Batch, Delivery, Message
from amfkit.messaging.commands import copy_for
from amfkit.remoting.messages import new_id

CONSUMERS = [new_id(), new_id().lower(), "consumer-not-a-uuid", "ABCDEFGH-ABCD-ABCD-ABCD-ABCDEFGHIJKL", "x" * 36]


def _message(**kw: Any) -> Message:
    headers = {"DSSubtopic": "a.b", "seq": 7, "note": "hello"}
    return Message("prices", body={"price": 1.5, "name": "EUR", "list": ["EUR", "EUR"]}, headers=headers, time_to_live=5000, correlation_id="C1", **kw)


class _Clients:
    def __init__(self, small: bool) -> None:
        self._small = small

    def small(self, client_id: str) -> bool:
        return self._small


class _Messaging:
    def __init__(self, small: bool) -> None:
        self.clients = _Clients(small)
        self.broker = None


def _pusher(small: bool, default: Any = None) -> push.Pusher:
    p = push.Pusher.__new__(push.Pusher)
    p.messaging = _Messaging(small)  # type: ignore[assignment]
    p.client_id = new_id()
    p._default = default
    p._ids = {}
    p._encode = amf3.Encoder(default=default).encode if default is not None else amf3.encode
    return p


@pytest.mark.parametrize("small", [False, True])
def test_spliced_copies_decode_equal(small: bool) -> None:
    message = _message()
    deliveries = [Delivery(c, message) for c in CONSUMERS]
    out = asyncio.run(_pusher(small).encoded(Batch(deliveries, {})))
    assert len(out) == len(deliveries)
    for data, d in zip(out, deliveries):
        direct = amf3.encode(copy_for(d, small))
        got = amf3.decode(data)
        assert got == amf3.decode(direct)
        assert got.clientId == d.consumer_id
        assert type(got).__name__ == ("AsyncMessageExt" if small else "AsyncMessage")
    # a template was made for the message, and it splices
    entry = push._templates_for(small, None)[id(message)]
    assert entry[0] is message and entry[1] is not None


@pytest.mark.parametrize("small", [False, True])
def test_consumer_id_elsewhere_in_the_message(small: bool) -> None:
    """The consumer's id also in the body and headers (a string reference when encoded
    directly): the spliced copy still decodes equal."""
    consumer = new_id()
    message = Message("prices", body=[consumer, {"to": consumer}], headers={"who": consumer}, message_id=consumer)
    out = asyncio.run(_pusher(small).encoded(Batch([Delivery(consumer, message), Delivery(new_id(), message)], {})))
    for data, consumer_id in zip(out, [consumer, None]):
        got = amf3.decode(data)
        if consumer_id is not None:
            assert got == amf3.decode(amf3.encode(copy_for(Delivery(consumer, message), small)))


@pytest.mark.parametrize("small", [False, True])
def test_unencodable_copy_falls_back(small: bool) -> None:
    message = Message("prices", body=object())
    consumer = new_id()
    out = asyncio.run(_pusher(small).encoded(Batch([Delivery(consumer, message)], {})))
    err = amf3.decode(out[0])
    assert err.faultCode == "Server.Processing" and err.clientId == consumer
    assert push._templates_for(small, None)[id(message)][1] is None


def test_templates_are_bounded_and_per_encoder() -> None:
    seen = []
    for _ in range(push.TEMPLATES + 10):
        m = _message()
        seen.append(m)
        asyncio.run(_pusher(True).encoded(Batch([Delivery(new_id(), m)], {})))
    assert len(push._templates_for(True, None)) <= push.TEMPLATES
    m = seen[-1]

    class Money:
        def __init__(self, v: int) -> None:
            self.v = v

    def default(o: Any) -> Any:
        return {"money": o.v} if isinstance(o, Money) else o

    m2 = Message("prices", body=Money(3))
    c = new_id()
    data = asyncio.run(_pusher(True, default).encoded(Batch([Delivery(c, m2)], {})))[0]
    assert amf3.decode(data).body == {"money": 3}
    assert id(m2) in push._templates_for(True, default)
    assert id(m) in push._templates_for(True, None)


# --- the channel's wait: one reused timer ---------------------------------------------


class _BrokerMessaging:
    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.clients = _Clients(True)


def test_pusher_wait_times_out_wakes_and_cleans_up() -> None:
    from amfkit.messaging.broker import Subscription
    from amfkit.messaging.memory import MemoryBroker

    async def main() -> None:
        broker = MemoryBroker()
        client = new_id()
        await broker.add_subscription(client, new_id(), "prices", Subscription())
        p = push.Pusher(_BrokerMessaging(broker), client)  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        # nothing queued: times out after about the timeout, leaving no waiter behind
        t0 = loop.time()
        assert await p.next_batch(0.05) is None
        assert 0.04 <= loop.time() - t0 < 1.0
        assert broker.stats()["waiters"] == 0
        # a publish wakes the wait long before its timeout; the timer stays for reuse
        loop.call_later(0.01, broker.publish, Message("prices", body=1))
        t0 = loop.time()
        batch = await p.next_batch(5.0)
        assert batch is not None and [d.message.body for d in batch.deliveries] == [1]
        assert loop.time() - t0 < 1.0
        timer = p._timer
        assert timer is not None
        # a later deadline keeps the same timer; a wake ends the wait with no batch
        loop.call_later(0.01, broker.wake, client)
        assert await p.next_batch(6.0) is None
        assert p._timer is timer and broker.stats()["waiters"] == 0
        # an earlier deadline sets a new timer, which times the wait out
        t0 = loop.time()
        assert await p.next_batch(0.05) is None
        assert 0.04 <= loop.time() - t0 < 1.0 and broker.stats()["waiters"] == 0
        # cancelled while waiting: no waiter, no timer left
        task = loop.create_task(p.next_batch(5.0))
        await asyncio.sleep(0.01)
        assert broker.stats()["waiters"] == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert broker.stats()["waiters"] == 0 and p._timer is None
        # the deadline reached while the timer was armed for a later one... then a
        # deadline moved later than the timer: the timer fires early and is set again
        p._deadline = 0.0
        t0 = loop.time()
        assert await p.next_batch(0.05) is None
        assert await p.next_batch(0.1) is None
        assert 0.14 <= loop.time() - t0 < 1.5

    asyncio.run(main())
