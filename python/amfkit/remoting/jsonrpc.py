"""JSON-RPC 2.0 on the same services as the AMF gateway.

The gateway hands a POST whose content type is one of `CONTENT_TYPES` to `handle`, which
returns the response body (`application/json`). An empty body (`b""`) means there is
nothing to answer: the request was a notification, or a batch of notifications only, and
the gateway answers `204 No Content`.

    >>> import asyncio
    >>> from amfkit.remoting import Context, Services
    >>> from amfkit.remoting import jsonrpc
    >>> class Calc:
    ...     def add(self, a, b):
    ...         return a + b
    >>> services = Services({"Calc": Calc()})
    >>> body = b'{"jsonrpc": "2.0", "method": "Calc.add", "params": [1, 2], "id": 1}'
    >>> asyncio.run(jsonrpc.handle(body, services, Context()))
    b'{"jsonrpc":"2.0","result":3,"id":1}'

Requests (https://www.jsonrpc.org/specification):

- a single request object, or a batch (a non-empty array of them); the answers of a batch
  come in request order, one per request that has an `id`, and the calls run one after
  the other, in order;
- `method` is the target, `"Service.method"` (or a function service's name); names
  starting with `rpc.` are reserved and never reach a service;
- `params` by position (an array) or by name (an object, passed as keyword arguments);
- a request without an `id` member is a notification: it is called, and never answered,
  even when it fails. An `id` of `null` is an ordinary request.

Errors (the `error` member: `code`, `message`, `data`):

    -32700  parse error       the body is not UTF-8, not JSON, or nested too deeply
    -32600  invalid request   not a request object, `jsonrpc` is not "2.0", `method` is
                              not a string, `params` is neither an array nor an object,
                              `id` is not a string, a number or null, an empty batch
    -32601  method not found  a fault with code `Server.ResourceUnavailable` (no such
                              service or method, a private name), or an `rpc.` name
    -32602  invalid params    a fault with code `Client.Argument` (argument count, names
                              or types do not fit the method's signature)
    -32603  internal error    the result cannot be written as JSON (or an unexpected
                              error answering the request, logged; `id` null)
    -32000  server error      any other fault (`Client.Authentication`,
                              `Client.Authorization`, `Server.Processing`, a service's
                              own codes) and any other exception raised by a service

A fault raised by a service with an `int` code outside the reserved range
-32768..-32000 keeps that number as the error code. The message is the fault's message
(an exception's text for other exceptions). `data` is `{"code": <the amfkit fault code>,
"details": <the fault's details>}` for faults, `{"details": <what was wrong>}` for
protocol errors, and carries `"traceback"` only when the gateway runs in debug mode.
The `id` of an invalid request is echoed when it is itself valid, else `null`.

Values: requests decode with the stdlib `json` (strict UTF-8, a byte order mark is
ignored; `NaN` and `Infinity` are refused): objects -> `dict`, arrays -> `list`, numbers
-> `int` or `float`, `true`/`false` -> `bool`, `null` -> `None`; strings stay strings
(no date guessing). Results encode with the stdlib `json` module:

    None, amfkit.Undefined                -> null
    bool, int, float, str                 -> themselves (NaN and +-infinity -> null,
                                             as JavaScript's JSON.stringify does)
    amfkit.XML, amfkit.XMLDocument        -> string (their text)
    list, tuple, set, frozenset,
    array.array, ArrayCollection,
    ObjectVector                          -> array
    dict, TypedObject, ObjectProxy,
    MixedArray, Dictionary                -> object (int keys become strings; keys that
                                             are not str/int/float/bool/None: error
                                             -32603); a TypedObject's alias is dropped
    a registered class's instance         -> object of exactly the members AMF would
                                             write (`static`, `exclude`, `dynamic` of
                                             `amfkit.register_class` apply)
    amfkit.Table,
    amfkit.data.RecordSet                 -> array of objects, one per row
    datetime                              -> ISO 8601 string in UTC ending in "Z"
                                             (naive datetimes are UTC, as in AMF);
                                             "2024-05-01T12:30:00Z", with ".ffffff"
                                             when there are microseconds
    date, time                            -> ISO 8601 string ("2024-05-01", "12:30:00")
    amfkit.Date                           -> ISO 8601 string with milliseconds and, for
                                             years outside 0..9999, a signed six-digit
                                             year ("+010000-01-01T00:00:00.000Z"), as
                                             JavaScript's Date.toISOString writes;
                                             NaN, infinite or beyond JavaScript's range
                                             -> null
    bytes, bytearray, memoryview          -> string, standard base64 with padding

Anything else (an unregistered class, a cycle) cannot be written: the call answers
-32603.
"""

