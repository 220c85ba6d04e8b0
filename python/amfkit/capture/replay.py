"""Replay: a gateway that answers the calls a capture recorded (`Gateway.from_capture`,
`amfkit serve --replay`).

Each call is answered with its recorded result (or fault), found by its target and its
arguments compared by structure (`match.key`). What changes from one run of a client to
the next is not compared: messageIds, clientIds, DSIds, timestamps and the response
URI's counter live outside the arguments, and the gateway writes them afresh into every
answer (correlationId = the new messageId, the new response URI, the client's DSId).
A call recorded several times is answered in the recorded order, then with its last
answer again. Flex ping, login and logout are the gateway's own (any credentials are
accepted). A call nobody recorded gets a fault naming its target and the nearest recorded
calls, and is logged (logger "amfkit.replay"): what to write by hand.

`match`: "arguments" (the default), "target" (the target's recorded answers in order,
whatever the arguments) or "order" (the capture's calls in order, whatever comes).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any

from .._text import MAX_SHOWN, clip
from ..remoting.services import Context, Fault, Principal, Services
from . import match as _match
from .calls import Call, calls_of
from .exchange import CaptureError

__all__ = ["ENV", "MATCHES", "Replay", "ReplayServices", "replay_gateway", "settings"]

logger = logging.getLogger("amfkit.replay")

MATCHES = ("arguments", "target", "order")
#: The environment variable by which `amfkit serve --replay` tells its workers the
#: captures and the match option (`amfkit.cli.replay`, `amfkit.capture.replay_app`).
ENV = "AMFKIT_REPLAY"
#: The fault code of a call the capture does not hold.
NOT_RECORDED = "Replay.NotRecorded"
#: How many recorded calls an unrecorded call's fault names.
NEAREST = 3


class _Recorded:
    """The recorded answers of one (target, arguments) pair, given in order, then the last again."""

    __slots__ = ("calls", "next")

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.next = 0

    def take(self) -> Call:
        call = self.calls[min(self.next, len(self.calls) - 1)]
        self.next += 1
        return call


class Replay:
    """The answers of the recorded `calls` (answered ones only; Flex commands are left
    to the gateway)."""

    def __init__(self, calls: Iterable[Call], *, match: str = "arguments") -> None:
        if match not in MATCHES:
            raise ValueError(f"match must be one of {', '.join(MATCHES)}, not {match!r}")
        self.match = match
        self.calls = [c for c in calls if c.answered and c.kind != "command"]
        self._by_key: dict[Any, _Recorded] = {}
        self._by_target: dict[str, list[tuple[Any, Call]]] = {}
        self._order = _Recorded()
        for c in self.calls:
            args_key = _match.key(c.arguments)
            k = (c.target, args_key) if match == "arguments" else c.target
            self._by_key.setdefault(k, _Recorded()).calls.append(c)
            self._by_target.setdefault(c.target, []).append((args_key, c))
            self._order.calls.append(c)
        #: The unrecorded calls seen, in order (target, arguments).
        self.missed: list[tuple[str, list[Any]]] = []

    def targets(self) -> list[str]:
        """The recorded targets, in first-seen order."""
        return list(self._by_target)

    def answer(self, target: str, args: list[Any]) -> Any:
        """The recorded result of `target` called with `args`; raises the recorded fault,
        or a `Fault` (code Replay.NotRecorded) naming the nearest recorded calls."""
        if self.match == "order":
            if not self._order.calls:
                raise self._missing(target, args)
            call = self._order.take()
        else:
            k: Any = (target, _match.key(args)) if self.match == "arguments" else target
            recorded = self._by_key.get(k)
            if recorded is None:
                raise self._missing(target, args)
            call = recorded.take()
        if call.fault is not None:
            code, message, details = call.fault
            raise Fault(message, code=code or "Server.Processing", details=details)
        return call.result

    def nearest(self, target: str, args: list[Any], n: int = NEAREST) -> list[Call]:
        """The recorded calls most like `target(args)`: the same target first, then by
        how many places their arguments differ."""
        wanted = _match.key(args)
        scored = []
        for t, entries in self._by_target.items():
            service, method = _split(t)
            same = 0 if t == target else 1 if service == _split(target)[0] else 2
            seen: set[Any] = set()
            for k, c in entries:
                if k in seen:
                    continue
                seen.add(k)
                scored.append((same, _match.distance(wanted, k) if same == 0 else 0, c.index, c))
        scored.sort(key=lambda s: s[:3])
        return [s[3] for s in scored[:n]]

    def _missing(self, target: str, args: list[Any]) -> Fault:
        self.missed.append((target, args))
        near = self.nearest(target, args)
        wanted = _match.key(args)
        # Where each nearest call of the same target differs first (the arguments as
        # called, then as recorded; paths into the argument list: $[0] is the first).
        first = [_first_difference(wanted, c) if c.target == target else None for c in near]
        shown = [describe(c) + (f" [called vs recorded: {d}]" if d else "") for c, d in zip(near, first)]
        shown_near = "; ".join(shown) or "nothing was recorded"
        message = f"{clip(target, MAX_SHOWN)} with these arguments was not recorded; nearest recorded: {shown_near}"
        logger.warning("not recorded: %s(%s); nearest recorded: %s", clip(target, MAX_SHOWN), _args_text(args), shown_near)
        details = {"target": target, "nearest": [describe(c) for c in near], "differences": first}
        return Fault(clip(message), code=NOT_RECORDED, details=details)


def settings() -> dict[str, Any]:
    """The files and match option `amfkit serve --replay` passed on to its workers."""
    import json

    raw = os.environ.get(ENV)
    if not raw:
        raise RuntimeError(f"{ENV} is not set (amfkit serve --replay sets it)")
    loaded: dict[str, Any] = json.loads(raw)
    return loaded


def _first_difference(wanted: Any, call: Call) -> str | None:
    found = _match.differences(wanted, _match.key(call.arguments), limit=1)
    return clip(str(found[0]), 160) if found else None


def describe(call: Call) -> str:
    """`Target(arg, ...)` of a recorded call, short."""
    return f"{clip(call.target, MAX_SHOWN)}({_args_text(call.arguments)})"


def _args_text(args: list[Any]) -> str:
    from ..tree import summary

    try:
        return clip(", ".join(summary(a, width=40) for a in args), 160)
    except Exception:
        return f"{len(args)} arguments"


def _split(target: str) -> tuple[str, str]:
    service, _, method = target.rpartition(".")
    return service, method


class ReplayServices(Services):
    """Services answering from a `Replay`: every target goes to it (the recorded ones
    are listed by discovery, as services of methods taking any arguments)."""

    def __init__(self, replay: Replay) -> None:
        super().__init__({})
        self.replay = replay
        services: dict[str, dict[str, Any]] = {}
        for target in replay.targets():
            service, method = _split(target)
            if service and method.isidentifier() and not method.startswith("_"):
                services.setdefault(service, {})[method] = _stand_in(target)
        for name, methods in services.items():
            if not name.startswith("_"):
                self.register(name, type(_class_name(name), (), methods)())

    def lookup(self, target: str) -> Any:
        # Never the plain fast path: every call goes through `call` below.
        raise Fault(f"{clip(target, MAX_SHOWN)} is answered by the replay", code="Server.ResourceUnavailable")

    async def call(
        self, target: str, args: Iterable[Any] = (), context: Context | None = None, kwargs: Mapping[str, Any] | None = None
    ) -> Any:
        return self.replay.answer(target, list(args))


def _stand_in(target: str) -> Any:
    def method(self: Any, *args: Any) -> Any:
        raise Fault(f"{target} is answered by the replay")

    method.__doc__ = f"Answers {target} as recorded."
    return method


def _class_name(service: str) -> str:
    return service.rpartition(".")[2] or "Service"


def _accept_any(user: str, password: str) -> Principal:
    """The replay's authenticator: a recorded login succeeded, so every login does."""
    return Principal(user)


def replay_gateway(paths: Iterable[str | os.PathLike[str]], *, match: str = "arguments", gateway_cls: Any = None, **options: Any) -> Any:
    """A `Gateway` answering the calls recorded in the capture files `paths` (read in
    order, their calls together); `options` go to the Gateway."""
    from .. import capture
    from ..remoting.gateway import Gateway

    calls: list[Call] = []
    for path in paths:
        found = calls_of(capture.read(path))
        for problem in found.problems:
            logger.warning("%s", problem)
        for c in found.calls:
            c.index = len(calls)
            calls.append(c)
    if not calls:
        raise CaptureError("no AMF call in " + ", ".join(os.fspath(p) for p in paths))
    options.setdefault("authenticator", _accept_any)
    cls = gateway_cls or Gateway
    gateway = cls(ReplayServices(Replay(calls, match=match)), **options)
    return gateway
