"""AMF remoting: `await handle(body, settings, query=...)` answers one request packet
(AS2/AS3 NetConnection calls here, Flex messages in `flex`) with the response packet.
`settings` is what the gateway holds (a `Gateway` is one); docs/gateway.md has the
whole behaviour."""

from __future__ import annotations

import logging
from time import perf_counter
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qsl

from .. import _amfkit
from .._text import MAX_SHOWN, clip, error_text
from ..assets.store import Asset
from . import flex, packet
from .http import HTTPError
from .messages import AbstractMessage
from .packet import Body, Envelope, Header
from .request import Answer, Request, Settings, Timings, fault_of
from .services import Context, Fault, awaitable, with_asset_bytes

__all__ = ["AMF0_ANSWERS", "CONTENT_TYPE", "CONTENT_TYPES", "Settings", "answer_message", "handle"]

logger = logging.getLogger("amfkit.gateway")

#: How a version-0 (AMF0) request may be answered (`Gateway(amf0_answers=...)`, or a
#: request's `?amf0_answers=...`): "amf0", each body's value in AMF0 (what AS2 clients
#: read); "avmplus", each body's value behind the AVM+ switch (0x11) in AMF3, which AS3
#: clients read, Ruffle's AVM2 included where it loses AMF0 references (0x07).
AMF0_ANSWERS = ("amf0", "avmplus")
_SWITCH_PARAM = "amf0_answers="

#: The response's content type.
CONTENT_TYPE = "application/x-amf"
#: Request content types the gateway hands to `handle` (parameters such as charset aside).
CONTENT_TYPES = (CONTENT_TYPE,)

RawHeaders = list[tuple[str, bool, Any]]  # (name, must_understand, value): the wire order
RawBodies = list[tuple[str, str, Any]]  # (target, response, value)
Receive = Callable[[], Awaitable[Any]]  # an ASGI receive


async def handle(
    body: bytes, settings: Settings, *, query: str = "", receive: Receive | None = None, timings: Timings | None = None
) -> bytes:
    """Answer one AMF remoting packet (the request body) with the response packet.
    `query` is the request URL's query string (it may carry a session id); `receive` is
    the ASGI request's (a parked poll watches it for the client going away); `timings`,
    when given, notes how long decoding, each body and encoding took (Server-Timing).
    A packet that does not decode raises `amfkit.remoting.http.HTTPError` (400). Every
    body is answered on its own, in order."""
    if timings is not None:
        return await _handle_timed(body, settings, query, receive, timings)
    version, headers, bodies = _decode(body, settings)
    if not headers and not query:  # no credentials, no session: plain calls need no Request
        plain = _plain_calls(bodies, settings)
        if plain is not None:
            return await _answer_plain(version, bodies, plain, settings)
    request = Request(settings, version, [Header(n, v, must_understand=mu) for n, mu, v in headers], query)
    request.batched = len(bodies) > 1
    request.receive = receive
    await _prepare(request)
    answers = []
    for target, response, value in bodies:
        message = flex.message_of(value)
        if message is not None:
            answers.append(await flex.answer(request, Body(target, response, value), message))
        else:
            answers.append(await _answer_call(request, target, response, value))
    await _finish(request)
    return await _encode(version, request.out_headers, answers, settings, _switched(version, settings, query))


async def _handle_timed(body: bytes, settings: Settings, query: str, receive: Receive | None, timings: Timings) -> bytes:
    """`handle` with its phases timed: the same answers (kept in step with it), but
    plain calls go the general way too, so a call's time includes making its context (a
    microsecond or two). Checking the headers, the credentials and the sessions is in
    the total only."""
    timings.restart()
    version, headers, bodies = _decode(body, settings)
    timings.decoded()
    request = Request(settings, version, [Header(n, v, must_understand=mu) for n, mu, v in headers], query)
    request.batched = len(bodies) > 1
    request.receive = receive
    await _prepare(request)
    answers = []
    for target, response, value in bodies:
        started = perf_counter()
        message = flex.message_of(value)
        if message is not None:
            answer = await flex.answer(request, Body(target, response, value), message)
        else:
            answer = await _answer_call(request, target, response, value)
        answers.append(answer)
        timings.call(answer.target, started)
    await _finish(request)
    timings.restart()
    out = await _encode(version, request.out_headers, answers, settings, _switched(version, settings, query))
    timings.encoded()
    return out