from __future__ import annotations

import array
import base64
import datetime
import json
import logging
import math
import traceback
from typing import Any

from .. import _types, amf3
from .._registry import _slot_names, registered_classes
from .._text import MAX_SHOWN, clip, error_text, shown
from .services import DEFAULT_MAX_CALLS, Context, Fault, Services

__all__ = [
    "CONTENT_TYPES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SERVER_ERROR",
    "handle",
]

#: Request content types the gateway hands to `handle` (parameters such as charset aside).
CONTENT_TYPES = ("application/json", "application/json-rpc", "application/jsonrequest")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000

# amfkit fault codes with a JSON-RPC error code of their own; other faults are -32000.
_FAULT_CODES = {
    "Server.ResourceUnavailable": METHOD_NOT_FOUND,
    "Client.Argument": INVALID_PARAMS,
}

_log = logging.getLogger("amfkit.gateway")  # the gateway's logger, whatever the protocol
_MISSING: Any = object()


def budget_error(body: bytes, max_objects: int) -> bytes | None:
    """The parse error (-32700) for a body that may hold more than `max_objects` values,
    counted before parsing, in C (`bytes.count`): each value is an opening bracket or
    follows a comma (those inside strings count too, so this is an upper bound); parsing
    costs about 70 bytes of memory per value. None within the budget."""
    count = body.count(b",") + body.count(b"[") + body.count(b"{") + 1
    if count <= max_objects:
        return None
    text = f"the request holds up to {count} values, more than the {max_objects} allowed"
    return _protocol_error(PARSE_ERROR, "Parse error", text)


async def handle(
    body: bytes, services: Services, context: Context, *, debug: bool = False, max_calls: int = DEFAULT_MAX_CALLS
) -> bytes:
    """Answer one JSON-RPC 2.0 request body (a request or a batch of at most `max_calls`);
    `b""` when no answer is due (notifications only)."""
    context.protocol = "jsonrpc"
    try:
        text = bytes(body).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return _protocol_error(PARSE_ERROR, "Parse error", f"the body is not UTF-8: {e.reason} at byte {e.start}")
    try:
        payload = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        return _protocol_error(PARSE_ERROR, "Parse error", "the JSON is nested too deeply")
    except ValueError as e:
        return _protocol_error(PARSE_ERROR, "Parse error", str(e))
    if isinstance(payload, list):
        if not payload:
            return _protocol_error(INVALID_REQUEST, "Invalid Request", "an empty batch")
        if len(payload) > max_calls:
            return _protocol_error(INVALID_REQUEST, "Invalid Request", f"a batch of more than {max_calls} requests")
        parts = []
        for item in payload:
            part = await _guarded(item, services, context, debug)
            if part is not None:
                parts.append(part)
        return b"[" + b",".join(parts) + b"]" if parts else b""
    part = await _guarded(payload, services, context, debug)
    return part if part is not None else b""


async def _guarded(request: Any, services: Services, context: Context, debug: bool) -> bytes | None:
    """`_answer`, with any exception it lets out (a bug) answered as an internal error
    for this request alone: the other requests of a batch are still answered."""
    try:
        return await _answer(request, services, context, debug)
    except Exception as e:
        _log.error("a JSON-RPC request failed: %s", error_text(e), exc_info=e)
        return _error(None, INTERNAL_ERROR, "Internal error", {"details": "the request could not be answered"})


