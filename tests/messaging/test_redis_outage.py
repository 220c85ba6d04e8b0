"""The Redis broker when Redis goes away at the worst moments: a drain whose write Redis
applied but never answered (a proxy cuts the connection in between) still delivers its
batch, once; a stream outlives a Redis restart and delivers what was published while
Redis was down; a subscribe while Redis is down gets a clear fault, not "internal error".
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import threading
import time
from typing import Any

import pytest

from amfkit import amf3
from amfkit.messaging import Broker, shared
from amfkit.messaging.redis_store import _CAS

from cutproxy import CuttingProxy  # tests/support

_names = itertools.count()
CAS_SHA = hashlib.sha1(_CAS.encode()).hexdigest().encode()


@pytest.fixture
def proxy(redis_server: Any) -> Any:
    p = CuttingProxy(redis_server.host, redis_server.port)
    yield p
    p.close()


def broker_through(proxy: CuttingProxy) -> Any:
    return Broker.open(f"redis://127.0.0.1:{proxy.port}/0?prefix=cut{os.getpid()}-{next(_names)}:")


@pytest.mark.parametrize("where", ["thread", "event loop"])
def test_a_drain_whose_write_redis_applied_but_never_answered_delivers_its_batch_once(proxy: CuttingProxy, where: str) -> None:
    # The cursors move in Redis (a compare-and-set of the client's record) before the
    # messages are handed out: an answer lost after Redis applied it used to lose them.
    broker = broker_through(proxy)
    try:
        asyncio.run(broker.add_subscription("c", "k", "prices"))
        for i in range(5):
            broker.publish("prices", i)
        proxy.arm(CAS_SHA)

        async def on_loop() -> Any:
            return await broker.receive("c")

        batch = broker.drain("c") if where == "thread" else asyncio.run(on_loop())
        assert proxy.cut.is_set(), "the proxy did not cut the write's answer: the test proves nothing"
        got = [d.message.body for d in batch.deliveries]
        for _ in range(3):  # nothing left, nothing twice
            again = broker.drain("c") if where == "thread" else asyncio.run(on_loop())
            got += [d.message.body for d in again.deliveries]
        assert got == [0, 1, 2, 3, 4]
    finally:
        asyncio.run(broker.close())


@pytest.mark.parametrize("applied", [True, False])
def test_a_drain_whose_answer_is_lost_while_redis_stays_away_past_the_settle_limit_loses_nothing(proxy: CuttingProxy, applied: bool, monkeypatch: Any, caplog: Any) -> None:
    # A drain's write whose answer was lost, with Redis away longer than SETTLE_TIMEOUT:
    # its batch is handed out, and once Redis answers the write is found made (applied)
    # or made (not applied), so the next drain neither repeats nor skips anything.
    monkeypatch.setattr(shared, "SETTLE_TIMEOUT", 0.5)
    broker = Broker.open(f"redis://127.0.0.1:{proxy.port}/0?prefix=cut{os.getpid()}-{next(_names)}:&socket_timeout=0.3")
    try:
        start = asyncio.run(broker.add_subscription("c", "k", "prices"))
        for i in range(5):
            broker.publish("prices", i)
        proxy.arm(CAS_SHA, apply=applied)
        proxy.hold()  # the settle's reads find Redis away
        assert [d.message.body for d in broker.drain("c").deliveries] == [0, 1, 2, 3, 4]
        assert proxy.cut.is_set(), "the proxy did not cut the write: the test proves nothing"
        assert "its batch is handed out" in caplog.text
        assert broker._unsure, "the write was not left for the listener to settle"
        proxy.release()
        deadline = time.monotonic() + 20
        while broker._unsure:
            assert time.monotonic() < deadline, "the write was never settled"
            time.sleep(0.02)
        record = amf3.decode(broker.store.get("c:c"))
        assert int(record["n"]["k"][1]) == start + 5
        broker.publish("prices", 5)
        assert [d.message.body for d in broker.drain("c").deliveries] == [5]
    finally:
        proxy.release()
        asyncio.run(broker.close())


def test_a_drain_whose_write_never_reached_redis_delivers_on_the_next_one(proxy: CuttingProxy, redis_server: Any) -> None:
    # The other way a write's answer is lost: Redis did not apply it. The batch is not
    # handed out then; the next drain has it (once).
    broker = broker_through(proxy)
    try:
        asyncio.run(broker.add_subscription("c", "k", "prices"))
        for i in range(3):
            broker.publish("prices", i)
        redis_server.stop()

        async def drain() -> Any:
            return await asyncio.wait_for(broker.receive("c"), 2.0)

        with pytest.raises((Exception, asyncio.TimeoutError)):
            asyncio.run(drain())
        redis_server.start()
        got: list[int] = []
        for _ in range(3):
            got += [d.message.body for d in asyncio.run(broker.receive("c")).deliveries]
        assert got == [0, 1, 2]
    finally:
        redis_server.start()
        asyncio.run(broker.close())


# --- through a gateway -----------------------------------------------------------------


@pytest.fixture
def gateway_url(redis_server: Any) -> Any:
    """A gateway on the Redis broker (served by uvicorn in this process) and its store URL."""
    from amfkit.messaging import Messaging
    from amfkit.remoting import Gateway

    from servers import serve_asgi

    store = f"{redis_server.url}?prefix=gw{os.getpid()}-{next(_names)}:"
    messaging = Messaging(["prices"], broker=store, poll_wait=1.0)
    with serve_asgi(Gateway({}, messaging=messaging)) as server:
        try:
            yield f"http://{server.host}:{server.port}/gateway", store
        finally:
            redis_server.start()
            asyncio.run(messaging.close())  # ends the streams before the server stops


def test_while_redis_is_down_subscribes_and_sends_get_a_clear_fault_and_polls_wait(gateway_url: Any, redis_server: Any, caplog: Any) -> None:
    from amfkit.remoting import messages as m

    from messaging_util import Op, command, ping, post, send, subscribe

    url, _ = gateway_url
    dsid = ping(url)
    subscribe(url, dsid)
    redis_server.stop()
    try:
        (fault,) = post(url, command(Op.SUBSCRIBE, dsid, "prices"))
        assert isinstance(fault, m.ErrorMessage), fault
        assert fault.faultCode == "Server.Processing.Unavailable", fault.faultCode
        assert "cannot be reached" in fault.faultString and "not subscribed" in fault.faultString
        (fault,) = post(url, send("prices", "hi", dsid))
        assert isinstance(fault, m.ErrorMessage) and fault.faultCode == "Server.Processing.Unavailable"
        assert "not published" in fault.faultString
        (answer,) = post(url, command(Op.POLL, dsid))  # a channel poll: empty, poll again in a second
        assert type(answer) is m.AcknowledgeMessage and answer.headers["DSPollWait"] == 1000, answer
        assert not [r for r in caplog.records if r.exc_info], "a traceback in the log"
    finally:
        redis_server.start()
    subscribe(url, dsid)  # and all is well again
    (ack,) = post(url, send("prices", "back", dsid))
    assert type(ack) is m.AcknowledgeMessage, ack


def test_a_stream_outlives_redis_killed_under_load_and_loses_nothing_acknowledged(gateway_url: Any, redis_server: Any, caplog: Any) -> None:
    # Redis SIGKILLed (its every write fsynced first) while a publisher runs and the
    # stream delivers: the stream stays open (no DISCONNECT, no end), and every message
    # Redis acknowledged to the publisher reaches it, once, in order. (A publish whose
    # answer was lost may have been applied: the publisher's next try is another message,
    # [i, attempt], and either may arrive.)
    from amfkit.messaging.logstore import StoreError
    from amfkit.remoting import messages as m

    from messaging_util import StreamClient, ping, subscribe

    url, store = gateway_url
    dsid = ping(url)
    subscribe(url, dsid)
    stream = StreamClient(url, dsid)
    acked: list[int] = []
    stop = threading.Event()
    publisher = Broker.open(store)

    def publish() -> None:
        attempts = itertools.count()
        for i in itertools.count():
            while not stop.is_set():
                body = [i, next(attempts)]
                try:
                    publisher.publish("prices", body)
                except StoreError:  # Redis away: not acknowledged, tried again
                    time.sleep(0.02)
                    continue
                acked.append(body)
                break
            if stop.is_set():
                return

    got: list[Any] = []
    thread = threading.Thread(target=publish)
    try:
        assert stream.status == 200 and stream.next().correlationId == "open"
        thread.start()
        for kill in range(3):
            while len(got) < 40 * (kill + 1):
                got.append(stream.next(timeout=20))
            redis_server.kill()
            redis_server.start()
        n = len(acked)
        while len(acked) < n + 40:
            time.sleep(0.01)
        stop.set()
        thread.join()
        while not got or got[-1] is None or got[-1].body != acked[-1]:
            item = stream.next(timeout=20)
            got.append(item)
            if item is None or not isinstance(item, m.AsyncMessage):
                break
        assert all(type(x) is m.AsyncMessage for x in got), [x for x in got if type(x) is not m.AsyncMessage][:3]
        bodies = [tuple(x.body) for x in got]
        assert bodies == sorted(set(bodies)), "a message delivered twice or out of order"
        lost = sorted({tuple(b) for b in acked} - set(bodies))
        assert not lost, f"acknowledged, never delivered: {lost[:10]}"
        assert not [r for r in caplog.records if r.exc_info], "a traceback in the log"
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
        stream.close()
        redis_server.start()
        asyncio.run(publisher.close())


def test_a_stream_opened_while_redis_is_down_on_a_worker_that_did_not_see_the_ping_is_503(gateway_url: Any, redis_server: Any) -> None:
    # Not 400 ("unknown FlexClient"): the client would take itself for forgotten and
    # subscribe anew from the newest message on, losing what came meanwhile.
    from messaging_util import StreamClient

    url, _ = gateway_url
    redis_server.stop()
    try:
        stream = StreamClient(url, "6F3C1E52-0B7A-4C2D-9E41-3A5B6C7D8E9F")  # pinged another worker
        assert stream.status == 503, (stream.status, stream.text)
        assert "try again" in stream.text
        stream.close()
    finally:
        redis_server.start()
    stream = StreamClient(url, "6F3C1E52-0B7A-4C2D-9E41-3A5B6C7D8E9F")
    assert stream.status == 400  # Redis says: never pinged
    stream.close()


def test_a_worker_starts_while_redis_is_down_and_serves_once_it_is_back(redis_server: Any, python_exe: str, python_env: dict[str, str], tmp_path: Any) -> None:
    # A supervisor restarting a dead worker while Redis restarts: the app's import opens
    # the store without reaching Redis; until Redis is back the worker answers what needs
    # it with Server.Processing.Unavailable, then serves as ever.
    from amfkit.remoting import messages as m

    from messaging_util import Op, command, post
    from servers import serve_cli

    store = f"{redis_server.url}?prefix=lazy{os.getpid()}-{next(_names)}:"
    (tmp_path / "lazyapp.py").write_text(
        "from amfkit.messaging import Messaging\n"
        "from amfkit.remoting import Gateway\n"
        f"app = Gateway({{}}, messaging=Messaging(['prices'], broker={store!r}), session_store={store!r})\n"
    )
    redis_server.stop()
    try:
        with serve_cli(python_exe, python_env, tmp_path, "lazyapp:app", ready=lambda url: post(url, command(Op.CLIENT_PING))) as url:
            (fault,) = post(url, command(Op.CLIENT_PING))
            assert type(fault) is m.ErrorMessage and fault.faultCode == "Server.Processing.Unavailable", fault
            (fault,) = post(url, command(Op.SUBSCRIBE, "6F3C1E52-0B7A-4C2D-9E41-3A5B6C7D8E9F", "prices"))
            assert type(fault) is m.ErrorMessage and fault.faultCode == "Server.Processing.Unavailable", fault
            redis_server.start()
            (ack,) = post(url, command(Op.CLIENT_PING))
            dsid = ack.headers["DSId"]
            (ack,) = post(url, command(Op.SUBSCRIBE, dsid, "prices"))
            assert type(ack) is m.AcknowledgeMessage, ack
    finally:
        redis_server.start()
