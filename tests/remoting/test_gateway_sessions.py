"""The gateway's session store (`amfkit.remoting.sessions`)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from amfkit.remoting.sessions import MemorySessionStore, Session, new_session_id

from gateway_util import answer, gateway, request


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_create_get_save_delete() -> None:
    store = MemorySessionStore()
    sid, s = run(store.create())
    assert isinstance(s, Session) and s == {}
    s["a"] = 1
    run(store.save(sid, s))
    assert run(store.get(sid)) == {"a": 1}
    run(store.delete(sid))
    assert run(store.get(sid)) is None
    run(store.delete(sid))  # no error


def test_create_with_an_id() -> None:
    store = MemorySessionStore()
    sid, _ = run(store.create("CLIENT-0001-ABCD"))
    assert sid == "CLIENT-0001-ABCD"
    assert run(store.get(sid)) == {}


def test_session_ids_are_random_uuids() -> None:
    ids = {new_session_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 36 and i == i.upper() for i in ids)


def test_expiry_is_sliding() -> None:
    clock = Clock()
    store = MemorySessionStore(ttl=10, clock=clock)
    sid, _ = run(store.create())
    clock.now += 9
    assert run(store.get(sid)) is not None  # used: expiry moves on
    clock.now += 9
    assert run(store.get(sid)) is not None
    clock.now += 10.5
    assert run(store.get(sid)) is None
    assert len(store) == 0


def test_expired_sessions_are_purged_when_creating() -> None:
    clock = Clock()
    store = MemorySessionStore(ttl=5, clock=clock)
    for _ in range(10):
        run(store.create())
    clock.now += 6
    run(store.create())
    assert len(store) == 1


def test_max_sessions_drops_the_least_recently_used() -> None:
    store = MemorySessionStore(max_sessions=3)
    a, _ = run(store.create())
    b, _ = run(store.create())
    c, _ = run(store.create())
    run(store.get(a))  # a is now the most recent
    d, _ = run(store.create())
    assert run(store.get(b)) is None
    assert all(run(store.get(x)) is not None for x in (a, c, d))
    assert len(store) == 3


def test_session_notices_top_level_changes() -> None:
    s = Session({"a": [1]})
    assert not s.modified
    s["a"].append(2)  # nested: not seen
    assert not s.modified
    for change in (
        lambda: s.__setitem__("b", 1),
        lambda: s.pop("b"),
        lambda: s.update(c=1),
        lambda: s.setdefault("d", 1),
        lambda: s.__delitem__("d"),
        lambda: s.popitem(),
        lambda: s.clear(),
    ):
        s.modified = False
        change()
        assert s.modified
    s.modified = False
    s["x"] = 1
    s.modified = False
    s.setdefault("x", 2)  # present: no change
    assert not s.modified


@pytest.mark.parametrize("bad", [{"ttl": 0}, {"max_sessions": 0}])
def test_invalid_options(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        MemorySessionStore(**bad)  # type: ignore[arg-type]


def test_store_is_safe_across_threads() -> None:
    store = MemorySessionStore(max_sessions=500)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            loop = asyncio.new_event_loop()
            try:
                for _ in range(300):
                    sid, s = loop.run_until_complete(store.create())
                    s["k"] = sid
                    loop.run_until_complete(store.save(sid, s))
                    got = loop.run_until_complete(store.get(sid))
                    assert got is None or got["k"] == sid
            finally:
                loop.close()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store) <= 500


def test_gateway_uses_a_given_store() -> None:
    store = MemorySessionStore()
    gw = gateway(session_store=store)
    env = answer(gw, request(0, [("EchoService.remember", "/1", ["x"])]))
    sid = env.header("AppendToGatewayUrl").value.split("=", 1)[1]  # type: ignore[union-attr]
    assert run(store.get(sid)) == {"value": "x"}


def test_expired_session_starts_a_new_one() -> None:
    clock = Clock()
    gw = gateway(session_store=MemorySessionStore(ttl=60, clock=clock))
    suffix = answer(gw, request(0, [("EchoService.remember", "/1", ["x"])])).header("AppendToGatewayUrl").value  # type: ignore[union-attr]
    clock.now += 61
    env = answer(gw, request(0, [("EchoService.recall", "/1", [])]), path="/gateway" + suffix)
    assert env.bodies[0].value is None