async def _answer(request: Any, services: Services, context: Context, debug: bool) -> bytes | None:
    """The response to one request object, or None for a notification."""
    if not isinstance(request, dict):
        return _protocol_error(INVALID_REQUEST, "Invalid Request", f"a request must be an object, not {_json_type(request)}")
    rid = request.get("id", _MISSING)
    if not (rid is _MISSING or rid is None or type(rid) in (str, int, float)):
        return _protocol_error(INVALID_REQUEST, "Invalid Request", f'"id" must be a string, a number or null, not {_json_type(rid)}')
    reply_id = None if rid is _MISSING else rid
    if request.get("jsonrpc") != "2.0":
        return _protocol_error(INVALID_REQUEST, "Invalid Request", '"jsonrpc" must be "2.0"', reply_id)
    method = request.get("method")
    if not isinstance(method, str):
        return _protocol_error(INVALID_REQUEST, "Invalid Request", f'"method" must be a string, not {_json_type(method)}', reply_id)
    params = request.get("params", _MISSING)
    args: Any = ()
    kwargs: dict[str, Any] | None = None
    if isinstance(params, list):
        args = params
    elif isinstance(params, dict):
        kwargs = params
    elif params is not _MISSING:
        return _protocol_error(INVALID_REQUEST, "Invalid Request", f'"params" must be an array or an object, not {_json_type(params)}', reply_id)

    try:
        if method.startswith("rpc."):
            raise Fault(f"method names starting with 'rpc.' are reserved: {shown(method)}", code="Server.ResourceUnavailable")
        result = await services.call(method, args, context, kwargs)
    except Exception as e:
        if rid is _MISSING:
            if not isinstance(e, Fault):
                _log.error("notification %s failed", clip(method, MAX_SHOWN), exc_info=e)
            return None
        return _fault_error(e, reply_id, debug)
    if rid is _MISSING:
        return None
    try:
        return _dumps({"jsonrpc": "2.0", "result": result, "id": reply_id})
    except Exception as e:  # TypeError, ValueError, RecursionError, a failing AMF round trip
        data: dict[str, Any] = {"details": clip(f"the result of {clip(method, MAX_SHOWN)} cannot be written as JSON: {error_text(e)}")}
        if debug:
            data["traceback"] = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return _error(reply_id, INTERNAL_ERROR, "Internal error", data)


# --- errors --------------------------------------------------------------------------


def _protocol_error(code: int, message: str, details: str, rid: Any = None) -> bytes:
    details = clip(details)
    return _error(rid, code, f"{message}: {details}", {"details": details})


def _fault_error(exc: Exception, rid: Any, debug: bool) -> bytes:
    fault = Fault.of(exc, debug=debug)
    code = _FAULT_CODES.get(fault.code) if isinstance(fault.code, str) else None
    if code is None:
        own = fault.code
        code = own if type(own) is int and not -32768 <= own <= -32000 else SERVER_ERROR
    data: dict[str, Any] = {"code": fault.code, "details": fault.details}
    if debug:
        data["traceback"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return _error(rid, code, str(fault.message), data)


def _error(rid: Any, code: int, message: str, data: Any) -> bytes:
    response = {"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": data}, "id": rid}
    try:
        return _dumps(response)
    except (TypeError, ValueError, RecursionError, OverflowError):
        # Details that JSON cannot carry are sent as their repr.
        if isinstance(data, dict) and "details" in data:
            data = dict(data, details=_safe_repr(data["details"]))
            response["error"]["data"] = data
        return _dumps(response)


def _safe_repr(value: Any) -> str:
    try:
        return clip(repr(value))
    except Exception:
        return shown(value)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --- values --------------------------------------------------------------------------

_STRICT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=lambda o: _default(o))
_ASCII = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"), default=lambda o: _default(o))


