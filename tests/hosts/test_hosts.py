"""Messaging and sessions across real hosts: network namespaces joined by veth pairs on a
bridge (tests/support/netns.py), Redis on one host, `amfkit serve` on two others,
consumer processes on each of those (each Consumer its own Flex client, on HTTP
streaming or WebSocket) and a publisher process on a fourth host.

What is checked: every message the publisher was told Redis took reaches every consumer,
once, in order (a publish whose answer was lost may arrive or not: the publisher's next
try is another message); a host cut off (its link down) for a while catches up, or its
consumers are told how many they lost; Redis SIGKILLed at random moments under load and
restarted loses nothing it acknowledged; a worker SIGKILLed on one host leaves its
consumers to reconnect to the other and go on; a login on one host holds on the other;
a clean stop leaves nothing in /dev/shm.

`make test` runs the quick form (`test_hosts_quick`: a few consumers, one cut, one
kill); `make test-hosts` runs the full one too (AMFKIT_HOSTS=full: 100 consumers per host,
a 5 s cut, Redis killed five times, a worker killed). Both need root and iproute2
(docs/messaging.md, "Testing across hosts").
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest  # noqa: F401  (its fixtures)

from amfkit.remoting import messages as m

from messaging_util import Op, command, packet_of
from netns import Host, Hosts
from redis_server import find_redis_server

PORT = 8000
REDIS_PORT = 6379

APP = """
from amfkit.messaging import Messaging
from amfkit.remoting import Gateway, Principal
from amfkit.remoting.services import Context, requires

URL = {url!r}


class Desk:
    @requires("staff")
    def who(self, context: Context):
        return context.principal.name


def authenticate(user, password):
    return Principal(user, ["staff"]) if password == "pw" else None


app = Gateway({{"Desk": Desk()}}, messaging=Messaging(["prices"], broker=URL), session_store=URL, authenticator=authenticate)
"""

CONSUMERS = """
import asyncio, json, logging, sys, time
from amfkit.remoting import AsyncClient

url, count, channel, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# What the clients' channels went through (amfkit.messaging.client, DEBUG), for a failure's report.
logging.basicConfig(filename=out + ".log", level=logging.WARNING, format="%(created).3f %(message)s")
logging.getLogger("amfkit.messaging.client").setLevel(logging.DEBUG)


async def one(i, got, dropped, seen, ready):
    async with AsyncClient(url, flex=True, timeout=30) as client:
        consumer = await client.consumer("prices", channel=channel, max_attempts=None)
        logging.warning("consumer %d: client %s, consumer %s", i, client.dsid or consumer._hub._socket.dsid, consumer.id)
        ready.append(i)
        if len(ready) == count:
            print("ready", flush=True)
        lost = 0
        while True:
            for r in await consumer.poll(timeout=1.0):
                if r.body == "end":
                    dropped[i] = consumer.dropped
                    return
                got[i].append(r.body)
                seen[i].append(round(time.time(), 3))
            if consumer.dropped != lost:
                lost = consumer.dropped
                logging.warning("consumer %d: %d dropped so far (after message %s)", i, lost, got[i][-1][0] if got[i] else None)


async def main():
    got = [[] for _ in range(count)]
    seen = [[] for _ in range(count)]
    dropped = [0] * count
    ready = []
    await asyncio.gather(*(one(i, got, dropped, seen, ready) for i in range(count)))
    with open(out, "w") as f:
        json.dump({"got": got, "dropped": dropped, "seen": seen}, f)


asyncio.run(main())
"""

PUBLISHER = """
import itertools, json, sys, time
from amfkit.messaging import Broker
from amfkit.messaging.logstore import StoreError

url, count, rate, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
broker = Broker.open(url)
acked = []
attempts = itertools.count()
start = time.monotonic()
for i in range(count):
    time.sleep(max(0.0, start + i / rate - time.monotonic()))
    while True:
        body = [i, next(attempts)]
        try:
            broker.publish("prices", body)
        except StoreError:  # Redis away: not acknowledged, tried again
            time.sleep(0.05)
            continue
        acked.append(body + [round(time.time(), 3)])
        break
    if i % 50 == 0:
        print("published", i, flush=True)
