"""The demo's live data: the price feed on `prices` (subtopic per pair, `symbol`
header for selectors, clients may not send) and the `chat` destination, through the
demo gateway's ASGI app with Flex packets."""

from __future__ import annotations

import time

from amfkit.demo.app import build
from amfkit.demo.live import PAIRS, PriceFeed
from amfkit.demo.services import InstrumentPriceSmall
from amfkit.remoting import messages as m, packet

from gateway_util import asgi_post, flex_shape, raw_packet

Op = m.Operation


def post(gw, *messages):
    data = raw_packet(3, [("null", f"/{i + 1}", flex_shape(x)) for i, x in enumerate(messages)])
    status, _, out = asgi_post(gw, data)
    assert status == 200, out
    return [b.value for b in packet.decode(out).bodies]


def command(op, dsid="nil", destination="", client_id=None, **headers):
    return m.CommandMessage(operation=op, destination=destination, clientId=client_id, headers={"DSId": dsid, **headers})



def connect(gw, **subscription):
    (ack,) = post(gw, command(Op.CLIENT_PING))
    dsid = ack.headers["DSId"]
    (ack,) = post(gw, command(Op.SUBSCRIBE, dsid, "prices", **subscription))
    assert type(ack) is m.AcknowledgeMessage, ack
    return dsid


def polled(gw, dsid):
    (reply,) = post(gw, command(Op.POLL, dsid))
    return reply.body if isinstance(reply, m.CommandMessage) else []


def test_the_feed_quotes_each_pair_with_its_symbol_and_subtopic(tmp_path):
    gw = build(tmp_path / "demo.sqlite3", messaging=_fast())
    everything = connect(gw, DSSubtopic="fx.*")
    eur_only = connect(gw, DSSubtopic="fx.*", DSSelector="symbol = 'EURUSD'")
    yen_topic = connect(gw, DSSubtopic="fx.jpy")
    no_subtopic = connect(gw)  # every price has a subtopic: none for this one (as BlazeDS)
    feed = PriceFeed(gw.messaging)
    feed.tick()
    feed.tick()
    got = polled(gw, everything)
    assert [x.headers["symbol"] for x in got] == [p[0] for p in PAIRS] * 2
    assert all(isinstance(x.body, InstrumentPriceSmall) for x in got)
    assert [x.headers["symbol"] for x in polled(gw, eur_only)] == ["EURUSD", "EURUSD"]
    assert [x.headers["DSSubtopic"] for x in polled(gw, yen_topic)] == ["fx.jpy", "fx.jpy"]
    assert polled(gw, no_subtopic) == []
    assert feed.published == 6


def test_the_feed_thread_runs_until_stopped(tmp_path):
    gw = build(tmp_path / "demo.sqlite3", messaging=_fast())
    dsid = connect(gw, DSSubtopic="fx.*")
    feed = PriceFeed(gw.messaging, interval=0.01).start()
    deadline = time.monotonic() + 5
    while feed.published < 9 and time.monotonic() < deadline:
        time.sleep(0.01)
    feed.stop()
    n = feed.published
    assert n >= 9 and len(polled(gw, dsid)) == n
    time.sleep(0.05)
    assert feed.published == n  # stopped


def test_clients_may_not_send_prices_but_may_chat(tmp_path):
    gw = build(tmp_path / "demo.sqlite3", messaging=_fast())
    (ack,) = post(gw, command(Op.CLIENT_PING))
    dsid = ack.headers["DSId"]
    (ack,) = post(gw, command(Op.SUBSCRIBE, dsid, "chat"))
    (refused,) = post(gw, m.AsyncMessage(destination="prices", body=1, headers={"DSId": dsid}))
    assert type(refused) is m.ErrorMessage
    (sent,) = post(gw, m.AsyncMessage(destination="chat", body={"user": "ada", "text": "hi"}, headers={"DSId": dsid}))
    assert type(sent) is m.AcknowledgeMessage
    (posted,) = post(gw, m.RemotingMessage(destination="ChatService", operation="post", body=["bob", "hello"], headers={"DSId": dsid}))
    assert type(posted) is m.AcknowledgeMessage and isinstance(posted.body, str)
    assert [x.body for x in polled(gw, dsid)] == [{"user": "ada", "text": "hi"}, {"user": "bob", "text": "hello"}]
    (bad,) = post(gw, m.RemotingMessage(destination="ChatService", operation="post", body=["bob", "x" * 1001], headers={"DSId": dsid}))
    assert type(bad) is m.ErrorMessage and bad.faultCode == "Client.Argument"


def _fast():
    from amfkit.demo.live import demo_messaging

    return demo_messaging(poll_wait=0)
