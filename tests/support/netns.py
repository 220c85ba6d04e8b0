"""Several hosts on one machine, for the tests that need real ones (tests/hosts/): each
host is a network namespace with its own loopback and one interface (`eth0`) on a
private subnet, joined to the others by a veth pair on a bridge in the root namespace.

    with Hosts(["redis", "a", "b", "pub"]) as hosts:
        hosts["redis"].ip                           # 10.213.N.1
        proc = hosts["a"].popen([...])              # a process on host a
        hosts["a"].cut(); ...; hosts["a"].mend()    # its link down, then up again

Needs root and iproute2 (`ip`); `make system-deps` installs iproute2. Everything made
here (namespaces, veth pairs, the bridge) is removed on exit, and the processes started
on the hosts are killed first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

import pytest

__all__ = ["Host", "Hosts", "need_hosts"]


def need_hosts() -> str:
    """The `ip` executable; a test failure (never a skip) saying what is missing."""
    ip = shutil.which("ip") or ("/usr/sbin/ip" if os.path.exists("/usr/sbin/ip") else None)
    if ip is None:
        pytest.fail("iproute2's `ip` not found: `make system-deps` installs it (apt-get install iproute2)", pytrace=False)
    if os.geteuid() != 0:
        pytest.fail("the multi-host tests make network namespaces and need root (run `sudo make test-hosts`)", pytrace=False)
    return ip


def _run(ip: str, *args: str) -> None:
    r = subprocess.run([ip, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")


class Host:
    """One namespace: `name`, its address `ip`, and the processes started on it."""

    def __init__(self, hosts: Hosts, name: str, index: int) -> None:
        self.hosts = hosts
        self.name = name
        self.netns = f"amfk{hosts.tag}{name}"[:30]
        self.ip = f"10.213.{hosts.subnet}.{index}"
        self.veth = f"v{hosts.tag}{index}"  # the root namespace's end, on the bridge
        self.procs: list[subprocess.Popen[Any]] = []

    def popen(self, argv: list[str], *, shm: str | None = None, **options: Any) -> subprocess.Popen[Any]:
        """A process on this host (`ip netns exec`), killed when the hosts go. `shm`: a
        directory that is the process's /dev/shm (bound over it in the mount namespace
        `ip netns exec` makes), so that what it leaves there is told apart from what
        other programs on the machine make."""
        if shm is not None:
            argv = ["sh", "-c", 'mount --bind "$0" /dev/shm && exec "$@"', shm, *argv]
        proc = subprocess.Popen([self.hosts.ip, "netns", "exec", self.netns, *argv], **options)
        self.procs.append(proc)
        return proc

    def cut(self) -> None:
        """Take the host's link down: it reaches no other host (its loopback stays)."""
        _run(self.hosts.ip, "link", "set", self.veth, "down")

    def mend(self) -> None:
        _run(self.hosts.ip, "link", "set", self.veth, "up")

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.ip})"


class Hosts:
    """The hosts, by name (see the module's docstring)."""

    def __init__(self, names: list[str]) -> None:
        self.ip = need_hosts()
        self.tag = os.urandom(2).hex()
        self.subnet = 1 + int(self.tag, 16) % 250
        self.bridge = f"amfkbr{self.tag}"
        self.hosts = {name: Host(self, name, i + 1) for i, name in enumerate(names)}

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def __enter__(self) -> Hosts:
        try:
            _run(self.ip, "link", "add", self.bridge, "type", "bridge")
            # The bridge's own address: the tests' process (in the root namespace) reaches
            # every host too.
            _run(self.ip, "addr", "add", f"10.213.{self.subnet}.254/24", "dev", self.bridge)
            _run(self.ip, "link", "set", self.bridge, "up")
            for host in self.hosts.values():
                inner = f"e{self.tag}{host.ip.rsplit('.', 1)[1]}"
                _run(self.ip, "netns", "add", host.netns)
                _run(self.ip, "link", "add", host.veth, "type", "veth", "peer", "name", inner)
                _run(self.ip, "link", "set", inner, "netns", host.netns)
                _run(self.ip, "link", "set", host.veth, "master", self.bridge)
                _run(self.ip, "link", "set", host.veth, "up")
                _run(self.ip, "-n", host.netns, "link", "set", inner, "name", "eth0")
                _run(self.ip, "-n", host.netns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
                _run(self.ip, "-n", host.netns, "link", "set", "eth0", "up")
                _run(self.ip, "-n", host.netns, "link", "set", "lo", "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        for host in self.hosts.values():
            for proc in host.procs:
                if proc.poll() is None:
                    proc.kill()
            for proc in host.procs:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:  # pragma: no cover
                    pass
                for stream in (proc.stdout, proc.stderr, proc.stdin):
                    if stream is not None:
                        stream.close()
        for host in self.hosts.values():
            subprocess.run([self.ip, "netns", "del", host.netns], capture_output=True)  # its veth end goes, and the pair
            subprocess.run([self.ip, "link", "del", host.veth], capture_output=True)
        subprocess.run([self.ip, "link", "del", self.bridge], capture_output=True)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(os.path.exists(f"/run/netns/{h.netns}") for h in self.hosts.values()):
            time.sleep(0.05)