while True:
    try:
        broker.publish("prices", "end")
        break
    except StoreError:
        time.sleep(0.05)
with open(out, "w") as f:
    json.dump(acked, f)
"""


class Site:
    """The hosts, their Redis and servers, and the files the processes write."""

    def __init__(self, hosts: Hosts, tmp: Path, python_env: dict[str, str]) -> None:
        self.hosts = hosts
        self.tmp = tmp
        self.env = python_env
        self.redis_host = hosts["redis"]
        self.redis_url = f"redis://{self.redis_host.ip}:{REDIS_PORT}/0"
        self.redis: subprocess.Popen[Any] | None = None
        self.servers: dict[str, subprocess.Popen[Any]] = {}
        (tmp / "hostsapp.py").write_text(APP.format(url=self.redis_url))
        (tmp / "consumers.py").write_text(textwrap.dedent(CONSUMERS))
        (tmp / "publisher.py").write_text(textwrap.dedent(PUBLISHER))
        (tmp / "redis").mkdir()

    # -- Redis ----------------------------------------------------------------------------

    def start_redis(self) -> None:
        executable = find_redis_server()
        if executable is None:
            pytest.fail("redis-server not found: `make system-deps` installs it", pytrace=False)
        argv = [
            executable, "--bind", "0.0.0.0", "--port", str(REDIS_PORT), "--protected-mode", "no",
            "--dir", str(self.tmp / "redis"), "--appendonly", "yes", "--appendfsync", "always", "--save", "",
            "--logfile", str(self.tmp / "redis" / "log"),
        ]  # fmt: skip
        self.redis = self.redis_host.popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _until(lambda: _answers(self.redis_host.ip, REDIS_PORT), 30, "redis-server to answer")

    def kill_redis(self) -> None:
        assert self.redis is not None
        self.redis.kill()
        self.redis.wait()

    # -- amfkit serve ---------------------------------------------------------------------

    def serve(self, host: Host, workers: int = 1) -> str:
        argv = [sys.executable, "-m", "amfkit", "serve", "hostsapp:app", "--host", "0.0.0.0", "--port", str(PORT), "--workers", str(workers), "--log-level", "warning"]
        shm = self.tmp / f"shm-{host.name}"  # the server's /dev/shm: nothing may stay there
        shm.mkdir()
        with open(self.tmp / f"serve-{host.name}.log", "wb") as log:
            self.servers[host.name] = host.popen(argv, shm=str(shm), cwd=self.tmp, env=self.env, stdout=log, stderr=log)
        url = f"http://{host.ip}:{PORT}/gateway"
        _until(lambda: _pings(url), 60, f"amfkit serve on host {host.name}")
        return url

    def stop(self, name: str) -> int:
        proc = self.servers.pop(name)
        proc.terminate()
        return proc.wait(30)

    # -- consumers and the publisher ------------------------------------------------------

    def consumers(self, host: Host, count: int, channel: str) -> tuple[subprocess.Popen[Any], Path]:
        """`count` consumers on `host`, each its own Flex client of that host's server
        (through its loopback: a host cut off keeps its consumers); started once all are
        subscribed."""
        out = self.tmp / f"got-{host.name}-{channel}.json"
        url = f"http://127.0.0.1:{PORT}/gateway"
        proc = host.popen([sys.executable, str(self.tmp / "consumers.py"), url, str(count), channel, str(out)], env=self.env, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", f"the consumers on host {host.name} did not start: {line!r}"
        return proc, out

    def publisher(self, count: int, rate: float) -> tuple[subprocess.Popen[Any], Path]:
        out = self.tmp / "acked.json"
        host = self.hosts["pub"]
        proc = host.popen([sys.executable, str(self.tmp / "publisher.py"), self.redis_url, str(count), str(rate), str(out)], env=self.env, stdout=subprocess.PIPE, text=True)
        return proc, out


def _answers(host: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=1.0) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _pings(url: str) -> bool:
    try:
        httpx.post(url, content=packet_of(command(Op.CLIENT_PING)), headers={"content-type": "application/x-amf"}, timeout=5)
        return True
    except httpx.TransportError:
        return False


def _until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.05)


def _post(url: str, *messages: Any) -> list[Any]:
    from amfkit.remoting import packet

    r = httpx.post(url, content=packet_of(*messages), headers={"content-type": "application/x-amf"}, timeout=10)
    assert r.status_code == 200, r.text
    return [b.value for b in packet.decode(r.content).bodies]


def _published(proc: subprocess.Popen[Any], at_least: int) -> None:
    """Read the publisher's progress until it published `at_least` messages."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the publisher ended early"
        if line.startswith("published") and int(line.split()[1]) >= at_least:
            return