def _switched(version: int, settings: Settings, query: str) -> bool:
    """Whether the answer to a request of this version (and URL query) writes each body
    behind the AVM+ switch although the request is AMF0 (`AMF0_ANSWERS`)."""
    if version == 3:
        return False
    mode = settings.amf0_answers
    if query and _SWITCH_PARAM in query:
        for k, v in parse_qsl(query, keep_blank_values=True):
            if k == "amf0_answers" and v in AMF0_ANSWERS:
                mode = v
    return mode == "avmplus"


def _versioned(out: bytes, version: int, switched: bool) -> bytes:
    """A response packet encoded as version 3 (every body behind the switch) given the
    request's own version back (a version-0 client reads a version-0 answer)."""
    if not switched:
        return out
    return version.to_bytes(2, "big") + out[2:]


async def answer_message(message: AbstractMessage, settings: Settings, *, push: bool = False) -> bytes:
    """Answer one Flex message outside an AMF packet (a WebSocket channel's frame): the
    reply, an AcknowledgeMessage or an ErrorMessage, encoded as one AMF3 value. It is
    answered as the same message in a packet's body is (`push`: the client's channel
    pushes, so a poll is answered at once, never parked)."""
    request = Request(settings, 3, [], "")
    request.push = push
    await _prepare(request)
    answer = await flex.answer(request, Body("null", "", message), message)
    await _finish(request)
    default = settings.default
    try:
        return _amfkit.amf3_encode(answer.body.value, default=default)
    except Exception:  # the reply cannot be written: a fault instead, as in a packet
        pass
    if await _read_assets([answer], settings.debug):
        try:
            return _amfkit.amf3_encode(answer.body.value, default=default)
        except Exception:
            pass
    _make_encodable(answer, settings, lambda body: _amfkit.amf3_encode(body.value, default=default))
    return _amfkit.amf3_encode(answer.body.value, default=default)


async def _prepare(request: Request) -> None:
    try:
        await request.prepare()
    except Exception as e:  # the session store or the authenticator's principal
        request.fault = Fault.of(e, debug=request.settings.debug)  # every body is this fault


async def _finish(request: Request) -> None:
    try:
        await request.finish()
    except Exception as e:  # the session store failed: the answers still go out
        logger.error("cannot save the sessions of a request: %s", error_text(e), exc_info=e)


def _decode(data: bytes, settings: Settings) -> tuple[int, RawHeaders, RawBodies]:
    """A request packet as `(version, headers, bodies)` tuples; HTTPError 400 if it is
    empty, does not decode or holds more than `max_calls` bodies."""
    if not data:
        raise HTTPError(400, "empty request body (an AMF remoting packet was expected)")
    try:
        version, headers, bodies = _amfkit.decode_packet(
            data, max_depth=settings.max_depth, max_objects=settings.max_objects, max_size=settings.max_body_size
        )
    except _amfkit.DecodeError as e:
        raise HTTPError(400, clip(f"malformed AMF packet: {e}")) from None
    except Exception as e:
        # An externalizable reader (a Flex small form, a registered class's
        # __readamf__) refused its bytes: still the request's fault.
        logger.debug("malformed AMF packet", exc_info=True)
        raise HTTPError(400, clip(f"malformed AMF packet: {error_text(e)}")) from None
    if len(bodies) > settings.max_calls:
        raise HTTPError(400, f"a packet of {len(bodies)} bodies, more than the {settings.max_calls} allowed")
    return version, headers, bodies


def _plain_calls(bodies: RawBodies, settings: Settings) -> list[Any] | None:
    """The methods of a packet whose every body is a plain NetConnection call: to an
    existing method taking positional arguments only, needing no roles and no
    context. None when any body is anything else (nothing has been called yet): the
    general path answers those, sessions and headers included."""
    methods = []
    lookup = settings.services.lookup
    for target, _, value in bodies:
        if isinstance(value, AbstractMessage) or (
            type(value) is list and len(value) == 1 and isinstance(value[0], AbstractMessage)
        ):
            return None
        try:
            method = lookup(target)
        except Exception:  # a Fault, or anything else: the general path answers it
            return None
        if method.fast is None or method.roles:
            return None
        methods.append(method)
    return methods


async def _answer_plain(version: int, bodies: RawBodies, methods: list[Any], settings: Settings) -> bytes:
    answers: list[tuple[str, str, Any]] = []
    call = settings.services.call
    for (target, response, value), method in zip(bodies, methods):
        args = value if type(value) is list else [value]
        try:
            if method.accepts(args):
                result = method.fn(*args)
                if method.is_async or awaitable(result):
                    result = await result
                if isinstance(result, Asset):
                    result = await result.aread()
            else:
                result = await call(target, args)  # raises the precise Fault
        except Exception as e:
            body = status_body(response, e, settings.debug)
            answers.append((body.target, body.response, body.value))
        else:
            answers.append((response + "/onResult", "null", result))
    switched = version != 3 and settings.amf0_answers == "avmplus"
    try:
        return _versioned(_amfkit.encode_packet(3 if switched else version, [], answers, default=settings.default), version, switched)
    except Exception:  # the general encoder below finds the body that cannot be written
        pass
    return await _encode(version, [], [Answer(Body(*a), b[1], clip(b[0], MAX_SHOWN)) for a, b in zip(answers, bodies)], settings, switched)