def _dumps(obj: Any) -> bytes:
    """`obj` as compact UTF-8 JSON; non-finite floats become null."""
    try:
        text = _STRICT.encode(obj)
    except ValueError as e:
        if "Out of range float" not in str(e):
            raise
        obj = _finite(obj)
        text = _STRICT.encode(obj)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (JSON allows "\ud800"): escape everything, which always fits.
        return _ASCII.encode(obj).encode("ascii")


def _finite(value: Any) -> Any:
    """A copy of a JSON-ready tree with NaN and infinities replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _default(o: Any) -> Any:
    """What the JSON encoder writes for a value it does not know (see the module doc)."""
    if isinstance(o, datetime.datetime):
        return _iso_utc(o)
    if isinstance(o, (datetime.date, datetime.time)):
        return o.isoformat()
    if isinstance(o, (bytes, bytearray, memoryview)):
        return base64.b64encode(o).decode("ascii")
    if o is _types.Undefined:
        return None
    if isinstance(o, array.array):
        items = o.tolist()
        return _finite(items) if o.typecode in "fd" else items
    if isinstance(o, (set, frozenset)):
        return list(o)
    if isinstance(o, _types.Table):
        columns = o.columns
        return [_finite(dict(zip(columns, row))) for row in o.rows]
    if isinstance(o, _types.Date):
        return _js_iso(o.millis)
    records = recordset_records(o)
    if records is not None:
        return _finite(records)
    members = object_members(o)
    if members is not None:
        return _finite(members)
    raise TypeError(f"{type(o).__qualname__} is not JSON serializable (register it with amfkit.register_class, or convert it)")


def _iso_utc(value: datetime.datetime) -> str:
    if value.tzinfo is not None and value.utcoffset() is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    else:
        value = value.replace(tzinfo=None)
    return value.isoformat() + "Z"


def object_members(obj: Any) -> dict[str, Any] | None:
    """The members of a registered class's instance, exactly as AMF writes them (its
    `static`, `exclude` and `dynamic` rules applied), or None when `type(obj)` is not
    registered.

    The instance goes through an AMF3 round trip: the decoded copy holds the members
    the encoder wrote, and nothing else.
    """
    cls = type(obj)
    if cls not in registered_classes().values():
        return None
    copy = amf3.decode(amf3.encode(obj))
    members: dict[str, Any] = {}
    attrs = getattr(copy, "__dict__", None)
    if attrs:
        for name, value in attrs.items():
            if not (name.startswith("__") and name.endswith("__")):
                members[name] = value
    for name in _slot_names(cls):
        if name not in members and hasattr(copy, name):
            members[name] = getattr(copy, name)
    return members


def recordset_records(obj: Any) -> list[dict[str, Any]] | None:
    """The rows of an `amfkit.data.RecordSet` returned as is (one dict per row), or None
    for anything else."""
    try:
        from ..data.recordset import RecordSet
    except ImportError:  # pragma: no cover
        return None
    return obj.records() if isinstance(obj, RecordSet) else None


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian calendar, `days` after 1970-01-01,
    for any year (astronomical numbering: year 0 is 1 BC)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


# JavaScript's Date holds +-8.64e15 ms around the epoch.
_JS_DATE_LIMIT = 8.64e15


def split_millis(millis: float) -> tuple[int, int, int, int, int, int, int] | None:
    """(year, month, day, hour, minute, second, millisecond) of a UTC time in milliseconds
    since the epoch, or None when it is NaN, infinite or outside JavaScript's range."""
    if not math.isfinite(millis) or abs(millis) > _JS_DATE_LIMIT:
        return None
    days, ms = divmod(math.floor(millis), 86_400_000)
    year, month, day = civil_from_days(days)
    hour, ms = divmod(ms, 3_600_000)
    minute, ms = divmod(ms, 60_000)
    second, ms = divmod(ms, 1000)
    return year, month, day, hour, minute, second, ms


def _js_iso(millis: float) -> str | None:
    parts = split_millis(millis)
    if parts is None:
        return None
    year, month, day, hour, minute, second, ms = parts
    y = f"{year:04d}" if 0 <= year <= 9999 else f"{year:+07d}"
    return f"{y}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{ms:03d}Z"