def _check(name: str, out: Path, acked: list[list[Any]], events: list[tuple[float, str]]) -> int:
    """Every consumer of a file got every acknowledged message once, in order, or was
    told how many it lost; the number of consumers checked. A failure says when the
    first missing message was acknowledged, what the test did around then, and what the
    consumer's client went through (its channels' log)."""
    report = json.loads(out.read_text())
    wanted = {tuple(b[:2]) for b in acked}
    for i, (got, dropped) in enumerate(zip(report["got"], report["dropped"])):
        bodies = [tuple(b) for b in got]
        assert bodies == sorted(set(bodies)), f"{name} consumer {i}: a message twice or out of order"
        missing = wanted - set(bodies)
        if len(missing) > dropped:
            raise AssertionError(
                f"{name} consumer {i}: {len(missing)} acknowledged messages missing, {dropped} reported dropped: {_ranges(missing)}\n"
                + _story(out, i, missing, acked, report, events)
            )
    return len(report["got"])


def _story(out: Path, i: int, missing: set[tuple[Any, ...]], acked: list[list[Any]], report: dict[str, Any], events: list[tuple[float, str]]) -> str:
    """A failing consumer's timeline: when its first missing message and the next one it
    got were acknowledged, the test's events, and its client's log lines."""
    when = {b[0]: b[2] for b in acked}
    first = min(b[0] for b in missing)
    got, seen = report["got"][i], report["seen"][i]
    after = next(((b[0], t) for b, t in zip(got, seen) if b[0] > first), None)
    lines = [f"first missing: message {first}, acknowledged at {when.get(first, 0):.3f}"]
    if after is not None:
        lines.append(f"next received: message {after[0]} (acknowledged at {when.get(after[0], 0):.3f}), received at {after[1]:.3f}")
    path = Path(str(out) + ".log")
    log = path.read_text(errors="replace").splitlines() if path.exists() else []
    ids: set[str] = set()  # its client's and its consumer's ids, from "T consumer I: client X, consumer Y"
    for line in log:
        words = line.replace(",", "").split()
        if words[1:3] == ["consumer", f"{i}:"] and words[3:4] == ["client"]:
            ids.update((words[4], words[6]))
    stamped = [f"{t:.3f} test: {what}" for t, what in events]
    stamped += [line for line in log if f"consumer {i}:" in line or any(x in line for x in ids)]
    return "\n".join(lines + sorted(stamped))


def _ranges(bodies: set[tuple[int, ...]]) -> str:
    """The first message numbers of a set as ranges: "883-1002, 1500-1510, ..."."""
    numbers = sorted(b[0] for b in bodies)
    ranges: list[list[int]] = []
    for n in numbers:
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return ", ".join(f"{a}-{b}" for a, b in ranges[:8]) + (", ..." if len(ranges) > 8 else "")


def _worker_pids(proc: subprocess.Popen[Any]) -> list[int]:
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    return [int(c) for c in children]