async def _answer_call(request: Request, target: str, response: str, value: Any) -> Answer:
    """The answer to a NetConnection body: `target` called with `value` as the
    arguments (an array, or any other value as the one argument)."""
    shown_target = clip(target, MAX_SHOWN)  # names the call in the log
    debug = request.settings.debug
    if request.fault is not None:
        return Answer(status_body(response, request.fault, debug), response, shown_target)
    try:
        context = Context(request.protocol, request.principal, request.session(), request.header_values, request.session_id, request.settings.messaging)
        args = value if isinstance(value, list) else [value]
        result = await request.settings.services.call(target, args, context)
    except Exception as e:
        return Answer(status_body(response, e, debug), response, shown_target)
    return Answer(Body(response + "/onResult", "null", result), response, shown_target)


def status_body(response: str, error: BaseException, debug: bool) -> Body:
    """The NetConnection fault for `error`: a status object sent to `<response>/onStatus`."""
    fault, trace = fault_of(error, debug)
    details = fault.details
    status = {
        "level": "error",
        "code": fault.code,
        "description": fault.message,
        "details": details if details is not None else (trace or ""),
        "type": type(error).__name__ if debug else "",
        "line": 0,
    }
    return Body(response + "/onStatus", "null", status)


def _fault_body(a: Answer, fault: Fault, debug: bool) -> Body:
    if a.message is not None:
        return flex.error_body(a.response, a.message, a.client_id, fault, debug)
    return status_body(a.response, fault, debug)


async def _encode(version: int, headers: list[Header], answers: list[Answer], settings: Settings, switched: bool = False) -> bytes:
    """The response packet of `answers`; `switched`: every body behind the AVM+ switch
    although the request is AMF0 (the packet keeps the request's version)."""
    default = settings.default
    wire = 3 if switched else version
    try:
        return _versioned(packet.encode(Envelope(wire, headers, [a.body for a in answers]), default=default), version, switched)
    except Exception:  # an EncodeError, or an error raised by `default` or __writeamf__
        pass
    if await _read_assets(answers, settings.debug):  # Assets in a list or dict result
        try:
            return _versioned(packet.encode(Envelope(wire, headers, [a.body for a in answers]), default=default), version, switched)
        except Exception:
            pass
    # Some result cannot be written: find it and answer a fault for that body only.
    for a in answers:
        _make_encodable(a, settings, lambda body: packet.encode(Envelope(wire, [], [body]), default=default))
    return _versioned(packet.encode(Envelope(wire, headers, [a.body for a in answers]), default=default), version, switched)


async def _read_assets(answers: list[Answer], debug: bool) -> bool:
    """Replace the Assets in the items of list and tuple results and the values of dict
    results (a Flex acknowledgement's body too) by their bytes; whether there were any.
    An asset that cannot be read makes its body a fault."""
    found = False
    for a in answers:
        value = a.body.value
        message = value if isinstance(value, AbstractMessage) else None
        try:
            loaded = await with_asset_bytes(message.body if message is not None else value)
        except Exception as e:
            a.body = _fault_body(a, Fault.of(e, debug=debug), debug)
            found = True
            continue
        if loaded is None:
            continue
        found = True
        if message is not None:
            message.body = loaded
        else:
            a.body = Body(a.body.target, a.body.response, loaded)
    return found


def _make_encodable(a: Answer, settings: Settings, encode: Callable[[Body], object]) -> None:
    """Replace the body of `a` by a fault when `encode` cannot write it (an EncodeError,
    or an error raised by `default` or __writeamf__)."""
    try:
        encode(a.body)
        return
    except Exception as e:
        text = error_text(e)
        logger.error("cannot encode the result of %s: %s", a.target, text, exc_info=not isinstance(e, _amfkit.EncodeError))
        fault = Fault(f"the result cannot be encoded: {text}", code="Server.Processing")
    a.body = _fault_body(a, fault, settings.debug)
    try:
        encode(a.body)
    except Exception:  # the fault's own details cannot be written: drop them
        a.body = _fault_body(a, Fault(fault.message, code=fault.code), settings.debug)
