"""The cursors a worker's push channels write behind their deliveries on `redis://`
(amfkit.messaging.writeback): a batch drained for a stream or a WebSocket is handed out at
once and its cursors reach Redis right after; a write that another process's change to
the client's record made fail (a subscribe, a resume), or whose answer was lost, or that
found Redis away, is repaired, never dropped: the cursors moved here land on Redis's
record, a cursor another process moved stays as it left it, and nothing is delivered
twice. Every test runs against a real Redis (tests/support/redis_server.py)."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
from typing import Any

import pytest

from amfkit import amf3
from amfkit.messaging import Broker, shared
from amfkit.messaging.redis_store import _CAS
from amfkit.messaging.writeback import merged

from cutproxy import CuttingProxy  # tests/support

_names = itertools.count()
CAS_SHA = hashlib.sha1(_CAS.encode()).hexdigest().encode()


def record(**cursors: int) -> dict[str, Any]:
    return {"t": 1.0, "n": {c: ["prices", n, [[None, ""]], 0] for c, n in cursors.items()}, "w": []}


async def next_batch(broker: Any, client_id: str, timeout: float = 10.0) -> list[Any]:
    """The next batch with something in it (a poll that finds nothing writes nothing)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = bodies(await broker.receive(client_id))
        if got:
            return got
        assert loop.time() < deadline, "nothing came"
        await asyncio.sleep(0.01)


async def all_of(broker: Any, client_id: str, count: int) -> list[Any]:
    """`count` messages for the client, over as many polls as they take."""
    got: list[Any] = []
    while len(got) < count:
        got += await next_batch(broker, client_id)
    return got


def test_merged_moves_what_this_worker_moved_and_keeps_what_others_did() -> None:
    base = record(k1=10, k2=10, k3=10)
    local = record(k1=15, k2=15, k3=10)  # this worker handed out k1's and k2's
    current = record(k1=10, k2=12, k4=3)  # meanwhile: k2 moved elsewhere (a resume), k3 went, k4 came
    out = merged(current, base, local)
    assert {c: e[1] for c, e in out["n"].items()} == {"k1": 15, "k2": 12, "k4": 3}


@pytest.fixture
def store(redis_server: Any) -> str:
    return f"{redis_server.url}?prefix=wb{os.getpid()}-{next(_names)}:"


def cursor_in_redis(broker: Any, client_id: str, consumer_id: str) -> int | None:
    raw = broker.store.get("c:" + client_id)
    return None if raw is None else int(amf3.decode(raw)["n"][consumer_id][1])