def _scenario(tmp_path: Path, python_env: dict[str, str], *, consumers: int, messages: int, rate: float, cut: float, kills: int, kill_worker: bool) -> None:
    with Hosts(["redis", "a", "b", "pub"]) as hosts:
        site = Site(hosts, tmp_path, python_env)
        site.start_redis()
        url_a = site.serve(hosts["a"])
        url_b = site.serve(hosts["b"], workers=2 if kill_worker else 1)

        # A login through host a holds on host b (sessions in Redis).
        (ack,) = _post(url_a, command(Op.CLIENT_PING))
        dsid = str(ack.headers["DSId"])
        (ack,) = _post(url_a, command(Op.LOGIN, dsid, body=base64.b64encode(b"ada:pw").decode()))
        assert type(ack) is m.AcknowledgeMessage, ack
        (reply,) = _post(url_b, m.RemotingMessage(destination="Desk", operation="who", body=[], headers={"DSId": dsid}))
        assert type(reply) is m.AcknowledgeMessage and reply.body == "ada", reply

        groups = [
            ("a-streaming", *site.consumers(hosts["a"], consumers, "streaming")),
            ("b-streaming", *site.consumers(hosts["b"], consumers, "streaming")),
            ("b-websocket", *site.consumers(hosts["b"], max(1, consumers // 2), "websocket")),
        ]
        pub, acked_file = site.publisher(messages, rate)
        events: list[tuple[float, str]] = []
        rng = random.Random(0x29)
        marks = sorted(rng.sample(range(messages // 10, messages * 8 // 10), kills + 2))
        # Host a cut off from everyone (Redis, the publisher, host b) for `cut` seconds.
        _published(pub, marks[0])
        hosts["a"].cut()
        events.append((time.time(), "host a cut off"))
        time.sleep(cut)  # the outage itself: its length is what is tested
        hosts["a"].mend()
        events.append((time.time(), "host a back"))
        if kill_worker:
            _published(pub, marks[1])
            victim = rng.choice(_worker_pids(site.servers["b"]))
            os.kill(victim, 9)
            events.append((time.time(), f"worker {victim} of host b killed"))
        for mark in marks[2:]:
            _published(pub, mark)
            site.kill_redis()
            events.append((time.time(), "redis killed"))
            time.sleep(rng.uniform(0.0, 0.3))
            site.start_redis()
            events.append((time.time(), "redis answers again"))
        assert pub.wait(300) == 0, "the publisher failed"
        acked = json.loads(acked_file.read_text())
        assert len(acked) == messages
        checked = 0
        for name, proc, out in groups:
            assert proc.wait(120) == 0, f"the consumers {name} failed"
            checked += _check(name, out, acked, events)
        assert checked == 2 * consumers + max(1, consumers // 2)
        for name in ("a", "b"):
            site.stop(name)
            log = (tmp_path / f"serve-{name}.log").read_text(errors="replace")
            assert "Traceback" not in log, f"host {name}'s server logged a traceback:\n{log[-3000:]}"
            left = os.listdir(tmp_path / f"shm-{name}")
            assert not left, f"host {name}'s server left shared memory behind: {left}"


def test_hosts_quick(tmp_path: Path, python_env: dict[str, str]) -> None:
    """The quick form, in `make test`: a few consumers per host, host a cut off for 2 s,
    Redis killed once, 400 messages at 100 a second."""
    _scenario(tmp_path, python_env, consumers=4, messages=400, rate=100, cut=2.0, kills=1, kill_worker=False)


def test_hosts_full(tmp_path: Path, python_env: dict[str, str]) -> None:
    """100 consumers per host on streaming (and 50 more on WebSocket on host b), 3,000
    messages at 200 a second, host a cut off for 5 s, a worker of host b killed, Redis
    killed five times."""
    _scenario(tmp_path, python_env, consumers=100, messages=3000, rate=200, cut=5.0, kills=5, kill_worker=True)