async def until(condition: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


def bodies(batch: Any) -> list[Any]:
    return [d.message.body for d in batch.deliveries]


def test_a_push_channels_batch_is_handed_out_and_its_cursor_written_behind(store: str) -> None:
    worker, other = Broker.open(store), Broker.open(store)

    async def main() -> None:
        start = await worker.add_subscription("c", "k", "prices")
        for i in range(3):
            worker.publish("prices", i)
        batch = await worker.receive("c", pushing=True)
        assert bodies(batch) == [0, 1, 2]
        assert cursor_in_redis(worker, "c", "k") == start  # not written yet: handed out first
        assert bodies(await worker.receive("c", pushing=True)) == []  # built on what was handed out
        await until(lambda: cursor_in_redis(worker, "c", "k") == start + 3)
        assert bodies(await other.receive("c")) == []  # another worker: nothing twice

    try:
        asyncio.run(main())
    finally:
        asyncio.run(worker.close())
        asyncio.run(other.close())


def test_a_write_another_process_made_fail_keeps_both_changes(store: str) -> None:
    worker, other = Broker.open(store), Broker.open(store)

    async def main() -> None:
        start = await worker.add_subscription("c", "k1", "prices")
        for i in range(3):
            worker.publish("prices", i)
        assert bodies(await worker.receive("c", pushing=True)) == [0, 1, 2]
        other.subscribe_now("c", "k2", "prices")  # before the write: it will fail
        await until(lambda: cursor_in_redis(worker, "c", "k1") == start + 3)
        assert cursor_in_redis(worker, "c", "k2") == start + 3  # kept, subscribed at the head
        worker.publish("prices", 3)
        batch = await other.receive("c")
        assert sorted((d.consumer_id, d.message.body) for d in batch.deliveries) == [("k1", 3), ("k2", 3)]

    try:
        asyncio.run(main())
    finally:
        asyncio.run(worker.close())
        asyncio.run(other.close())


def test_a_resume_that_made_the_write_fail_wins(store: str) -> None:
    # The client came back elsewhere saying it got message 0 only: what it missed comes
    # again, whatever this worker handed out on the channel it lost.
    worker, other = Broker.open(store), Broker.open(store)

    async def main() -> None:
        start = await worker.add_subscription("c", "k", "prices")
        for i in range(3):
            worker.publish("prices", i)
        assert bodies(await worker.receive("c", pushing=True)) == [0, 1, 2]
        other.resume_now("c", {"k": start + 1})
        await until(lambda: worker._writeback is not None and not len(worker._writeback))
        assert cursor_in_redis(worker, "c", "k") == start + 1
        assert bodies(await other.receive("c")) == [1, 2]

    try:
        asyncio.run(main())
    finally:
        asyncio.run(worker.close())
        asyncio.run(other.close())


def test_a_resume_to_where_redis_still_has_the_cursor_wins_over_the_write_behind(store: str) -> None:
    # The client came back (elsewhere) saying it got nothing of what this worker just
    # handed out, before this worker's write behind reached Redis: the resume puts the
    # cursor where Redis still has it, which looks unmoved; its token says a resume came.
    worker, other = Broker.open(store), Broker.open(store)

    async def main() -> None:
        start = await worker.add_subscription("c", "k", "prices")
        for i in range(3):
            await worker.apublish("prices", i)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        got: list[Any] = []
        while len(got) < 3:  # a push channel's drains (what finds nothing writes nothing)
            got += bodies(await worker.receive("c", pushing=True))
            assert loop.time() < deadline, "nothing came"
        other.resume_now("c", {"k": start})  # before the write behind runs: no await since
        await until(lambda: worker._writeback is not None and not len(worker._writeback))
        assert cursor_in_redis(worker, "c", "k") == start
        assert bodies(await other.receive("c")) == [0, 1, 2]

    try:
        asyncio.run(main())
    finally:
        asyncio.run(worker.close())
        asyncio.run(other.close())


def test_a_write_that_finds_redis_away_is_made_once_it_is_back(store: str, redis_server: Any) -> None:
    worker = Broker.open(store)

    async def main() -> None:
        start = await worker.add_subscription("c", "k", "prices")
        for i in range(3):
            worker.publish("prices", i)
        assert bodies(await worker.receive("c", pushing=True)) == [0, 1, 2]
        redis_server.stop()  # before the write goes
        try:
            await asyncio.sleep(0.5)
            assert bodies(await worker.receive("c", pushing=True)) == []  # still on what was handed out
            assert worker._writeback is not None and len(worker._writeback) == 1
        finally:
            redis_server.start()
        await until(lambda: not len(worker._writeback))
        assert cursor_in_redis(worker, "c", "k") == start + 3

    try:
        asyncio.run(main())
    finally:
        redis_server.start()
        asyncio.run(worker.close())
    other = Broker.open(store)
    try:
        assert bodies(asyncio.run(other.receive("c"))) == []
    finally:
        asyncio.run(other.close())


def test_a_write_applied_but_never_answered_is_found_done(redis_server: Any) -> None:
    proxy = CuttingProxy(redis_server.host, redis_server.port)
    store = f"redis://127.0.0.1:{proxy.port}/0?prefix=wbcut{os.getpid()}-{next(_names)}:"
    worker = Broker.open(store)

    async def main() -> None:
        start = await worker.add_subscription("c", "k", "prices")
        for i in range(3):
            worker.publish("prices", i)
        proxy.arm(CAS_SHA)
        assert bodies(await worker.receive("c", pushing=True)) == [0, 1, 2]
        await until(lambda: worker._writeback is not None and not len(worker._writeback))
        assert proxy.cut.is_set(), "the proxy did not cut the write's answer: the test proves nothing"
        assert cursor_in_redis(worker, "c", "k") == start + 3
        assert bodies(await worker.receive("c", pushing=True)) == []

    try:
        asyncio.run(main())
    finally:
        asyncio.run(worker.close())
        proxy.close()


@pytest.mark.parametrize("applied", [True, False])
def test_a_polls_write_whose_answer_is_lost_while_redis_stays_away_is_settled_behind_it(redis_server: Any, applied: bool, monkeypatch: Any) -> None:
    # A poll's write (not a push channel's) whose answer was lost, Redis then away past
    # POLL_SETTLE: the batch goes out, and once Redis answers the write is found made
    # (applied) or made (not applied): nothing twice, nothing skipped.
    monkeypatch.setattr(shared, "POLL_SETTLE", 0.3)
    proxy = CuttingProxy(redis_server.host, redis_server.port)
    worker = Broker.open(f"redis://127.0.0.1:{proxy.port}/0?prefix=wbcut{os.getpid()}-{next(_names)}:")

    async def main() -> None:
        start = await worker.add_subscription("c", "k", "prices")
        await worker.add_subscription("d", "k2", "prices")
        assert bodies(await worker.receive("c")) == []  # the feed connected, the record read
        for i in range(3):
            await worker.apublish("prices", i)
        assert await all_of(worker, "d", 3) == [0, 1, 2]  # the feed has read them
        proxy.arm(CAS_SHA, apply=applied)
        proxy.hold()
        assert bodies(await worker.receive("c")) == [0, 1, 2]
        assert proxy.cut.is_set(), "the proxy did not cut the write: the test proves nothing"
        assert worker._writeback is not None and len(worker._writeback) == 1, "nothing left to settle the write"
        proxy.release()
        await until(lambda: not len(worker._writeback))
        assert cursor_in_redis(worker, "c", "k") == start + 3
        await worker.apublish("prices", 3)
        assert await next_batch(worker, "c") == [3]

    try:
        asyncio.run(main())
    finally:
        proxy.release()
        asyncio.run(worker.close())
        proxy.close()


@pytest.mark.parametrize("applied", [True, False])
def test_a_poll_that_goes_away_while_its_write_is_unsettled_has_its_batch_again(redis_server: Any, applied: bool) -> None:
    # The poll is cancelled (its HTTP request gone) while its write's answer is lost:
    # it handed nothing out, so its batch comes again, whether Redis applied it or not.
    proxy = CuttingProxy(redis_server.host, redis_server.port)
    worker = Broker.open(f"redis://127.0.0.1:{proxy.port}/0?prefix=wbcut{os.getpid()}-{next(_names)}:")

    async def main() -> None:
        await worker.add_subscription("c", "k", "prices")
        await worker.add_subscription("d", "k2", "prices")
        assert bodies(await worker.receive("c")) == []  # the feed connected, the record read
        for i in range(3):
            await worker.apublish("prices", i)
        assert await all_of(worker, "d", 3) == [0, 1, 2]  # the feed has read them
        proxy.arm(CAS_SHA, apply=applied)
        proxy.hold()
        poll = asyncio.ensure_future(worker.receive("c"))
        await until(proxy.cut.is_set)
        await asyncio.sleep(0.1)  # the poll is now waiting for the write to settle
        assert not poll.done()
        poll.cancel()
        with pytest.raises(asyncio.CancelledError):
            await poll
        proxy.release()
        await until(lambda: worker._writeback is not None and not len(worker._writeback))
        assert bodies(await worker.receive("c")) == [0, 1, 2]
        assert bodies(await worker.receive("c")) == []

    try:
        asyncio.run(main())
    finally:
        proxy.release()
        asyncio.run(worker.close())
        proxy.close()


def test_a_poll_of_a_client_whose_cursors_are_being_written_builds_on_them(store: str) -> None:
    worker = Broker.open(store)

    async def main() -> None:
        start = await worker.add_subscription("c", "k", "prices")
        for i in range(3):
            worker.publish("prices", i)
        assert bodies(await worker.receive("c", pushing=True)) == [0, 1, 2]
        worker.publish("prices", 3)
        await asyncio.sleep(0.05)  # the feed reads it
        assert bodies(await worker.receive("c")) == [3]  # not 0-2 again; answered once written
        assert cursor_in_redis(worker, "c", "k") == start + 4

    try:
        asyncio.run(main())
    finally:
        asyncio.run(worker.close())


def test_parked_long_polls_write_behind_and_take_nothing_twice(store: str) -> None:
    # A parked long-poll is the client's channel held here: its answer goes out at once,
    # the cursors behind it; the next poll (on its keep-alive connection, this worker)
    # builds on them. 30 messages over rapid polls: each once, in order.
    import threading

    import httpx

    from amfkit.messaging import Messaging
    from amfkit.remoting import Gateway, packet
    from amfkit.remoting import messages as m

    from messaging_util import Op, command, packet_of
    from servers import serve_asgi

    messaging = Messaging(["prices"], broker=store, poll_wait=5.0)
    publisher = Broker.open(store)
    with serve_asgi(Gateway({}, messaging=messaging)) as server:
        url = f"http://{server.host}:{server.port}/gateway"
        with httpx.Client(timeout=10) as http:

            def post(message: Any) -> Any:
                r = http.post(url, content=packet_of(message), headers={"content-type": "application/x-amf"})
                return packet.decode(r.content).bodies[0].value

            dsid = post(command(Op.CLIENT_PING)).headers["DSId"]
            post(command(Op.SUBSCRIBE, dsid, "prices"))

            def publish() -> None:
                for i in range(30):
                    publisher.publish("prices", i)

            got: list[Any] = []
            thread = threading.Thread(target=publish)
            thread.start()
            while len(got) < 30:
                answer = post(command(Op.POLL, dsid))
                if isinstance(answer, m.CommandMessage):  # a CLIENT_SYNC (else an empty ack)
                    got += [x.body for x in answer.body]
            thread.join()
            assert got == list(range(30))
    asyncio.run(publisher.close())
    asyncio.run(messaging.close())

